"""The installed app's own configuration in the fake Slack, as `apps.manifest.export` gives
it to an app configuration token (docs.slack.dev/reference/methods/apps.manifest.export:
`{"ok": true, "manifest": {…}}`; errors `invalid_auth`, `not_allowed_token_type`,
`app_not_found`). A bot or app-level token is refused: only a configuration token
(`xoxe.xoxp-…`, docs.slack.dev/app-manifests/configuring-apps-with-app-manifests) reads it.
By default the app is configured as manifest.yml says; a test changes `app_manifest`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.slack.manifest import CHECKOUT_MANIFEST, Manifest

SANDBOX_APP_ID = "A0SANDBOX"


def manifest_as_installed(path: Path = CHECKOUT_MANIFEST) -> dict[str, Any]:
    """The parts of manifest.yml the export carries that closebot's checks read."""
    m = Manifest.read(path)
    s = m.switches
    return {
        "features": {
            "app_home": {
                "home_tab_enabled": s.get("home_tab_enabled", False),
                "messages_tab_enabled": s.get("messages_tab_enabled", False),
                "messages_tab_read_only_enabled": s.get("messages_tab_read_only_enabled", False),
            },
            "slash_commands": [{"command": c} for c in sorted(m.commands)],
        },
        "oauth_config": {"scopes": {"bot": sorted(m.scopes)}},
        "settings": {
            "event_subscriptions": {"bot_events": sorted(m.events)},
            "socket_mode_enabled": s.get("socket_mode_enabled", False),
        },
    }


def export_answer(
    token: Any, app_id: Any, manifest: dict[str, Any]
) -> tuple[int, dict[str, Any], dict[str, str]]:
    if not isinstance(token, str) or not token:
        return 200, {"ok": False, "error": "not_authed"}, {}
    if not token.startswith("xoxe"):
        return 200, {"ok": False, "error": "not_allowed_token_type"}, {}
    if "invalid" in token:
        return 200, {"ok": False, "error": "invalid_auth"}, {}
    if app_id != SANDBOX_APP_ID:
        return 200, {"ok": False, "error": "app_not_found"}, {}
    return 200, {"ok": True, "manifest": manifest}, {}

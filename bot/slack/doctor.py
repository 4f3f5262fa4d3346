"""`closebot doctor --slack`: is the installed Slack app the one closebot needs? Each check
says what it found and, when it fails, the exact fix.

What the Web API can tell, and from where:
- the bot token, its workspace and its granted scopes: `auth.test` (no scope needed;
  docs.slack.dev/reference/methods/auth.test) and its `x-oauth-scopes` response header,
  the scopes the token was granted (Bolt reads the same header: slack_bolt/middleware/
  authorization/internals.py), compared with manifest.yml's bot scopes;
- the bot in the finance channel: `conversations.info`'s `is_member` (channels:read, or
  groups:read for a private channel; docs.slack.dev/reference/methods/conversations.info);
- Socket Mode: `apps.connections.open` with the app-level token answers a WebSocket URL
  only for a valid `xapp-` token with connections:write
  (docs.slack.dev/reference/methods/apps.connections.open);
- the app's own configuration (Home tab, Messages tab, Socket Mode on, event
  subscriptions, /close) is not readable with a bot or app token: only `apps.manifest.export`
  with an app configuration token (docs.slack.dev/reference/methods/apps.manifest.export;
  docs.slack.dev/app-manifests/configuring-apps-with-app-manifests). With
  SLACK_CONFIG_TOKEN and SLACK_APP_ID set, doctor reads it and compares; without them it
  says these checks could not be made and how to make them, without failing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.core.config import Settings
from bot.slack.manifest import Manifest

APPS_PAGE = "api.slack.com/apps → closebot"


@dataclass(frozen=True)
class Check:
    """One check: its name, whether it passed (None: it could not be made here, not a
    failure), what was found, and the fix when it failed."""

    name: str
    ok: bool | None
    found: str
    fix: str = ""

    def lines(self) -> list[str]:
        mark = {True: "ok     ", False: "PROBLEM", None: "?      "}[self.ok]
        out = [f"{mark}  {self.name}: {self.found}"]
        if self.fix:
            out.append(f"         fix: {self.fix}")
        return out


def _error(e: Exception) -> str:
    if isinstance(e, SlackApiError):
        return str(e.response.get("error") or e)
    return f"{type(e).__name__}: {e}"


class SlackDoctor:
    """The checks, over a Web API client for the bot token (and one for the app and
    configuration tokens: `client_for(token)`)."""

    def __init__(
        self,
        settings: Settings,
        manifest: Manifest,
        *,
        client_for: Callable[[str | None], WebClient],
        config_token: str | None = None,
        app_id: str | None = None,
        effective: Callable[[str], Settings] | None = None,
    ) -> None:
        self.settings = settings
        self.manifest = manifest
        self.client_for = client_for
        self.config_token = config_token
        self.app_id = app_id
        # the settings of the token's workspace (what its admins set in Slack)
        self.effective = effective
        self.team_id: str | None = None

    def health(self) -> list[Check]:
        """What the container's healthcheck asks: Slack accepts the bot token."""
        return [self.bot_token()[0]]

    def run(self) -> list[Check]:
        token, scopes = self.bot_token()
        checks = [token]
        if token.ok:
            if self.effective is not None and self.team_id:
                self.settings = self.effective(self.team_id)
            checks.append(self.granted(scopes))
            checks.append(self.finance_channel())
        checks.append(self.transport())
        checks.extend(self.app_config())
        return checks

    def bot_token(self) -> tuple[Check, frozenset[str]]:
        name = "bot token (SLACK_BOT_TOKEN)"
        fix = (
            f"copy the Bot User OAuth Token (xoxb-…) from {APPS_PAGE} → OAuth & Permissions "
            "into SLACK_BOT_TOKEN (install the app to the workspace first)"
        )
        if not self.settings.slack_bot_token:
            return Check(name, False, "not set", fix), frozenset()
        try:
            answer = self.client_for(self.settings.slack_bot_token).auth_test()
        except SlackApiError as e:
            return Check(name, False, f"Slack refused it ({_error(e)})", fix), frozenset()
        except OSError as e:
            return (
                Check(
                    name,
                    False,
                    f"cannot reach Slack at {self.settings.slack_api_url} ({e})",
                    "check this machine's outbound HTTPS to slack.com (and SLACK_API_URL)",
                ),
                frozenset(),
            )
        self.team_id = str(answer.get("team_id") or "")
        header = str(answer.headers.get("x-oauth-scopes") or "")
        scopes = frozenset(s.strip() for s in header.split(",") if s.strip())
        found = f"accepted: @{answer.get('user')} in {answer.get('team')} ({self.team_id})"
        return Check(name, True, found), scopes

    def granted(self, scopes: frozenset[str]) -> Check:
        name = "bot scopes"
        missing = sorted(self.manifest.scopes - scopes)
        extra = sorted(scopes - self.manifest.scopes)
        if missing:
            return Check(
                name,
                False,
                f"missing {', '.join(missing)} (granted: {', '.join(sorted(scopes)) or 'none'})",
                f"{APPS_PAGE} → OAuth & Permissions → Bot Token Scopes: add "
                f"{', '.join(missing)} (or paste manifest.yml into App Manifest), then "
                "Reinstall to Workspace",
            )
        more = f"; also granted {', '.join(extra)} (not in manifest.yml)" if extra else ""
        return Check(name, True, f"all {len(self.manifest.scopes)} of manifest.yml{more}")

    def finance_channel(self) -> Check:
        name = "finance channel"
        channel = self.settings.close_channel
        if not channel:
            return Check(
                name,
                False,
                "not set (a close started from closebot's DM has no channel to run in)",
                "open closebot's Home tab in Slack → Settings → Finance channel (or set "
                "CLOSEBOT_CLOSE_CHANNEL to the channel's id)",
            )
        try:
            info = self.client_for(self.settings.slack_bot_token).conversations_info(
                channel=channel
            )
        except SlackApiError as e:
            error = _error(e)
            if error == "missing_scope":
                fix = (
                    f"{APPS_PAGE} → OAuth & Permissions: add channels:read and groups:read, "
                    "then Reinstall to Workspace"
                )
            else:
                fix = (
                    f"the channel {channel} is not one closebot can see: in Slack, type "
                    "`/invite @closebot` in the finance channel, or pick another in Settings"
                )
            return Check(name, False, f"{channel}: {error}", fix)
        about = info.get("channel") or {}
        label = f"#{about.get('name') or channel} ({channel})"
        if not about.get("is_member"):
            return Check(
                name,
                False,
                f"{label}: closebot is not a member",
                f"in Slack, type `/invite @closebot` in #{about.get('name') or channel}",
            )
        return Check(name, True, f"{label}: closebot is a member")

    def transport(self) -> Check:
        if not self.settings.slack_app_token:
            return Check(
                "events (HTTP mode)",
                None,
                "SLACK_APP_TOKEN is not set, so `closebot serve` serves HTTP: Slack must "
                "reach https://YOUR-HOST/slack/events, which only Slack can test",
                f"{APPS_PAGE} → Event Subscriptions → Request URL shows Verified; or use "
                "Socket Mode, which needs no public URL: set SLACK_APP_TOKEN",
            )
        name = "Socket Mode (SLACK_APP_TOKEN)"
        fix = (
            f"{APPS_PAGE} → Basic Information → App-Level Tokens: generate one with the "
            "connections:write scope and put it (xapp-…) in SLACK_APP_TOKEN; Settings → Socket "
            "Mode → Enable Socket Mode"
        )
        try:
            token = self.settings.slack_app_token
            self.client_for(token).apps_connections_open(app_token=token)
        except SlackApiError as e:
            return Check(name, False, f"Slack refused the app-level token ({_error(e)})", fix)
        except OSError as e:
            return Check(name, False, f"cannot reach Slack ({e})", fix)
        return Check(name, True, "the app-level token opens a Socket Mode connection")

    def app_config(self) -> list[Check]:
        """Home tab, Messages tab, Socket Mode, events and /close, from the app's own
        manifest (apps.manifest.export with a configuration token), compared with ours."""
        if not (self.config_token and self.app_id):
            return [
                Check(
                    "app settings (Home tab, Messages tab, events, /close)",
                    None,
                    "not readable with the bot or app token",
                    "to check them: set SLACK_CONFIG_TOKEN (an app configuration token, "
                    "api.slack.com/apps → Your App Configuration Tokens) and SLACK_APP_ID; or "
                    f"compare {APPS_PAGE} → App Manifest with manifest.yml by eye",
                )
            ]
        try:
            answer = self.client_for(self.config_token).apps_manifest_export(app_id=self.app_id)
        except SlackApiError as e:
            return [
                Check(
                    "app settings",
                    False,
                    f"apps.manifest.export refused ({_error(e)})",
                    "a configuration token lasts 12 hours: make a new one (api.slack.com/apps "
                    "→ Your App Configuration Tokens) and check SLACK_APP_ID",
                )
            ]
        return self.compare(answer.get("manifest") or {})

    def compare(self, manifest: dict[str, Any]) -> list[Check]:
        features = manifest.get("features") or {}
        home = features.get("app_home") or {}
        settings = manifest.get("settings") or {}
        events = frozenset((settings.get("event_subscriptions") or {}).get("bot_events") or [])
        commands = frozenset(c.get("command") for c in features.get("slash_commands") or [])
        where = f"{APPS_PAGE} → App Home → Show Tabs"
        checks = [
            Check("Home tab", True, "on")
            if home.get("home_tab_enabled")
            else Check("Home tab", False, "off", f"{where} → Home Tab: on"),
            Check("Messages tab", True, "on, people can write to closebot")
            if home.get("messages_tab_enabled") and not home.get("messages_tab_read_only_enabled")
            else Check(
                "Messages tab",
                False,
                "off or read-only",
                f"{where} → Messages Tab: on, and tick 'Allow users to send Slash commands "
                "and messages from the messages tab'",
            ),
        ]
        missing = sorted(self.manifest.events - events)
        checks.append(
            Check("event subscriptions", True, f"all {len(self.manifest.events)} bot events")
            if missing == []
            else Check(
                "event subscriptions",
                False,
                f"not subscribed to {', '.join(missing)}",
                f"{APPS_PAGE} → Event Subscriptions → Subscribe to bot events: add "
                f"{', '.join(missing)}, then Save Changes (and reinstall if Slack asks)",
            )
        )
        lacking = sorted(self.manifest.commands - commands)
        checks.append(
            Check("slash commands", True, ", ".join(sorted(commands)))
            if not lacking
            else Check(
                "slash commands",
                False,
                f"{', '.join(lacking)} missing",
                f"{APPS_PAGE} → Slash Commands → Create New Command: {', '.join(lacking)}",
            )
        )
        if self.settings.slack_app_token:
            socket = bool(settings.get("socket_mode_enabled"))
            checks.append(
                Check("Socket Mode enabled", True, "on")
                if socket
                else Check(
                    "Socket Mode enabled",
                    False,
                    "off, so Slack sends events to the Request URLs instead",
                    f"{APPS_PAGE} → Socket Mode → Enable Socket Mode",
                )
            )
        return checks


def slack_checks(
    settings: Settings,
    manifest: Manifest,
    *,
    client_for: Callable[[str | None], WebClient],
    config_token: str | None = None,
    app_id: str | None = None,
    effective: Callable[[str], Settings] | None = None,
    health: bool = False,
) -> list[Check]:
    doctor = SlackDoctor(
        settings,
        manifest,
        client_for=client_for,
        config_token=config_token,
        app_id=app_id,
        effective=effective,
    )
    return doctor.health() if health else doctor.run()

"""`closebot doctor --slack` against the fake Slack: green on an app installed as manifest.yml
says, and each red check with its fix — scopes from auth.test's x-oauth-scopes header, the
bot in the finance channel, the Socket Mode token, the app's tabs and events (with a
configuration token), the container's --health."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.console.cli import main
from bot.sandbox.slack_api import FakeSlack, fake_slack
from bot.sandbox.slack_api.app_config import SANDBOX_APP_ID
from bot.sandbox.slack_api.scopes import manifest_grants
from bot.sandbox.slack_api.workspace import BOT_USER, Channel
from bot.store import Store

FINANCE = "C0FINANCE"
CONFIG_TOKEN = "xoxe.xoxp-1-config"


@pytest.fixture
def slack(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeSlack]:
    channels = [Channel(FINANCE, "finance", {BOT_USER, "U0ANNA"}), Channel("C0OTHER", "other")]
    with fake_slack(token="xoxb-doctor", channels=channels, auto_channels=False) as fake:
        for name in ("CLOSEBOT_APPROVERS", "CLOSEBOT_DATA", "SLACK_SIGNING_SECRET"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("CLOSEBOT_DB", str(tmp_path / "closebot.db"))
        monkeypatch.setenv("SLACK_API_URL", fake.url + "/api/")
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-doctor")
        monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-doctor")
        monkeypatch.setenv("CLOSEBOT_CLOSE_CHANNEL", FINANCE)
        monkeypatch.setenv("SLACK_CONFIG_TOKEN", CONFIG_TOKEN)
        monkeypatch.setenv("SLACK_APP_ID", SANDBOX_APP_ID)
        yield fake


def doctor(*flags: str) -> tuple[int, str]:
    out = io.StringIO()
    rc = main(["doctor", "--slack", *flags], out=out)
    return rc, out.getvalue()


def problems(text: str) -> list[str]:
    """Each PROBLEM line with the fix line under it."""
    lines = text.splitlines()
    return [
        line + "\n" + (lines[i + 1] if i + 1 < len(lines) else "")
        for i, line in enumerate(lines)
        if line.startswith("PROBLEM")
    ]


def test_green_on_an_app_installed_from_the_manifest(slack: FakeSlack) -> None:
    rc, out = doctor()
    assert rc == 0, out
    assert not problems(out)
    for name in (
        "bot token",
        "bot scopes",
        "finance channel",
        "Socket Mode (SLACK_APP_TOKEN)",
        "Home tab",
        "Messages tab",
        "event subscriptions",
        "slash commands",
        "Socket Mode enabled",
    ):
        assert any(line.startswith("ok") and f"  {name}" in line for line in out.splitlines()), (
            name,
            out,
        )
    assert f"all {len(manifest_grants().scopes)} of manifest.yml" in out
    assert "#finance (C0FINANCE): closebot is a member" in out
    methods = [c.method for c in slack.calls]
    assert {"auth.test", "conversations.info", "apps.connections.open"} <= set(methods)
    assert "apps.manifest.export" in methods


def test_a_scope_missing_from_the_granted_header_is_named_with_the_reinstall_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    granted = manifest_grants().scopes - {"users:read", "files:read"}
    with fake_slack(
        scopes=granted, channels=[Channel(FINANCE, "finance", {BOT_USER})], auto_channels=False
    ) as fake:
        monkeypatch.setenv("CLOSEBOT_DB", str(tmp_path / "closebot.db"))
        monkeypatch.setenv("SLACK_API_URL", fake.url + "/api/")
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-x")
        monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-x")
        monkeypatch.setenv("CLOSEBOT_CLOSE_CHANNEL", FINANCE)
        monkeypatch.delenv("SLACK_CONFIG_TOKEN", raising=False)
        rc, out = doctor()
    assert rc == 1
    [found] = problems(out)
    assert "bot scopes: missing files:read, users:read" in found
    assert "Bot Token Scopes: add files:read, users:read" in found
    assert "Reinstall to Workspace" in found
    # without a configuration token the app's own settings are not checked, and say so
    assert "?        app settings (Home tab, Messages tab, events, /close)" in out
    assert "SLACK_CONFIG_TOKEN" in out


def test_the_bot_outside_the_finance_channel_is_told_to_invite_it(
    slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOSEBOT_CLOSE_CHANNEL", "C0OTHER")
    rc, out = doctor()
    assert rc == 1
    [found] = problems(out)
    assert "#other (C0OTHER): closebot is not a member" in found
    assert "fix: in Slack, type `/invite @closebot` in #other" in found


def test_no_finance_channel_is_a_problem_fixed_in_settings_and_the_slack_setting_counts(
    slack: FakeSlack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CLOSEBOT_CLOSE_CHANNEL")
    rc, out = doctor()
    assert rc == 1
    [found] = problems(out)
    assert "finance channel: not set" in found and "Home tab in Slack → Settings" in found
    # the channel an admin picked in Slack (stored for the token's workspace) is the one checked
    store = Store(tmp_path / "closebot.db")
    try:
        store.settings.change("T0SANDBOX", {"CLOSEBOT_CLOSE_CHANNEL": FINANCE}, by="U0ADMIN")
    finally:
        store.close()
    rc, out = doctor()
    assert rc == 0, out


@pytest.mark.parametrize(
    ("app_token", "error"),
    [("xoxb-not-an-app-token", "not_allowed_token_type"), ("xapp-1-invalid", "invalid_auth")],
)
def test_a_socket_mode_token_slack_refuses_is_told_how_to_make_one(
    slack: FakeSlack, monkeypatch: pytest.MonkeyPatch, app_token: str, error: str
) -> None:
    monkeypatch.setenv("SLACK_APP_TOKEN", app_token)
    rc, out = doctor()
    assert rc == 1
    [found] = problems(out)
    assert f"Slack refused the app-level token ({error})" in found
    assert "App-Level Tokens: generate one with the connections:write scope" in found


def test_the_apps_own_settings_each_with_its_fix(slack: FakeSlack) -> None:
    features = slack.app_manifest["features"]
    features["app_home"]["home_tab_enabled"] = False
    features["app_home"]["messages_tab_read_only_enabled"] = True
    features["slash_commands"] = []
    settings = slack.app_manifest["settings"]
    settings["event_subscriptions"]["bot_events"].remove("app_home_opened")
    settings["socket_mode_enabled"] = False
    rc, out = doctor()
    assert rc == 1
    found = problems(out)
    assert len(found) == 5, out
    text = "\n".join(found)
    assert "Home tab: off" in text and "Show Tabs → Home Tab: on" in text
    assert "Messages tab: off or read-only" in text
    assert "not subscribed to app_home_opened" in text
    assert "/close missing" in text and "Create New Command: /close" in text
    assert "Socket Mode enabled: off" in text and "Enable Socket Mode" in text


def test_a_bot_token_slack_refuses_stops_the_checks_that_need_it(
    slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-revoked")
    rc, out = doctor()
    assert rc == 1
    assert "bot token (SLACK_BOT_TOKEN): Slack refused it (invalid_auth)" in out
    assert "Bot User OAuth Token (xoxb-…)" in out
    assert "bot scopes" not in out and "finance channel" not in out


def test_health_is_the_token_and_the_database_only(
    slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    rc, out = doctor("--health")
    assert rc == 0, out
    assert [c.method for c in slack.calls] == ["auth.test"]  # no Tier 1 apps.connections.open
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-revoked")
    rc, out = doctor("--health")
    assert rc == 1

"""The Slack app manifest: valid against the manifest's schema (the fields and limits Slack's
manifest reference gives), least privilege (the scopes the bot's calls need, no more), the
events it listens to, the agent view with its suggested prompts, and both transports."""

import re
from pathlib import Path
from typing import Any

import yaml

from bot.close import PROMPTS
from bot.sandbox.slack_api import FakeSlack
from bot.sandbox.slack_api.scopes import (
    EVENT_NEEDS,
    HISTORY,
    MESSAGE_EVENTS,
    METHOD_SCOPES,
    Grants,
    manifest_grants,
)
from tests.slack_harness import Harness

BOT = Path(__file__).parent.parent / "bot"

MANIFEST: dict[str, Any] = yaml.safe_load(
    (Path(__file__).parent.parent / "manifest.yml").read_text()
)

# The manifest schema's keys (docs.slack.dev/reference/app-manifest), per section.
TOP = {
    "_metadata",
    "display_information",
    "features",
    "oauth_config",
    "settings",
    "functions",
    "workflows",
    "outgoing_domains",
    "types",
    "datastores",
}
DISPLAY = {"name", "description", "long_description", "background_color"}
FEATURES = {
    "app_home",
    "bot_user",
    "shortcuts",
    "slash_commands",
    "unfurl_domains",
    "workflow_steps",
    "assistant_view",
    "agent_view",
    "rich_previews",
}
APP_HOME = {"home_tab_enabled", "messages_tab_enabled", "messages_tab_read_only_enabled"}
AGENT_VIEW = {"agent_description"}
COMMAND = {"command", "url", "description", "usage_hint", "should_escape"}
SETTINGS = {
    "allowed_ip_address_ranges",
    "event_subscriptions",
    "incoming_webhooks",
    "interactivity",
    "org_deploy_enabled",
    "socket_mode_enabled",
    "token_rotation_enabled",
    "function_runtime",
    "is_hosted",
    "siws_links",
}

# Web API calls in the code: `client.chat_postMessage(`, `client.api_call("chat.postMessage"`
CLIENT_CALL = re.compile(r"\bclient\s*\.\s*([a-z]+(?:_[A-Za-z0-9]+)+)\s*\(")
API_CALL = re.compile(r"\bapi_call\(\s*[\"']([a-zA-Z.]+)[\"']")
# slack_sdk helpers that are several Web API methods
HELPERS = {
    "files_upload_v2": ("files.getUploadURLExternal", "files.completeUploadExternal"),
    "chat_stream": ("chat.startStream", "chat.appendStream", "chat.stopStream"),
}
# Bolt's Assistant middleware: the listener and the event it is sent
ASSISTANT_EVENTS = {
    "thread_started": "assistant_thread_started",
    "thread_context_changed": "assistant_thread_context_changed",
    "user_message": "message",
}


def methods_called(root: Path) -> dict[str, set[str]]:
    """Every Web API method the code under `root` calls → the files that call it."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        if "sandbox" in path.parts:
            continue  # the fake Slack itself, and the client standing in for Slack
        source = path.read_text()
        names = [
            m
            for call in CLIENT_CALL.findall(source)
            for m in HELPERS.get(call, (call.replace("_", "."),))
        ]
        for method in [*names, *API_CALL.findall(source)]:
            found.setdefault(method, set()).add(str(path.relative_to(root.parent)))
    return found


def events_listened(root: Path) -> set[str]:
    """Every event a listener under `root` handles (`app.event("…")`, Bolt's Assistant)."""
    found: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        if "sandbox" in path.parts:
            continue
        source = path.read_text()
        found |= set(re.findall(r"\.event\(\s*[\"']([a-z_]+)[\"']", source))
        for listener, event in ASSISTANT_EVENTS.items():
            if re.search(rf"\bassistant\.{listener}\(", source):
                found.add(event)
    return found


def test_the_manifest_keeps_to_the_schema() -> None:
    assert set(MANIFEST) <= TOP
    display = MANIFEST["display_information"]
    assert set(display) <= DISPLAY and 1 <= len(display["name"]) <= 35
    assert len(display.get("description", "")) <= 140
    features = MANIFEST["features"]
    assert set(features) <= FEATURES
    assert set(features["app_home"]) <= APP_HOME
    assert len(features["bot_user"]["display_name"]) <= 80
    for command in features["slash_commands"]:
        assert set(command) <= COMMAND and command["command"].startswith("/")
        assert len(command["description"]) <= 2000
    settings = MANIFEST["settings"]
    assert set(settings) <= SETTINGS
    assert all(isinstance(v, bool) for k, v in settings.items() if k.endswith("_enabled"))


def test_the_close_command_is_declared_with_its_usage() -> None:
    (command,) = MANIFEST["features"]["slash_commands"]
    assert command["command"] == "/close" and command["usage_hint"] == "[YYYY-MM]"
    assert command["url"].endswith("/slack/events")


def test_the_agent_view_is_declared_not_the_legacy_assistant_view_and_the_home_tab_is_on() -> None:
    # agent_view is Slack's default agent experience since 2026-06-30, assistant_view legacy;
    # its prompts are set on the Messages tab's open (tests/test_agent_entry.py).
    view = MANIFEST["features"]["agent_view"]
    assert set(view) <= AGENT_VIEW and view["agent_description"]
    assert "assistant_view" not in MANIFEST["features"]
    assert 1 <= len(PROMPTS) <= 4
    assert [title for title, _ in PROMPTS] == [
        "Close last month",
        "What's waiting on me?",
        "Open items",
    ]
    assert MANIFEST["features"]["app_home"]["home_tab_enabled"] is True
    assert MANIFEST["features"]["app_home"]["messages_tab_enabled"] is True
    assert "assistant:write" in MANIFEST["oauth_config"]["scopes"]["bot"]


def test_events_cover_what_the_bot_listens_to_and_nothing_reads_the_whole_channel() -> None:
    events = set(MANIFEST["settings"]["event_subscriptions"]["bot_events"])
    assert events == {
        "app_mention",
        "app_home_opened",
        "assistant_thread_started",
        "assistant_thread_context_changed",
        "message.im",
        "file_shared",  # a file dropped into a close's thread (files:read)
        "tokens_revoked",
        "app_uninstalled",
        "agent_session_stopped",  # Slack's own Stop on a streamed plan stops the close
    }
    scopes = set(MANIFEST["oauth_config"]["scopes"]["bot"])
    # least privilege: steering is by mention; channel history is optional (README)
    assert not scopes & {"channels:history", "groups:history", "reactions:write"}
    assert "message.channels" not in events and "message.groups" not in events
    assert "files:read" in scopes  # dropped files: files.info and url_private_download
    assert MANIFEST["settings"]["interactivity"]["is_enabled"] is True
    assert MANIFEST["settings"]["interactivity"]["request_url"].endswith("/slack/events")
    assert "socket_mode_enabled" in MANIFEST["settings"]


def test_the_scopes_are_exactly_what_a_whole_close_calls_for(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    try:
        run = bot.start()
        bot.finish(run.id)
    finally:
        bot.close()
    called = {c.method for c in fake.calls} - {"url_private_download"}  # a download
    unknown = called - set(METHOD_SCOPES)
    assert not unknown, f"add these methods' scopes to METHOD_SCOPES: {unknown}"
    scopes = set(MANIFEST["oauth_config"]["scopes"]["bot"])
    needed = {
        next((s for s in options if s in scopes), options[0])
        for options in (_channel_scopes(m) for m in called)
        if options
    }
    assert needed <= scopes, needed - scopes
    # commands (/close), app_mentions:read and im:history (events), assistant:write (the
    # agent view) are needed by what Slack sends, not by calls
    assert scopes - needed <= {
        "commands",
        "app_mentions:read",
        "im:history",
        "im:write",  # conversations.open: an open item's owner (test_open_items)
        "assistant:write",
        "users:read",
        "files:read",  # files.info and the download, for files dropped in (test_slack_files)
        # conversations.info: `closebot doctor --slack` finds the bot in the finance channel
        # (public or private; test_doctor_slack); conversations.members: who may read a close
        # in the DM and Home (test_faults_reading)
        "channels:read",
        "groups:read",
    }


def _channel_scopes(method: str) -> tuple[str, ...]:
    """The scopes that allow `method` in a public channel (the close's own)."""
    accepted = METHOD_SCOPES[method]
    return (accepted["channel"],) if isinstance(accepted, dict) else accepted


def test_every_method_the_code_calls_has_its_scope_in_the_manifest() -> None:
    called = methods_called(BOT)
    assert {"chat.postMessage", "chat.update", "files.getUploadURLExternal"} <= set(called)
    unknown = set(called) - set(METHOD_SCOPES)
    assert not unknown, f"add these methods' scopes to bot/sandbox/slack_api/scopes.py: {unknown}"
    grants = manifest_grants()
    lacking = {
        m: (sorted(called[m]), needed)
        for m in called
        if (needed := _lacking(grants, m)) is not None
    }
    assert not lacking, f"the manifest lacks the scope these calls need: {lacking}"


def _lacking(grants: Grants, method: str) -> str | None:
    """The scope `method` needs that `grants` lack: for the history methods, where closebot
    reads (a DM, im:history); a channel's history (not granted, least privilege) is read
    only where the code handles `missing_scope` (test_history_reads_handle_missing_scope)."""
    return grants.missing(method, "im" if METHOD_SCOPES[method] is HISTORY else "channel")


def test_history_reads_in_channels_handle_missing_scope() -> None:
    """conversations.history/.replies on a channel answer missing_scope with the manifest
    closebot ships: each file that calls them handles it (or reads a DM only)."""
    called = methods_called(BOT)
    dm_only = {"slack/presenter/owners.py"}  # an owner's DM, opened by conversations.open
    for method in ("conversations.history", "conversations.replies"):
        for path in called.get(method, set()):
            source = (BOT.parent / path).read_text()
            assert path.removeprefix("bot/") in dm_only or "missing_scope" in source, path


def test_the_check_fails_when_code_calls_a_method_whose_scope_is_lacking(tmp_path: Path) -> None:
    code = tmp_path / "bot"
    code.mkdir()
    (code / "reacts.py").write_text('client.reactions_add(channel="C1", name="eyes")\n')
    called = methods_called(code)
    assert called == {"reactions.add": {"bot/reacts.py"}}
    assert _lacking(manifest_grants(), "reactions.add") == "reactions:write"


def test_every_event_a_listener_handles_is_subscribed_and_its_scope_granted() -> None:
    listened = events_listened(BOT)
    assert {"app_mention", "message", "file_shared", "assistant_thread_started"} <= listened
    grants = manifest_grants()
    for event in listened:
        if event == "message":  # delivered for some kind of conversation (the DM's)
            assert any(
                grants.delivers({"type": "message", "channel_type": kind})
                for kind in MESSAGE_EVENTS
            ), "no message.* subscription (with its history scope)"
            continue
        assert event in EVENT_NEEDS, f"add {event} to EVENT_NEEDS in scopes.py"
        assert grants.delivers({"type": event}), f"{event}: not subscribed, or its scope lacks"

"""The Slack app manifest: valid against the manifest's schema (the fields and limits Slack's
manifest reference gives), least privilege (the scopes the bot's calls need, no more), the
events it listens to, the agent view with its suggested prompts, and both transports."""

from pathlib import Path
from typing import Any

import yaml

from bot.close import PROMPTS
from bot.sandbox.slack_api import FakeSlack
from tests.slack_harness import Harness

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

# The scope each Web API method the bot calls needs (the method pages on docs.slack.dev).
SCOPE_OF = {
    "chat.postMessage": "chat:write",
    "chat.update": "chat:write",
    "chat.postEphemeral": "chat:write",
    "chat.startStream": "chat:write",
    "chat.appendStream": "chat:write",
    "chat.stopStream": "chat:write",
    "assistant.threads.setStatus": "chat:write",
    "assistant.threads.setSuggestedPrompts": "assistant:write",
    "files.getUploadURLExternal": "files:write",
    "files.info": "files:read",
    "url_private_download": "files:read",  # the download of a dropped file (not a method)
    "files.completeUploadExternal": "files:write",
    "users.info": "users:read",
    "conversations.open": "im:write",  # an open item's owner told by DM
    "auth.test": None,
    "views.publish": None,
    "chat.getPermalink": None,
}


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
    called = {c.method for c in fake.calls}
    unknown = called - set(SCOPE_OF)
    assert not unknown, f"add these methods' scopes to SCOPE_OF: {unknown}"
    needed = {SCOPE_OF[m] for m in called} - {None}
    scopes = set(MANIFEST["oauth_config"]["scopes"]["bot"])
    assert needed <= scopes, needed - scopes
    # commands (/close), app_mentions:read and im:history (events), assistant:write (the
    # agent view) are needed by what Slack sends, not by calls
    assert scopes - needed <= {
        "commands",
        "app_mentions:read",
        "im:history",
        "assistant:write",
        "users:read",
        "files:read",  # files.info and the download, for files dropped in (test_slack_files)
    }

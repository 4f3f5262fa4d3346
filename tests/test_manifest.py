"""The Slack app manifest: the command, scopes, events and both transports."""

from pathlib import Path

import yaml

MANIFEST = yaml.safe_load((Path(__file__).parent.parent / "manifest.yml").read_text())


def test_the_close_command_is_declared_with_its_usage() -> None:
    (command,) = MANIFEST["features"]["slash_commands"]
    assert command["command"] == "/close" and command["usage_hint"] == "[YYYY-MM]"
    assert command["url"].endswith("/slack/events")


def test_scopes_and_events_cover_what_the_bot_does() -> None:
    scopes = set(MANIFEST["oauth_config"]["scopes"]["bot"])
    assert scopes >= {
        "chat:write",
        "commands",
        "app_mentions:read",
        "channels:history",
        "groups:history",
        "files:write",
        "files:read",  # dropped files: files.info and url_private_download
        "im:history",  # files dropped in a DM with closebot
        "reactions:write",
    }
    events = set(MANIFEST["settings"]["event_subscriptions"]["bot_events"])
    assert events == {
        "app_mention",
        "message.channels",
        "message.groups",
        "message.im",
        "file_shared",
    }
    assert MANIFEST["settings"]["interactivity"]["is_enabled"] is True
    assert MANIFEST["settings"]["interactivity"]["request_url"].endswith("/slack/events")
    assert "socket_mode_enabled" in MANIFEST["settings"]
    assert len(MANIFEST["display_information"]["name"]) <= 35

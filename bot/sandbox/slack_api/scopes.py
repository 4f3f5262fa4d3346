"""What an app may do in Slack, as Slack decides it: the scope each Web API method needs,
the subscription and scope each event needs to be delivered, and what the app was granted
(the project's `manifest.yml` unless a test says otherwise).

The fake Slack answers a call whose scope was not granted `missing_scope` with `needed` and
`provided`, as Slack does (docs.slack.dev/reference/methods/<method>, "Required scopes";
docs.slack.dev/authentication/tokens: "missing_scope … The token used is not granted the
specific scope permissions required to complete this request"); the sandbox's client
delivers an event only when the manifest subscribes to it and its scope is granted
(docs.slack.dev/reference/events/<event>: "Required scopes"; docs.slack.dev/apis/events-api:
"your app will only receive events it is subscribed to"). With no `message.channels`, a
plain reply in a channel thread never reaches the bot; a mention arrives as `app_mention`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.slack.manifest import CHECKOUT_MANIFEST, listed

MANIFEST = CHECKOUT_MANIFEST

# The kind of conversation a channel id names: its history and read scopes differ by kind.
KINDS = ("channel", "group", "im", "mpim")
HISTORY = {
    "channel": "channels:history",
    "group": "groups:history",
    "im": "im:history",
    "mpim": "mpim:history",
}
READ = {"channel": "channels:read", "group": "groups:read", "im": "im:read", "mpim": "mpim:read"}

# The bot-token scopes each Web API method accepts (any one suffices), from each method's
# page at docs.slack.dev/reference/methods/<method> ("Required scopes"). () : no scope is
# required (auth.test, chat.getPermalink, views.publish). HISTORY / READ: the scope of the
# conversation's kind ("channels:history for public channels, groups:history for private
# ones, im:history for DMs, mpim:history for group DMs").
METHOD_SCOPES: dict[str, tuple[str, ...] | dict[str, str]] = {
    "auth.test": (),  # docs.slack.dev/reference/methods/auth.test: no scope required
    "chat.postMessage": ("chat:write",),  # …/methods/chat.postMessage
    "chat.update": ("chat:write",),  # …/methods/chat.update
    "chat.delete": ("chat:write",),  # …/methods/chat.delete
    "chat.postEphemeral": ("chat:write",),  # …/methods/chat.postEphemeral
    "chat.getPermalink": (),  # …/methods/chat.getPermalink: no scope required
    "chat.startStream": ("chat:write",),  # …/methods/chat.startStream
    "chat.appendStream": ("chat:write",),  # …/methods/chat.appendStream
    "chat.stopStream": ("chat:write",),  # …/methods/chat.stopStream
    # …/methods/assistant.threads.setStatus: assistant:write, or chat:write since the
    # 2026-03-05 changelog (channel threads too)
    "assistant.threads.setStatus": ("assistant:write", "chat:write"),
    "assistant.threads.setSuggestedPrompts": ("assistant:write",),  # …/setSuggestedPrompts
    "conversations.history": HISTORY,  # …/methods/conversations.history
    "conversations.replies": HISTORY,  # …/methods/conversations.replies
    "conversations.info": READ,  # …/methods/conversations.info
    # …/methods/conversations.members: channels:read (public), groups:read (private),
    # im:read, mpim:read — the scope of the conversation's kind
    "conversations.members": READ,
    # …/methods/conversations.open: im:write for a DM (mpim:write, channels:manage otherwise)
    "conversations.open": ("im:write", "mpim:write", "channels:manage", "groups:write"),
    "users.info": ("users:read",),  # …/methods/users.info
    "files.info": ("files:read",),  # …/methods/files.info
    "files.getUploadURLExternal": ("files:write",),  # …/methods/files.getUploadURLExternal
    "files.completeUploadExternal": ("files:write",),  # …/files.completeUploadExternal
    "reactions.add": ("reactions:write",),  # …/methods/reactions.add
    "views.publish": (),  # …/methods/views.publish: no scope required
    "views.open": (),  # …/methods/views.open: no scope required
}

# Each event the app can be sent: the subscription (manifest `bot_events`) and the scope it
# needs (docs.slack.dev/reference/events/<event>). A `message` event's subscription and
# scope follow its conversation's kind (message.channels needs channels:history, …).
EVENT_NEEDS: dict[str, tuple[str, str | None]] = {
    "app_mention": ("app_mention", "app_mentions:read"),  # …/events/app_mention
    "app_home_opened": ("app_home_opened", None),  # …/events/app_home_opened: none
    "assistant_thread_started": ("assistant_thread_started", "assistant:write"),
    "assistant_thread_context_changed": ("assistant_thread_context_changed", "assistant:write"),
    "file_shared": ("file_shared", "files:read"),  # …/events/file_shared
    "reaction_added": ("reaction_added", "reactions:read"),  # …/events/reaction_added
    # …/events/agent_session_stopped: Slack's own Stop on the app's streamed messages
    "agent_session_stopped": ("agent_session_stopped", "assistant:write"),
    "tokens_revoked": ("tokens_revoked", None),  # …/events/tokens_revoked: none
    "app_uninstalled": ("app_uninstalled", None),  # …/events/app_uninstalled: none
}
MESSAGE_EVENTS = {
    "channel": "message.channels",
    "group": "message.groups",
    "im": "message.im",
    "mpim": "message.mpim",
}


@dataclass(frozen=True)
class Grants:
    """What the app was granted: its bot scopes and the bot events it subscribes to."""

    scopes: frozenset[str]
    events: frozenset[str]

    @classmethod
    def of(cls, scopes: Iterable[str] | None = None, events: Iterable[str] | None = None) -> Grants:
        """The manifest's grants, with `scopes` or `events` instead where given."""
        shipped = manifest_grants()
        return cls(
            frozenset(scopes) if scopes is not None else shipped.scopes,
            frozenset(events) if events is not None else shipped.events,
        )

    def missing(self, method: str, kind: str) -> str | None:
        """The scope `method` needs on a conversation of `kind` that was not granted, or None.

        Methods not in METHOD_SCOPES are not checked (Slack answers `unknown_method`)."""
        accepted = METHOD_SCOPES.get(method)
        if accepted is None:
            return None
        options = (accepted[kind],) if isinstance(accepted, dict) else accepted
        if not options or any(s in self.scopes for s in options):
            return None
        return ",".join(options)

    def refusal(self, method: str, kind: str) -> dict[str, Any] | None:
        """Slack's answer to a call whose scope was not granted, or None when it may go on."""
        needed = self.missing(method, kind)
        if needed is None:
            return None
        return {
            "ok": False,
            "error": "missing_scope",
            "needed": needed,
            "provided": ",".join(sorted(self.scopes)),
        }

    def delivers(self, event: Mapping[str, Any]) -> bool:
        """Whether Slack sends the app this event: subscribed to, and its scope granted."""
        kind = str(event.get("type") or "")
        if kind == "message":
            convo = conversation_kind(str(event.get("channel") or ""), event.get("channel_type"))
            subscription: str | None = MESSAGE_EVENTS[convo]
            scope: str | None = HISTORY[convo]
        else:
            subscription, scope = EVENT_NEEDS.get(kind, (None, None))
        if subscription is None:
            return False  # an event this table does not know: never subscribed to
        return subscription in self.events and (scope is None or scope in self.scopes)


def conversation_kind(channel_id: str, channel_type: Any = None, *, private: bool = False) -> str:
    """A conversation's kind from its event `channel_type` or its id: D… a DM, G… (or a
    channel marked private) a private channel, C… a public one."""
    if channel_type in KINDS:
        return str(channel_type)
    if channel_type == "private_channel":
        return "group"
    if channel_id.startswith("D"):
        return "im"
    if channel_id.startswith("G") or private:
        return "group"
    return "channel"


@functools.cache
def manifest_grants(path: Path = MANIFEST) -> Grants:
    """The bot scopes (`oauth_config.scopes.bot`) and bot events
    (`settings.event_subscriptions.bot_events`) `manifest.yml` asks for (read once; the two
    lists read line by line, so the sandbox needs no YAML library)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return Grants(listed(lines, "bot"), listed(lines, "bot_events"))

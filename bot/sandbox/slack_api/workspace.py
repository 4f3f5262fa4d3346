"""The fake Slack's workspace: its channels, people, messages, ephemeral messages, files,
statuses and Home tabs, the lock every change is made under, what tests read and wait
on, and keeping it across restarts. Each family of Web API methods is a class over it."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.sandbox.blockkit import message_problems
from bot.sandbox.slack_api.clock import FakeClock
from bot.sandbox.slack_api.tiers import RateMeter

if TYPE_CHECKING:
    from bot.sandbox.slack_api.faults import Fault, Hold


BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM_ID = "T0SANDBOX"
ENTERPRISE_ID = (
    "E0SANDBOX"  # the org of the fake's Enterprise Grid members (Person.enterprise_user)
)
# An interaction's response_url takes up to 5 responses within 30 minutes of the payload
# (docs.slack.dev/interactivity/handling-user-interaction#message_responses, formerly
# api.slack.com/interactivity/handling#message_responses). A POST to one is not a Web API
# method call: the per-method tiers of tiers.py do not count it.
RESPONSE_URL_USES = 5
RESPONSE_URL_SECONDS = 30 * 60


@dataclass
class Call:
    method: str
    params: dict[str, Any]


@dataclass
class Person:
    id: str
    name: str
    title: str = ""
    color: str = "#4a154b"
    team: str = TEAM_ID  # another team's id: a Slack Connect guest, or an org's other workspace
    # An Enterprise Grid member: the org-wide user id users.info gives as `enterprise_user.id`
    # (slackapi/java-slack-sdk json-logs/samples/api/users.info.json); two of a workspace's
    # ids with the same one are one person
    enterprise_user: str = ""
    role: str = ""  # "admin", "owner" or "primary_owner" of the workspace (users.info's is_admin…)


@dataclass
class Channel:
    id: str
    name: str
    members: set[str] = field(default_factory=set)
    topic: str = ""
    # Who may post how: "" anyone; "read_only" (admins only), "thread_only" (replies only),
    # "non_threadable" (no threads): chat.postMessage's restricted_action_* errors.
    posting: str = ""


class SlackError(Exception):
    """A Web API method's refusal: Slack's error code, and details for invalid_blocks."""

    def __init__(self, error: str, details: list[str] | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.details = details or []


class Workspace:
    """The workspace's state and what every method family shares; thread-safe, every
    change wakes `wait_for` and the page."""

    def __init__(
        self,
        *,
        token: str | None = None,
        people: list[Person] | None = None,
        channels: list[Channel] | None = None,
        auto_channels: bool = True,
        team_name: str = "Sandbox",
        team_id: str = TEAM_ID,
        enterprise_id: str | None = None,
    ) -> None:
        self.token = token  # None: any token but one containing "invalid"
        # tokens an OAuth install issued for this workspace (oauth.py), each with when it
        # expires on `clock` (None: never; token rotation off)
        self.issued_tokens: dict[str, float | None] = {}
        self.team_name = team_name
        self.team_id = team_id  # each workspace of a FakeSlackHost has its own
        self.enterprise_id = enterprise_id  # the Enterprise Grid org it belongs to, if any
        # file ids are Slack-wide: each workspace of a FakeSlackHost has its own prefix
        self.file_prefix = "F"
        self.people: dict[str, Person] = {p.id: p for p in people or []}
        self.people.setdefault(BOT_USER, Person(BOT_USER, "closebot", "App", "#2eb67d"))
        self.channels: dict[str, Channel] = {c.id: c for c in channels or []}
        self.auto_channels = auto_channels  # unknown channel ids become channels the bot is in
        self.url = ""
        self.calls: list[Call] = []
        self.messages: dict[str, dict[str, Any]] = {}  # ts → the message as it stands
        self.ephemerals: list[dict[str, Any]] = []
        self.files: dict[str, dict[str, Any]] = {}
        self.uploads: dict[str, bytes] = {}  # file id → the uploaded bytes
        self.unreadable_files: set[str] = set()  # their download answers the sign-in page
        self.dripping_files: dict[str, float] = {}  # served a byte at a time, seconds apart
        self.drips_stopped = threading.Event()  # set: every drip ends (the test is done)
        # "channel:thread_ts" → the bot's status in that thread (assistant.threads.setStatus);
        # gone when the bot replies there or sets an empty status.
        self.statuses: dict[str, dict[str, Any]] = {}
        self.status_set_at: dict[str, float] = {}  # "channel:thread_ts" → when, on `clock`
        self.homes: dict[str, dict[str, Any]] = {}  # user id → the Home tab published for them
        self.modals: dict[str, dict[str, Any]] = {}  # user id → the modal open for them
        self.triggers: dict[str, tuple[str, float]] = {}  # trigger_id → (user, when issued)
        self.exchanged_triggers: set[str] = set()  # trigger_ids views.open has taken
        self.prompts: dict[str, dict[str, Any]] = {}  # "channel:thread_ts" → suggested prompts
        # setSuggestedPrompts calls Slack answered ok but ignored (a thread_ts under agent_view)
        self.ineffective_prompts: list[dict[str, Any]] = []
        self.rate_limit: dict[str, int] = {}  # method → how many 429s to answer first
        self.clock = FakeClock()  # what the tiers and the status line's 2 minutes run on
        self.tiers = RateMeter(self.clock)  # Slack's rate tiers (tiers.py): on by default
        self.faults: dict[str, list[Fault]] = {}
        self.holds: list[Hold] = []
        self.responses: list[dict[str, Any]] = []  # every body posted to a response_url
        self.connections = 0  # TCP connections accepted
        self.hang_up = False  # close each connection after answering, without saying so first
        self.drop = 0  # the next `drop` requests: connection closed, unanswered, not recorded
        self.version = 0
        self._changed = threading.Condition(threading.RLock())
        self._seq = 0
        self._clock = time.time
        self._clock_offset = 0.0  # moved on by advance(): tests pass time without sleeping
        self._responses: dict[str, dict[str, Any]] = {}
        # Told of every call refused on its merits (not injected faults): the sandbox prints them.
        self.on_refusal: Callable[[str, dict[str, Any]], None] | None = None

    @property
    def lock(self) -> threading.Condition:
        """Held while reading or changing the workspace from outside (the page, the client)."""
        return self._changed

    def sorted_messages(self) -> list[dict[str, Any]]:
        """Every message, oldest first (hold `lock`)."""
        return self._sorted()

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def to(self, method: str) -> list[dict[str, Any]]:
        """The arguments of every call of `method`, oldest first."""
        with self._changed:
            return [c.params for c in self.calls if c.method == method]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 15.0) -> bool:
        """Wait, bounded, until `predicate` holds after some change."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout=timeout)

    def wait_change(self, seen: int, timeout: float) -> int:
        """The version after `seen`, or `seen` again when nothing changed within `timeout`."""
        with self._changed:
            self._changed.wait_for(lambda: self.version != seen, timeout=timeout)
            return self.version

    def thread(self, thread_ts: str) -> list[dict[str, Any]]:
        """Replies in a thread, oldest first, as they stand now."""
        with self._changed:
            return [m for m in self._sorted() if m.get("thread_ts") == thread_ts]

    def _bump(self) -> None:
        self.version += 1
        self._changed.notify_all()

    def now(self) -> float:
        """The workspace's time (seconds since the epoch): the wall clock plus whatever a
        test moved it on by (advance()). Every rule of Slack's that ends with time reads it."""
        return self._clock() + self._clock_offset

    def advance(self, seconds: float) -> None:
        """Move the workspace's clock on by `seconds`, as if that much time had passed (no
        sleeping): what time ends in Slack ends now (a stream past its lifetime, …)."""
        with self._changed:
            self._clock_offset += seconds
            self._time_passed()
            self._bump()

    def _time_passed(self) -> None:
        """What the passing of time changes; each method family adds its own (call super())."""

    def _ts(self) -> str:
        return f"{int(self.now())}.{self._next():06d}"

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def save(self, path: Path) -> None:
        """Write the workspace (messages, ephemerals, files) to `path`, atomically."""
        with self._changed:
            data = {
                "format": 1,
                "seq": self._seq,
                "messages": self._sorted(),
                "ephemerals": self.ephemerals,
                "files": self.files,
                "uploads": {k: base64.b64encode(v).decode() for k, v in self.uploads.items()},
            }
            raw = json.dumps(data)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(raw, encoding="utf-8")
        partial.replace(path)

    def load(self, path: Path) -> None:
        """Read a workspace written by save(); file links follow this server's address."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != 1:
                raise ValueError("not a sandbox workspace this version can read")
            seq = int(data["seq"])
            messages = {m["ts"]: m for m in data["messages"]}
            ephemerals = list(data["ephemerals"])
            files = dict(data["files"])
            uploads = {k: base64.b64decode(v) for k, v in data["uploads"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"cannot read the sandbox workspace {path}: {e}") from e
        with self._changed:
            self._seq, self.messages, self.ephemerals = seq, messages, ephemerals
            self.files, self.uploads = files, uploads
            for f in [
                *self.files.values(),
                *(f for m in self.messages.values() for f in m["files"]),
            ]:
                if "url_private_download" in f:
                    f["url_private_download"] = f"{self.url}/files/{f['id']}/{f['name']}"
            self._bump()

    def _sorted(self) -> list[dict[str, Any]]:
        return sorted(self.messages.values(), key=lambda m: float(m["ts"]))

    def channel(self, channel_id: Any) -> Channel:
        if not isinstance(channel_id, str) or not channel_id:
            raise SlackError("channel_not_found")
        found = self.channels.get(channel_id)
        if found is None:
            if not (self.auto_channels and channel_id[0] in "CGD"):
                raise SlackError("channel_not_found")
            # A made-up DM "D<user id>" is that person's DM with the bot (as the sandbox's
            # are): its two members only; a made-up channel has everyone in it.
            owner = channel_id[1:]
            members = (
                {BOT_USER, owner}
                if channel_id[0] == "D" and owner[:1] in ("U", "W")
                else {BOT_USER, *self.people}
                if channel_id[0] != "D"
                else {BOT_USER}
            )
            found = self.channels[channel_id] = Channel(channel_id, channel_id.lower(), members)
        return found

    # -- who can see what ------------------------------------------------------------

    def can_see(self, user: str, channel_id: str) -> bool:
        """Whether `user` can open the conversation `channel_id`: a public channel (C…) any
        member of the workspace can; a private channel (G…) and a DM (D…) only its members.
        Rule: ../shared/design/SLACK.md "Who can see what" (a DM is visible to its members
        only; private channels likewise); the C/G/D prefixes of a conversation's id, from
        docs.slack.dev/apis/web-api/using-the-conversations-api ("Working with Shared
        Channels"); `is_private`/`is_im` in docs.slack.dev/reference/objects/conversation-object."""
        try:
            channel = self.channel(channel_id)
        except SlackError:
            return False
        if channel.id.startswith("C"):
            return user in self.people or self.auto_channels
        return user in channel.members

    def dead_links(self, user: str) -> list[str]:
        """Links to a conversation (or a thread) `user` cannot open, in what the bot showed
        them: their Home tab, messages in conversations they can see (their DM with the bot
        included) and ephemeral messages only they see. [] when every link works.

        A permalink to a message in a DM or private channel someone is not in opens nothing
        for them (../shared/design/SLACK.md: "an approver cannot act on, or open a link to, a
        message in someone else's DM")."""
        shown: list[Any] = [self.homes.get(user)]
        with self._changed:
            shown += [
                m
                for m in self._sorted()
                if m.get("bot_id") == BOT_ID and self.can_see(user, m["channel"])
            ]
            shown += [e for e in self.ephemerals if e.get("visible_to") == user]
            raw = json.dumps(shown)
            dead = []
            for link in dict.fromkeys(_LINK.findall(raw)):
                channel, _, thread = link.partition("/thread/")
                if not self.can_see(user, channel) or (thread and thread not in self.messages):
                    dead.append(f"{self.url}/#/{link}")
            return dead

    def _bot_channel(self, channel_id: Any) -> Channel:
        channel = self.channel(channel_id)
        if BOT_USER not in channel.members:
            raise SlackError("not_in_channel")
        return channel

    @staticmethod
    def _content(params: dict[str, Any], *, require: bool = True) -> tuple[str, list[Any]]:
        text = params.get("text") or ""
        blocks = params.get("blocks") or []
        if blocks == "<not JSON>" or not isinstance(blocks, list):
            raise SlackError("invalid_blocks_format")
        if require and not text and not blocks:
            raise SlackError("no_text")
        if len(text) > 40_000:
            raise SlackError("msg_too_long")
        problem = message_problems(blocks)
        if problem:
            raise SlackError(*problem)
        return text, _with_block_ids(blocks)

    def _thread_root(self, channel: str, thread_ts: Any) -> str | None:
        if not thread_ts:
            return None
        root = self.messages.get(str(thread_ts))
        if root is None or root["channel"] != channel:
            raise SlackError("thread_not_found")
        return root.get("thread_ts") or root["ts"]  # a reply's ts means its thread

    def add_message(self, channel: str, **fields: Any) -> dict[str, Any]:
        ts = self._ts()
        message = {
            "type": "message",
            "ts": ts,
            "channel": channel,
            "thread_ts": None,
            "text": "",
            "blocks": [],
            "reactions": [],
            "files": [],
            **fields,
        }
        self.messages[ts] = message
        self._bump()
        return message

    def add_ephemeral(self, channel: str, visible_to: str, **fields: Any) -> str:
        """A message only `visible_to` sees; from the bot unless `fields` say otherwise."""
        ts = self._ts()
        self.ephemerals.append(
            {
                "type": "message",
                "ts": ts,
                "channel": channel,
                "visible_to": visible_to,
                "user": BOT_USER,
                "bot_id": BOT_ID,
                "text": "",
                "blocks": [],
                "thread_ts": None,
                "ephemeral": True,
                **fields,
            }
        )
        self._bump()
        return ts


# a permalink the fake made (chat.getPermalink): "<url>/#/<channel>/thread/<ts>"
_LINK = re.compile(r"/#/([CGD][A-Z0-9]+(?:/thread/[0-9]+\.[0-9]+)?)")


def _with_block_ids(blocks: list[Any]) -> list[Any]:
    """Slack gives a block without a block_id one of its own."""
    out = json.loads(json.dumps(blocks))
    for block in out:
        block.setdefault("block_id", uuid.uuid4().hex[:5])
    return out


def _public(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in ("channel", "reactions", "files")}


def may_post(posting: str, *, threaded: bool) -> None:
    """A channel's posting rule, as chat.postMessage refuses it (the method's documented
    errors, docs.slack.dev/reference/methods/chat.postMessage: restricted_action_read_only_channel,
    restricted_action_thread_only_channel, restricted_action_non_threadable_channel)."""
    if posting == "read_only":
        raise SlackError("restricted_action_read_only_channel")
    if posting == "thread_only" and not threaded:
        raise SlackError("restricted_action_thread_only_channel")
    if posting == "non_threadable" and threaded:
        raise SlackError("restricted_action_non_threadable_channel")

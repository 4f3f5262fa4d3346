"""A fake Slack Web API on loopback: the methods closebot calls, with Slack's answers and errors.

It keeps a small workspace (channels, people, messages, ephemeral messages, reactions,
files) that the sandbox page shows, refuses what Slack would refuse (`invalid_auth`,
`channel_not_found`, `not_in_channel`, `invalid_blocks` with a pointer to the bad block,
`msg_blocks_too_long`, `message_not_found`, `already_reacted`, …) and records every call
for tests. Faults can be injected: the next N calls of a method (those matching a
predicate) fail with an HTTP status or a Slack error, `ratelimited` with a Retry-After; a
call can be held until the test releases it; the server can drop a request unanswered or
hang up after answering, as a server closing an idle kept-alive connection does.

It is the one fake of Slack: the sandbox, every test (the `fake` fixture) and the bench.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

from bot.sandbox.blockkit import (
    MAX_LOADING_MESSAGES,
    TASK_DISPLAY_MODES,
    chunk_problems,
    message_problems,
    view_problems,
)
from bot.sandbox.http import LoopbackServer, Request, Response, json_response, text_response

BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM_ID = "T0SANDBOX"
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


def user_object(person: Person, team_id: str) -> dict[str, Any]:
    """A person as Slack's user object: `name` is the handle, the profile has the real and
    display names (display_name may be empty in Slack; here it is the first name)."""
    first, _, last = person.name.partition(" ")
    handle = ".".join(person.name.lower().split()) or person.id.lower()
    bot = person.id == BOT_USER
    return {
        "id": person.id,
        "team_id": team_id,
        "name": handle,
        "deleted": False,
        "color": person.color.lstrip("#"),
        "real_name": person.name,
        "tz": "America/Chicago",
        "tz_label": "Central Standard Time",
        "tz_offset": -21600,
        "profile": {
            "title": person.title,
            "phone": "",
            "skype": "",
            "real_name": person.name,
            "real_name_normalized": person.name,
            "display_name": first,
            "display_name_normalized": first,
            "status_text": "",
            "status_emoji": "",
            "avatar_hash": "",
            "first_name": first,
            "last_name": last,
            "team": team_id,
        },
        "is_admin": False,
        "is_owner": False,
        "is_primary_owner": False,
        "is_restricted": False,
        "is_ultra_restricted": False,
        "is_bot": bot,
        "is_app_user": False,
        "updated": 1_761_000_000,
    }


@dataclass
class Channel:
    id: str
    name: str
    members: set[str] = field(default_factory=set)
    topic: str = ""


@dataclass
class Fault:
    """The next `times` calls of a method answer this instead of working."""

    times: int
    error: str | None = None
    status: int = 200
    retry_after: int | None = None
    when: Callable[[dict[str, Any]], bool] | None = None  # only calls whose params match


@dataclass
class Hold:
    """One call held before it is answered (or applied) until `release` is set."""

    method: str
    when: Callable[[dict[str, Any]], bool] | None
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


class SlackError(Exception):
    """A Web API method's refusal: Slack's error code, and details for invalid_blocks."""

    def __init__(self, error: str, details: list[str] | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.details = details or []


def parse_params(content_type: str, raw: bytes, query: dict[str, str]) -> dict[str, Any]:
    """A Web API call's arguments, from JSON or a form body; JSON-valued fields decoded."""
    params: dict[str, Any] = dict(query)
    if "json" in content_type:
        body = json.loads(raw or b"{}")
        if isinstance(body, dict):
            params.update(body)
    else:
        params.update(parse_qsl(raw.decode("utf-8", "replace")))
    for key in ("blocks", "files", "attachments"):
        if isinstance(params.get(key), str) and params[key].strip():
            try:
                params[key] = json.loads(params[key])
            except json.JSONDecodeError:
                params[key] = "<not JSON>"
    return params


class FakeSlack:
    """The workspace and its Web API. Thread-safe; every change wakes `wait_for` and the page."""

    def __init__(
        self,
        *,
        token: str | None = None,
        people: list[Person] | None = None,
        channels: list[Channel] | None = None,
        auto_channels: bool = True,
        team_name: str = "Sandbox",
    ) -> None:
        self.token = token  # None: any token but one containing "invalid"
        self.team_name = team_name
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
        # "channel:thread_ts" → the bot's status in that thread (assistant.threads.setStatus);
        # gone when the bot replies there or sets an empty status.
        self.statuses: dict[str, dict[str, Any]] = {}
        self.homes: dict[str, dict[str, Any]] = {}  # user id → the Home tab published for them
        self.prompts: dict[str, dict[str, Any]] = {}  # "channel:thread_ts" → suggested prompts
        self.rate_limit: dict[str, int] = {}  # method → how many 429s to answer first
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
        self._responses: dict[str, dict[str, Any]] = {}
        # Told of every call refused on its merits (not injected faults): the sandbox prints them.
        self.on_refusal: Callable[[str, dict[str, Any]], None] | None = None

    # -- for tests ---------------------------------------------------------

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

    def fail(
        self,
        method: str,
        *,
        error: str | None = None,
        status: int = 200,
        times: int = 1,
        retry_after: int | None = None,
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """Make the next `times` calls of `method` (those whose params match `when`) fail.

        `error="not_in_channel"` (200, ok=false), `status=503` (an HTTP failure), or
        `error="ratelimited"` (429 with Retry-After, 1 s unless given).
        """
        if error is None and status == 200:
            raise ValueError("give an error code, an HTTP status, or both")
        if error == "ratelimited":
            status, retry_after = 429, retry_after or 1
        with self._changed:
            self.faults.setdefault(method, []).append(
                Fault(times=times, error=error, status=status, retry_after=retry_after, when=when)
            )

    def failures_left(self, method: str) -> int:
        with self._changed:
            return sum(f.times for f in self.faults.get(method, []))

    def hold(self, method: str, when: Callable[[dict[str, Any]], bool] | None = None) -> Hold:
        """Hold the next call of `method` (matching `when`) until hold.release is set."""
        hold = Hold(method, when)
        with self._changed:
            self.holds.append(hold)
        return hold

    def _held(self, method: str, params: dict[str, Any]) -> None:
        with self._changed:
            hold = next(
                (
                    h
                    for h in self.holds
                    if h.method == method and (h.when is None or h.when(params))
                ),
                None,
            )
            if hold is None:
                return
            self.holds.remove(hold)
        hold.arrived.set()
        hold.release.wait(timeout=15)

    def clear_faults(self) -> None:
        with self._changed:
            self.faults.clear()
            self.rate_limit.clear()
            self.drop, self.hang_up = 0, False

    # -- the Web API -------------------------------------------------------

    def call(
        self, method: str, params: dict[str, Any], token: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A Web API request as it arrives over HTTP: the bot token checked, then answered."""
        self._held(method, params)
        if self._token_ok(token or params.get("token")):
            return self.answer(method, params)
        with self._changed:
            self.calls.append(Call(method, params))
            self._bump()
        return 200, {"ok": False, "error": "invalid_auth"}, {}

    def answer(
        self, method: str, params: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(HTTP status, JSON body, headers) for one authenticated Web API call, as Slack would answer it."""
        with self._changed:
            self.calls.append(Call(method, params))
            try:
                fault = self._take_fault(method, params)
                if fault is not None:
                    return fault
                handler = getattr(self, "m_" + method.replace(".", "_"), None)
                if handler is None:
                    return 200, {"ok": False, "error": "unknown_method"}, {}
                try:
                    return 200, {"ok": True, **handler(params)}, {}
                except SlackError as e:
                    body: dict[str, Any] = {"ok": False, "error": e.error}
                    if e.details:
                        body["errors"] = e.details
                        body["response_metadata"] = {
                            "messages": [f"[ERROR] {d}" for d in e.details]
                        }
                    if self.on_refusal:
                        self.on_refusal(method, body)
                    return 200, body, {}
            finally:
                self._bump()

    def _take_fault(
        self, method: str, params: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]] | None:
        if self.rate_limit.get(method):
            self.rate_limit[method] -= 1
            return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"}
        queue = self.faults.get(method) or []
        fault = next((f for f in queue if f.when is None or f.when(params)), None)
        if fault is None:
            return None
        fault.times -= 1
        if fault.times <= 0:
            queue.remove(fault)
        headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after else {}
        return fault.status, {"ok": False, "error": fault.error or "fatal_error"}, headers

    def connected(self) -> None:
        with self._changed:
            self.connections += 1

    def _token_ok(self, token: Any) -> bool:
        if not isinstance(token, str) or not token:
            return False
        return token == self.token if self.token else "invalid" not in token

    def _bump(self) -> None:
        self.version += 1
        self._changed.notify_all()

    def _ts(self) -> str:
        return f"{int(self._clock())}.{self._next():06d}"

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    # -- keeping the workspace across restarts --------------------------------

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
            found = self.channels[channel_id] = Channel(
                channel_id, channel_id.lower(), {BOT_USER, *self.people}
            )
        return found

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

    def m_auth_test(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": f"{self.url}/",
            "team": self.team_name,
            "user": "closebot",
            "team_id": TEAM_ID,
            "user_id": BOT_USER,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def m_chat_postMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        text, blocks = self._content(p)
        thread_ts = self._thread_root(channel.id, p.get("thread_ts"))
        message = self.add_message(
            channel.id,
            text=text,
            blocks=blocks,
            thread_ts=thread_ts,
            user=BOT_USER,
            bot_id=BOT_ID,
        )
        if thread_ts:  # the bot spoke in the thread: its status there is cleared
            self.statuses.pop(f"{channel.id}:{thread_ts}", None)
        return {"channel": channel.id, "ts": message["ts"], "message": _public(message)}

    def m_chat_update(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        message = self.messages.get(str(p.get("ts") or ""))
        if message is None or message["channel"] != channel.id:
            raise SlackError("message_not_found")
        if message.get("bot_id") != BOT_ID:
            raise SlackError("cant_update_message")
        text, blocks = self._content(p)
        message.update(text=text, blocks=blocks, edited={"user": BOT_USER, "ts": self._ts()})
        message.pop("stream", None)  # a stopped stream replaced by an ordinary message
        return {"channel": channel.id, "ts": message["ts"], "text": text}

    def m_chat_delete(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        message = self.messages.get(str(p.get("ts") or ""))
        if message is None or message["channel"] != channel.id:
            raise SlackError("message_not_found")
        del self.messages[message["ts"]]
        return {"channel": channel.id, "ts": message["ts"]}

    def m_chat_postEphemeral(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        user = p.get("user")
        if not isinstance(user, str) or not user:
            raise SlackError("user_not_found")
        if not self.auto_channels:
            if user not in self.people:
                raise SlackError("user_not_found")
            if user not in channel.members:
                raise SlackError("user_not_in_channel")
        text, blocks = self._content(p)
        ts = self.add_ephemeral(
            channel.id, user, text=text, blocks=blocks, thread_ts=p.get("thread_ts")
        )
        return {"message_ts": ts}

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

    def m_reactions_add(self, p: dict[str, Any]) -> dict[str, Any]:
        self.react(p.get("channel"), p.get("timestamp"), p.get("name"), BOT_USER)
        return {}

    def react(self, channel: Any, ts: Any, name: Any, user: str, *, toggle: bool = False) -> None:
        self._bot_channel(channel) if user == BOT_USER else self.channel(channel)
        message = self.messages.get(str(ts or ""))
        if message is None or message["channel"] != channel:
            raise SlackError("message_not_found")
        if not isinstance(name, str) or not name.strip(":"):
            raise SlackError("invalid_name")
        name = name.strip(":")
        reaction = next((r for r in message["reactions"] if r["name"] == name), None)
        if reaction is None:
            reaction = {"name": name, "users": [], "count": 0}
            message["reactions"].append(reaction)
        if user in reaction["users"]:
            if not toggle:
                raise SlackError("already_reacted")
            reaction["users"].remove(user)
        else:
            reaction["users"].append(user)
        reaction["count"] = len(reaction["users"])
        message["reactions"] = [r for r in message["reactions"] if r["count"]]
        self._bump()

    def m_files_getUploadURLExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        name = p.get("filename")
        if not name:
            raise SlackError("invalid_arguments")
        file_id = f"F{self._next():08d}"
        self.files[file_id] = {
            "id": file_id,
            "name": name,
            "title": name,
            "length": p.get("length"),
        }
        return {"upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}

    def m_files_completeUploadExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        listed = p.get("files")
        if not isinstance(listed, list) or not listed:
            raise SlackError("invalid_arguments")
        shared = []
        for item in listed:
            file_id = str((item or {}).get("id"))
            if file_id not in self.files or file_id not in self.uploads:
                raise SlackError("file_not_found")
            f = self.files[file_id]
            f["title"] = item.get("title") or f["name"]
            f["url_private_download"] = f"{self.url}/files/{file_id}/{f['name']}"
            f["size"] = len(self.uploads[file_id])
            shared.append({k: v for k, v in f.items() if k != "length"})
        if p.get("channel_id"):
            channel = self._bot_channel(p["channel_id"])
            self.add_message(
                channel.id,
                text=p.get("initial_comment") or "",
                thread_ts=self._thread_root(channel.id, p.get("thread_ts")),
                user=BOT_USER,
                bot_id=BOT_ID,
                files=shared,
            )
        return {"files": shared}

    def upload(self, file_id: str, data: bytes) -> bool:
        with self._changed:
            if file_id not in self.files:
                return False
            self.uploads[file_id] = data
            self._bump()
            return True

    def file_bytes(self, file_id: str) -> tuple[bytes, dict[str, Any]] | None:
        """A file's content and record, as the page (a person's own client) downloads it."""
        with self._changed:
            data, f = self.uploads.get(file_id), self.files.get(file_id)
        return None if data is None or f is None else (data, f)

    def share_file(
        self,
        *,
        user: str,
        channel: str,
        thread_ts: str | None,
        name: str,
        data: bytes,
        text: str = "",
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A person drops a file into a conversation (a thread, when `thread_ts`): the file,
        and its `file_share` message, as Slack keeps them."""
        with self._changed:
            return self._share_file(user, channel, thread_ts, name, data, text)

    def _share_file(
        self, user: str, channel: str, thread_ts: str | None, name: str, data: bytes, text: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        file_id = f"F{self._next():08d}"
        thread = self._thread_root(channel, thread_ts)
        ts = self._ts()
        share = {"ts": ts, **({"thread_ts": thread} if thread else {})}
        f = {
            "id": file_id,
            "name": name,
            "title": name,
            "user": user,
            "created": int(self._clock()),
            "filetype": name.rsplit(".", 1)[-1].lower() if "." in name else "",
            "mimetype": "text/csv"
            if name.lower().endswith(".csv")
            else "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
            if name.lower().endswith(".xlsx")
            else "application/octet-stream",
            "size": len(data),
            "url_private": f"{self.url}/files/{file_id}/{quote(name)}",
            "url_private_download": f"{self.url}/files/{file_id}/download/{quote(name)}",
            "shares": {"public" if channel[:1] == "C" else "private": {channel: [share]}},
        }
        self.files[file_id] = f
        self.uploads[file_id] = data
        message = {
            "type": "message",
            "ts": ts,
            "channel": channel,
            "thread_ts": thread,
            "text": text,
            "blocks": [],
            "reactions": [],
            "files": [f],
            "user": user,
            "subtype": "file_share",
            "upload": True,
        }
        self.messages[ts] = message
        self._bump()
        return message, f

    def m_files_info(self, p: dict[str, Any]) -> dict[str, Any]:
        f = self.files.get(str(p.get("file") or ""))
        if f is None or f["id"] not in self.uploads:
            raise SlackError("file_not_found")
        return {"file": {k: v for k, v in f.items() if k != "length"}}

    def m_assistant_threads_setStatus(self, p: dict[str, Any]) -> dict[str, Any]:
        """The bot's "is working…" line under a thread: `status` ('' clears it) and up to 10
        `loading_messages` Slack rotates through; cleared by the bot's next reply."""
        channel = self._bot_channel(p.get("channel_id"))
        status = p.get("status")
        if not isinstance(status, str):
            raise SlackError("invalid_arguments", ["status: must provide a string"])
        thread = self._status_thread(channel.id, p.get("thread_ts"))
        loading = p.get("loading_messages")
        if isinstance(loading, str):  # a form body carries it as JSON
            loading = json.loads(loading)
        if loading is not None and (
            not isinstance(loading, list)
            or len(loading) > MAX_LOADING_MESSAGES
            or not all(isinstance(m, str) and m for m in loading)
        ):
            raise SlackError(
                "invalid_arguments",
                [f"loading_messages: at most {MAX_LOADING_MESSAGES} non-empty strings"],
            )
        key = f"{channel.id}:{thread}"
        if status:
            self.statuses[key] = {"status": status, "loading_messages": loading or []}
        else:
            self.statuses.pop(key, None)
        return {}

    def _status_thread(self, channel: str, thread_ts: Any) -> str:
        root = self.messages.get(str(thread_ts or ""))
        if root is None or root["channel"] != channel or root.get("thread_ts"):
            raise SlackError("invalid_thread_ts")
        return str(root["ts"])

    def status_of(self, channel: str, thread_ts: str) -> dict[str, Any] | None:
        """The status shown under a thread now, or None."""
        with self._changed:
            return self.statuses.get(f"{channel}:{thread_ts}")

    def m_assistant_threads_setSuggestedPrompts(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self.channel(p.get("channel_id"))
        prompts = p.get("prompts")
        if isinstance(prompts, str):
            prompts = json.loads(prompts)
        if (
            not isinstance(prompts, list)
            or not 1 <= len(prompts) <= 4
            or not all(isinstance(x, dict) and x.get("title") and x.get("message") for x in prompts)
        ):
            raise SlackError(
                "invalid_arguments", ["prompts: 1 to 4 objects with a title and a message"]
            )
        self.prompts[f"{channel.id}:{p.get('thread_ts') or ''}"] = {
            "title": p.get("title"),
            "prompts": prompts,
        }
        return {}

    # -- streamed messages: chat.startStream / appendStream / stopStream ---------

    def _chunks(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        chunks = p.get("chunks")
        if isinstance(chunks, str):
            chunks = json.loads(chunks)
        chunks = list(chunks or [])
        if p.get("markdown_text"):
            chunks.insert(0, {"type": "markdown_text", "text": p["markdown_text"]})
        found = chunk_problems(chunks)
        if found:
            raise SlackError("invalid_chunks", found)
        return chunks

    @staticmethod
    def _apply_chunks(stream: dict[str, Any], chunks: list[dict[str, Any]]) -> None:
        for chunk in chunks:
            kind = chunk["type"]
            if kind == "markdown_text":
                stream["text"] += chunk["text"]
            elif kind == "plan_update":
                stream["title"] = chunk["title"]
            elif kind == "blocks":
                stream["blocks"] += chunk["blocks"]
            else:
                task = {
                    k: chunk[k]
                    for k in ("id", "title", "status", "details", "output")
                    if k in chunk
                }
                tasks = stream["tasks"]
                at = next((i for i, t in enumerate(tasks) if t["id"] == task["id"]), None)
                if at is None:
                    tasks.append(task)
                else:
                    tasks[at] = {**tasks[at], **task}

    def m_chat_startStream(self, p: dict[str, Any]) -> dict[str, Any]:
        """A streamed reply: in a channel (not a DM) Slack needs whom it answers
        (`recipient_user_id`, `recipient_team_id`)."""
        channel = self._bot_channel(p.get("channel"))
        if channel.id[0] != "D":
            if not p.get("recipient_user_id"):
                raise SlackError("missing_recipient_user_id")
            if not p.get("recipient_team_id"):
                raise SlackError("missing_recipient_team_id")
        mode = p.get("task_display_mode") or "timeline"
        if mode not in TASK_DISPLAY_MODES:
            raise SlackError("invalid_arguments", ["task_display_mode: must be timeline or plan"])
        chunks = self._chunks(p)
        thread_ts = self._thread_root(channel.id, p.get("thread_ts"))
        stream: dict[str, Any] = {
            "mode": mode,
            "state": "streaming",
            "title": None,
            "tasks": [],
            "text": "",
            "blocks": [],
            "recipient": p.get("recipient_user_id"),
        }
        self._apply_chunks(stream, chunks)
        message = self.add_message(
            channel.id, text="", thread_ts=thread_ts, user=BOT_USER, bot_id=BOT_ID, stream=stream
        )
        if thread_ts:
            self.statuses.pop(f"{channel.id}:{thread_ts}", None)
        return {"channel": channel.id, "ts": message["ts"]}

    def _streaming(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        message = self.messages.get(str(p.get("ts") or ""))
        if message is None or message["channel"] != channel.id:
            raise SlackError("message_not_found")
        if message.get("bot_id") != BOT_ID:
            raise SlackError("message_not_owned_by_app")
        if (message.get("stream") or {}).get("state") != "streaming":
            raise SlackError("message_not_in_streaming_state")
        return message

    def m_chat_appendStream(self, p: dict[str, Any]) -> dict[str, Any]:
        message = self._streaming(p)
        chunks = self._chunks(p)
        if not chunks:
            raise SlackError("no_text")
        self._apply_chunks(message["stream"], chunks)
        self._bump()
        return {"channel": message["channel"], "ts": message["ts"]}

    def m_chat_stopStream(self, p: dict[str, Any]) -> dict[str, Any]:
        message = self._streaming(p)
        chunks = self._chunks(p)
        blocks = p.get("blocks") or []
        if blocks:
            _, blocks = self._content({"blocks": blocks})
        self._apply_chunks(message["stream"], chunks)
        message["stream"]["state"] = "stopped"
        message["blocks"] = blocks
        self._bump()
        return {"channel": message["channel"], "ts": message["ts"], "message": _public(message)}

    def m_chat_getPermalink(self, p: dict[str, Any]) -> dict[str, Any]:
        """A link to a message; in the sandbox it opens the message's thread on the page."""
        channel = self.channel(p.get("channel"))
        message = self.messages.get(str(p.get("message_ts") or ""))
        if message is None or message["channel"] != channel.id:
            raise SlackError("message_not_found")
        thread = message.get("thread_ts") or message["ts"]
        return {"channel": channel.id, "permalink": f"{self.url}/#/{channel.id}/thread/{thread}"}

    # -- App Home -----------------------------------------------------------

    def m_views_publish(self, p: dict[str, Any]) -> dict[str, Any]:
        user = p.get("user_id")
        if not isinstance(user, str) or not user:
            raise SlackError("invalid_arguments", ["user_id: must provide a string"])
        view = p.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        found = view_problems(view)
        if found:
            raise SlackError("invalid_arguments", found)
        assert isinstance(view, dict)
        published = {**view, "id": f"V{self._next():08d}"}
        self.homes[user] = published
        return {"view": published}

    def m_conversations_replies(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self._bot_channel(p.get("channel"))
        root = self.messages.get(str(p.get("ts") or ""))
        if root is None or root["channel"] != channel.id:
            raise SlackError("thread_not_found")
        ts = root.get("thread_ts") or root["ts"]
        thread = [m for m in self._sorted() if m["ts"] == ts or m.get("thread_ts") == ts]
        limit = max(1, min(int(p.get("limit") or 1000), 1000))
        start = int(p.get("cursor") or 0)
        page = thread[start : start + limit]
        more = start + limit < len(thread)
        return {
            "messages": [_public(m) for m in page],
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def m_conversations_history(self, p: dict[str, Any]) -> dict[str, Any]:
        """A channel's top-level messages, newest first, from `oldest` on."""
        channel = self._bot_channel(p.get("channel"))
        oldest = float(p.get("oldest") or 0)
        top = [
            m
            for m in reversed(self._sorted())
            if m["channel"] == channel.id
            and m.get("thread_ts") in (None, m["ts"])
            and float(m["ts"]) >= oldest
        ]
        limit = max(1, min(int(p.get("limit") or 100), 1000))
        start = int(p.get("cursor") or 0)
        page = top[start : start + limit]
        more = start + limit < len(top)
        return {
            "messages": [_public(m) for m in page],
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def m_conversations_info(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = self.channel(p.get("channel"))
        return {
            "channel": {
                "id": channel.id,
                "name": channel.name,
                "is_channel": True,
                "is_member": BOT_USER in channel.members,
            }
        }

    def m_users_info(self, p: dict[str, Any]) -> dict[str, Any]:
        """users.info as Slack answers it: the user object with its profile (the fields of
        Slack's own sample, slackapi/java-slack-sdk json-logs/samples/api/users.info.json)."""
        user = str(p.get("user") or "")
        person = self.people.get(user)
        if person is None and self.auto_channels and user[:1] in ("U", "W"):
            person = Person(user, user[1:].title())  # a test's made-up colleague
        if person is None:
            raise SlackError("user_not_found")
        return {"user": user_object(person, TEAM_ID)}

    # -- response_url ------------------------------------------------------

    def response_url(
        self, *, channel: str = "CFIN", user: str = "UALICE", message_ts: str | None = None
    ) -> str:
        """A response_url for one interaction: 5 uses within 30 minutes."""
        key = uuid.uuid4().hex
        with self._changed:
            self._responses[key] = {
                "channel": channel,
                "user": user,
                "message_ts": message_ts,
                "uses": 0,
                "expires": self._clock() + RESPONSE_URL_SECONDS,
            }
        return f"{self.url}/respond/{key}"

    def respond(self, key: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """A POST to a response_url: ephemeral (default), in_channel, replace or delete the original."""
        with self._changed:
            self.responses.append(body)
            ctx = self._responses.get(key)
            if ctx is None or self._clock() > ctx["expires"]:
                return 404, {"ok": False, "error": "expired_url"}
            if ctx["uses"] >= RESPONSE_URL_USES:
                return 404, {"ok": False, "error": "used_url"}
            ctx["uses"] += 1
            try:
                text, blocks = self._content(body, require=not body.get("delete_original"))
                original = self.messages.get(ctx["message_ts"] or "")
                mine = next(  # or the ephemeral message the interaction came from
                    (
                        e
                        for e in self.ephemerals
                        if e["ts"] == ctx["message_ts"] and e["visible_to"] == ctx["user"]
                    ),
                    None,
                )
                if body.get("delete_original"):
                    if original is not None:
                        del self.messages[original["ts"]]
                    elif mine is not None:
                        self.ephemerals.remove(mine)
                elif body.get("replace_original") and original is not None:
                    original.update(text=text, blocks=blocks)
                elif body.get("replace_original") and mine is not None:
                    mine.update(text=text, blocks=blocks)
                elif body.get("response_type") == "in_channel":
                    thread = body.get("thread_ts") or (original or {}).get("thread_ts")
                    self.add_message(
                        ctx["channel"],
                        text=text,
                        blocks=blocks,
                        thread_ts=thread,
                        user=BOT_USER,
                        bot_id=BOT_ID,
                    )
                else:
                    thread = body.get("thread_ts") or (original or {}).get("thread_ts")
                    self.add_ephemeral(
                        ctx["channel"], ctx["user"], text=text, blocks=blocks, thread_ts=thread
                    )
            except SlackError as e:
                return 400, {"ok": False, "error": e.error, "errors": e.details}
            finally:
                self._bump()
        return 200, {"ok": True}

    # -- HTTP --------------------------------------------------------------

    def route(self, request: Request) -> Response | None:
        """/api/<method>, /upload/<file id>, /files/<id>/<name> and /respond/<key>."""
        path = request.path
        with self._changed:
            dropped, self.drop = self.drop > 0, max(0, self.drop - 1)
        if dropped:
            return Response(drop=True)
        if path.startswith("/api/"):
            params = parse_params(
                request.headers.get("content-type", ""), request.body, request.query
            )
            auth = request.headers.get("authorization", "")
            token = auth.removeprefix("Bearer ").strip() or None
            status, body, headers = self.call(path.removeprefix("/api/"), params, token)
            response = json_response(body, status, **headers)
            response.close = self.hang_up
            return response
        if path.startswith("/upload/") and request.method == "POST":
            ok = self.upload(path.removeprefix("/upload/"), request.body)
            return text_response("OK" if ok else "file_not_found", 200 if ok else 404)
        if path.startswith("/files/"):
            # url_private(_download): only a request carrying a token (the bot's) gets the file
            auth = request.headers.get("authorization", "")
            token = auth.removeprefix("Bearer ").strip() or None
            with self._changed:
                self.calls.append(Call("url_private_download", {"path": path, "token": token}))
                self._bump()
            if not self._token_ok(token):
                return text_response("not_authed", 401)
            found = self.file_bytes(path.split("/")[2])
            if found is None:
                return text_response("file_not_found", 404)
            data, f = found
            return Response(
                200,
                data,
                {
                    "Content-Type": "text/csv; charset=utf-8"
                    if f["name"].endswith(".csv")
                    else "application/octet-stream",
                    "Content-Disposition": f'attachment; filename="{f["name"]}"',
                },
            )
        if path.startswith("/respond/") and request.method == "POST":
            try:
                body = request.json()
            except ValueError:
                return json_response({"ok": False, "error": "invalid_payload"}, 400)
            status, answer = self.respond(path.removeprefix("/respond/"), body)
            return json_response(answer, status)
        return None


def _with_block_ids(blocks: list[Any]) -> list[Any]:
    """Slack gives a block without a block_id one of its own."""
    out = json.loads(json.dumps(blocks))
    for block in out:
        block.setdefault("block_id", uuid.uuid4().hex[:5])
    return out


def _public(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in ("channel", "reactions", "files")}


@contextmanager
def fake_slack(token: str | None = None, **kw: Any) -> Iterator[FakeSlack]:
    """A FakeSlack served on 127.0.0.1 (port 0) until the block ends."""
    fake = FakeSlack(token=token, **kw)
    with LoopbackServer([fake.route], on_connection=fake.connected) as server:
        fake.url = server.url
        yield fake

"""A loopback stand-in for Slack's Web API that records every call (port 0, 127.0.0.1)."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from tests.loopback import QuietHandler, loopback

BOT_USER = "UBOT"


@dataclass
class Call:
    method: str
    params: dict[str, Any]


@dataclass
class Fault:
    status: int
    error: str
    headers: dict[str, str]
    when: Callable[[dict[str, Any]], bool] | None = None  # only calls whose params match


@dataclass
class Hold:
    """One call held before it is answered (or applied) until `release` is set."""

    method: str
    when: Callable[[dict[str, Any]], bool] | None
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


@dataclass
class FakeSlack:
    url: str = ""
    calls: list[Call] = field(default_factory=list)
    messages: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # ts → the message as it stands
    uploads: dict[str, bytes] = field(default_factory=dict)
    rate_limit: dict[str, int] = field(
        default_factory=dict
    )  # method → how many 429s to answer first
    faults: dict[str, list[Fault]] = field(
        default_factory=dict
    )  # method → failures to answer before the real answer
    responses: list[dict[str, Any]] = field(default_factory=list)  # posts to response_url
    connections: int = 0  # TCP connections accepted
    hang_up: bool = False  # close each connection after answering, without saying so first
    drop: int = 0  # the next `drop` requests: connection closed, unanswered and not recorded
    holds: list[Hold] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _ts: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def to(self, method: str) -> list[dict[str, Any]]:
        with self._changed:
            return [c.params for c in self.calls if c.method == method]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 15.0) -> bool:
        """Wait, bounded, until `predicate` holds after some call arrived."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout=timeout)

    def thread(self, thread_ts: str) -> list[dict[str, Any]]:
        """Messages posted in a thread (replies only), oldest first, as they stand now."""
        with self._changed:
            return [m for m in self.messages.values() if m.get("thread_ts") == thread_ts]

    @property
    def response_url(self) -> str:
        """A response_url for slash commands and actions that lands in `responses`."""
        return f"{self.url}/response/1"

    def fail(
        self,
        method: str,
        *,
        times: int = 1,
        status: int = 200,
        error: str = "internal_error",
        retry_after: int | None = None,
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """Answer the next `times` calls of `method` (those matching `when`) with an error:
        an HTTP status (500, 429 with Retry-After) or a Slack error (`not_in_channel`)."""
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        with self._changed:
            self.faults.setdefault(method, []).extend(
                [Fault(status, error, headers, when) for _ in range(times)]
            )

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

    def failures_left(self, method: str) -> int:
        with self._changed:
            return len(self.faults.get(method, []))

    def answer(
        self, method: str, params: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._changed:
            self.calls.append(Call(method, params))
            fault = next(
                (f for f in self.faults.get(method, []) if f.when is None or f.when(params)), None
            )
            if fault is not None:
                self.faults[method].remove(fault)
                self._changed.notify_all()
                return fault.status, {"ok": False, "error": fault.error}, fault.headers
            if self.rate_limit.get(method):
                self.rate_limit[method] -= 1
                self._changed.notify_all()
                return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"}
            body = self._body(method, params)
            self._changed.notify_all()
            return 200, body, {}

    def _body(self, method: str, p: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://example.slack.com/",
                "team": "Example",
                "user": "closebot",
                "team_id": "T0001",
                "user_id": BOT_USER,
                "bot_id": "BBOT",
            }
        if method == "chat.postMessage":
            ts = f"1761900000.{next(self._ts):06d}"
            message = {
                "ts": ts,
                "channel": p.get("channel"),
                "thread_ts": p.get("thread_ts"),
                "text": p.get("text"),
                "blocks": p.get("blocks") or [],
            }
            self.messages[ts] = message
            return {"ok": True, "channel": p.get("channel"), "ts": ts, "message": message}
        if method == "chat.update":
            message = self.messages.get(p.get("ts", ""))
            if message is None:
                return {"ok": False, "error": "message_not_found"}
            message.update(text=p.get("text"), blocks=p.get("blocks") or [])
            return {"ok": True, "channel": p.get("channel"), "ts": p.get("ts")}
        if method == "conversations.replies":
            root = self.messages.get(str(p.get("ts", "")))
            if root is None:
                return {"ok": False, "error": "thread_not_found"}
            replies = [m for m in self.messages.values() if m.get("thread_ts") == p.get("ts")]
            return {"ok": True, "messages": [root, *replies], "has_more": False}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"1761900000.{next(self._ts):06d}"}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts):04d}"
            return {"ok": True, "upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            return {
                "ok": True,
                "files": [{"id": f["id"], "title": f.get("title")} for f in p.get("files", [])],
            }
        return {"ok": True}


def _params(content_type: str, raw: bytes) -> dict[str, Any]:
    if "json" in content_type:
        return json.loads(raw or b"{}")
    params: dict[str, Any] = dict(parse_qsl(raw.decode()))
    for key in ("blocks", "files"):
        if isinstance(params.get(key), str):
            params[key] = json.loads(params[key])
    return params


@contextmanager
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack()

    class Handler(QuietHandler):
        def setup(self) -> None:
            super().setup()
            with fake._changed:
                fake.connections += 1

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            with fake._changed:
                dropped, fake.drop = fake.drop > 0, max(0, fake.drop - 1)
            if dropped:  # as a server closing an idle connection just as a request came in
                self.close_connection = True
                return
            if self.path.startswith("/response/"):
                with fake._changed:
                    fake.responses.append(json.loads(raw or b"{}"))
                    fake._changed.notify_all()
                self.send(200, b"ok", {})
                return
            if self.path.startswith("/upload/"):
                with fake._changed:
                    fake.uploads[self.path.rsplit("/", 1)[1]] = raw
                self.send(200, b"OK", {})
                return
            method = self.path.removeprefix("/api/")
            if "invalid" in self.headers.get("authorization", ""):
                self.send(
                    200,
                    json.dumps({"ok": False, "error": "invalid_auth"}).encode(),
                    {"content-type": "application/json"},
                )
                return
            params = _params(self.headers.get("content-type", ""), raw)
            fake._held(method, params)
            status, body, headers = fake.answer(method, params)
            self.send(
                status, json.dumps(body).encode(), {"content-type": "application/json", **headers}
            )
            if fake.hang_up:  # as a server does when an idle kept-alive connection times out
                self.close_connection = True

        def do_GET(self) -> None:  # conversations.replies and other reads
            path, _, query = self.path.partition("?")
            status, body, headers = fake.answer(path.removeprefix("/api/"), dict(parse_qsl(query)))
            self.send(
                status, json.dumps(body).encode(), {"content-type": "application/json", **headers}
            )

    with loopback(Handler) as url:
        fake.url = url
        yield fake

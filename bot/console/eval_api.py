"""A loopback Messages API whose replies come from a scripted model, and whose usage is
counted the way the Anthropic API documents it: what `closebot eval` (offline) and `make
bench` drive a Claude close against, through the real adapter and the real SDK.

The script is the playbook asking by reference (as Claude is told to): it calls the close's
tools, asks the prepared questions by their refs and records each answer. Each reply begins
with a thinking block, as the default model's adaptive thinking does.

Usage, per the documentation (docs/performance.md has the arithmetic and the sources):
- prompt caching: a request reads the longest prefix cached and still alive (a read renews
  its lifetime), writes what lies between that and its last breakpoint — to a 5-minute or a
  1-hour entry as the breakpoint's `ttl` says — and pays plain input for the rest;
  `cache_creation` splits the writes by lifetime, as the API reports them;
- thinking is billed as output tokens (the full thinking, not the summary returned);
- time: each model call takes CALL_SECONDS; `wait(seconds)` is a person taking their time
  to answer, and cache entries lapse by it.
Tokens are estimated at four bytes of JSON each.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bot.close import PlaybookModel
from bot.core import prices
from bot.core.message_events import sse
from bot.core.models import Reply, flat_usage

CALL_SECONDS = 20.0  # one model call, thinking included
# Adaptive thinking at the default effort, per call: tokens billed as output. An estimate
# (the API bills the full thinking, not the summary it returns); docs/performance.md.
THINKING_TOKENS = 600
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


def price_of(model: str) -> tuple[float, float]:
    """(input, output) US$ per million tokens of a model: the project's one price table."""
    p = prices.price_of(model)
    return float(p.input), float(p.output)


def cost_of(model: str, usage: dict[str, Any]) -> float:
    """US$ of one usage (a call's or a close's), as the API bills it: writes by lifetime
    (bot/core/prices.py)."""
    return float(prices.cost(model, flat_usage(usage)))


def add_usage(total: dict[str, Any], usage: dict[str, Any]) -> None:
    for k, v in usage.items():
        if isinstance(v, int):
            total[k] = total.get(k, 0) + v
        elif isinstance(v, dict):
            add_usage(total.setdefault(k, {}), v)


class ClaudeScript:
    """The scripted model: the playbook asking by reference, and, as Claude would, a look at
    the lines a person asks to see in the thread (document_lines) before going on."""

    name = "claude-script"

    def __init__(self) -> None:
        self.playbook = PlaybookModel(by_reference=True)

    def respond(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        tool_choice: dict[str, Any] | None = None,
    ) -> Reply:
        reply = self.playbook.respond(system=system, messages=messages, tools=tools)
        last = messages[-1] if messages else {}
        said = " ".join(
            str(b.get("text", ""))
            for b in last.get("content") or []
            if isinstance(b, dict) and b.get("type") == "text"
        )
        wells = LINES_OF.findall(said) if last.get("role") == "user" else []
        if not wells or not reply.content:
            return reply
        period = str(PERIOD.findall(json.dumps(messages[0]))[0])
        look = {
            "type": "tool_use",
            "id": f"toolu_lines_{len(messages)}",
            "name": "document_lines",
            "input": {"period": period, "document": "jib", "well_id": wells[0]},
        }
        uses = [b for b in reply.content if b.get("type") == "tool_use"]
        if not uses:  # a last word: look first, then say it
            return Reply(content=[look], stop_reason="tool_use")
        return Reply(content=[*reply.content, look], stop_reason="tool_use")


LINES_OF = re.compile(r"lines of (W-[A-Z0-9-]+)")
PERIOD = re.compile(r"\b(\d{4}-\d{2})\b")


def _tokens(text: str) -> int:
    return len(text) // 4


@dataclass
class ScriptedApi:
    """The Messages API as a scripted model would answer it, with a clock and a cache."""

    script: Any = field(default_factory=lambda: ClaudeScript())
    thinking_tokens: int = THINKING_TOKENS
    url: str = ""
    now: float = 0.0
    usage: dict[str, Any] = field(default_factory=dict)
    calls: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    _cache: dict[str, float] = field(default_factory=dict)  # prefix → expires at
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self, seconds: float) -> None:
        """A person takes this long to answer."""
        self.now += seconds

    def refusal(self, request: dict[str, Any]) -> str | None:
        """Why the API would refuse this request (400), if it would: a thinking block is
        bound to the system prompt and tools it was made under; sent back with others, the
        request is refused (https://platform.claude.com/docs/en/build-with-claude/extended-thinking,
        "Preserving thinking blocks"). A simplification of the strict fake's check
        (tests/fake_anthropic.py binds to the whole prefix)."""
        bound = _binding(request)
        for i, message in enumerate(request.get("messages") or []):
            for j, block in enumerate(message.get("content") or []):
                thinking = isinstance(block, dict) and block.get("type") == "thinking"
                if thinking and block.get("signature") != bound:
                    return (
                        f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block: "
                        "it is bound to a different system prompt or tools"
                    )
        return None

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(request)
            self.calls += 1
            self.now += CALL_SECONDS
            usage = self._usage(request)
            reply = self.script.respond(
                system="", messages=_plain(request["messages"]), tools=request.get("tools", [])
            )
            summary = "Deciding the next step from the tool results."
            thinking = {"type": "thinking", "thinking": summary, "signature": _binding(request)}
            content = [thinking, *reply.content]
            usage["output_tokens"] = _tokens(json.dumps(reply.content)) + self.thinking_tokens
            add_usage(self.usage, usage)
            return {
                "id": f"msg_{self.calls}",
                "type": "message",
                "role": "assistant",
                "model": request["model"],
                "content": content,
                "stop_reason": reply.stop_reason or "end_turn",
                "stop_sequence": None,
                "usage": usage,
            }

    def _usage(self, request: dict[str, Any]) -> dict[str, Any]:
        blocks: list[tuple[str, str | None]] = []  # (canonical JSON, the breakpoint's ttl)
        for tool in request.get("tools", []):
            blocks.append((json.dumps(_unmarked(tool), sort_keys=True), _ttl(tool)))
        for part in request.get("system") or []:
            blocks.append((json.dumps(_unmarked(part), sort_keys=True), _ttl(part)))
        for message in request["messages"]:
            for b in message["content"]:
                text = message["role"] + json.dumps(_unmarked(b), sort_keys=True)
                blocks.append((text, _ttl(b)))
        digest = hashlib.sha256()
        prefixes = []
        for text, _ in blocks:
            digest.update(text.encode())
            prefixes.append(digest.hexdigest())
        sizes = [_tokens(text) for text, _ in blocks]
        alive = [i + 1 for i, p in enumerate(prefixes) if self._cache.get(p, -1.0) >= self.now]
        read_to = max(alive, default=0)
        if read_to:  # a read renews the entry's lifetime
            ttl = self._ttl_at(blocks, read_to)
            self._cache[prefixes[read_to - 1]] = self.now + TTL_SECONDS[ttl]
        marks = [(i + 1, ttl) for i, (_, ttl) in enumerate(blocks) if ttl]
        written = {"5m": 0, "1h": 0}
        start = read_to
        for end, ttl in marks:
            if end > start:
                written[ttl] += sum(sizes[start:end])
                start = end
            self._cache[prefixes[end - 1]] = max(
                self._cache.get(prefixes[end - 1], -1.0), self.now + TTL_SECONDS[ttl]
            )
        last_mark = max((m for m, _ in marks), default=0)
        return {
            "input_tokens": sum(sizes[max(read_to, last_mark) :]),
            "cache_read_input_tokens": sum(sizes[:read_to]),
            "cache_creation_input_tokens": written["5m"] + written["1h"],
            "cache_creation": {
                "ephemeral_5m_input_tokens": written["5m"],
                "ephemeral_1h_input_tokens": written["1h"],
            },
        }

    @staticmethod
    def _ttl_at(blocks: list[tuple[str, str | None]], end: int) -> str:
        marked = [ttl for _, ttl in blocks[:end] if ttl]
        return marked[-1] if marked else "5m"


def _binding(request: dict[str, Any]) -> str:
    """The signature a thinking block made for this request carries: its system and tools."""
    bound = {
        "model": request.get("model"),
        "system": [_unmarked(b) for b in request.get("system") or []],
        "tools": [_unmarked(t) for t in request.get("tools") or []],
    }
    return hashlib.sha256(json.dumps(bound, sort_keys=True).encode()).hexdigest()[:32]


def _ttl(block: Any) -> str | None:
    control = block.get("cache_control") if isinstance(block, dict) else None
    if not control:
        return None
    return "1h" if control.get("ttl") == "1h" else "5m"


def _unmarked(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _plain(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as the transcript holds them: no cache marks, no thinking blocks."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            content = [_unmarked(b) for b in content if b.get("type") != "thinking"]
        out.append({"role": m["role"], "content": content})
    return out


@contextmanager
def scripted_api(api: ScriptedApi | None = None) -> Iterator[ScriptedApi]:
    """The API on 127.0.0.1 (a free port) for as long as the block runs."""
    served = api or ScriptedApi()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            request = json.loads(raw) if raw else {}
            if self.path.split("?")[0] != "/v1/messages":
                status, body = 404, {"type": "error", "error": {"type": "not_found_error"}}
            else:
                refused = served.refusal(request)
                status, body = (
                    (
                        400,
                        {
                            "type": "error",
                            "error": {"type": "invalid_request_error", "message": refused},
                        },
                    )
                    if refused
                    else (200, served.answer(request))
                )
            streamed = status == 200 and request.get("stream")  # the adapter streams (SSE)
            data = sse(body) if streamed else json.dumps(body).encode()
            self.send_response(status)
            self.send_header(
                "content-type", "text/event-stream" if streamed else "application/json"
            )
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()

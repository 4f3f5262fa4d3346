"""A loopback stand-in for the Anthropic Messages API that the real SDK talks to, as strict as
the documented API is for the configured default model (claude-sonnet-5-5).

Scripted answers are served in order (reply / fail / hang); before one is served, each request
is checked against the documented rules, and a request the real API would refuse gets the
real API's error instead (the scripted answer stays queued). The rules, each with its source:

- an unknown model → 404 not_found_error
  (https://platform.claude.com/docs/en/api/errors: "not_found_error: The requested resource
  was not found"; the API answers an unknown `model` so);
- forced tool choice (`tool_choice` `any` or `tool`) → 400 invalid_request_error: "Forced tool
  use returns an error" on Claude Sonnet 5.5
  (https://platform.claude.com/docs/en/models/sonnet-5-5/whats-new-sonnet-5-5); with thinking on
  it is refused on every thinking model too ("Tool use with thinking only supports
  tool_choice auto or none",
  https://platform.claude.com/docs/en/build-with-claude/extended-thinking);
- thinking `disabled` or with a budget, or sampling parameters → 400 on Claude Sonnet 5.5
  (https://platform.claude.com/docs/en/models/sonnet-5-5/migration-guide: "five settings that
  return a 400 error: thinking budgets, sampling parameters, assistant prefill, forced tool
  choice, and thinking: {type: disabled}");
- a thinking block is bound to the `system`, `tools` and every message before it: a block
  sent back after any of those changed → 400 "Invalid `signature` in `thinking` block. The
  block is bound to a different conversation…", unless the request sets
  `thinking.block_binding.prefix_mismatch_behavior` to "drop_block" with the beta header, when
  that block and every later one are dropped
  (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks,
  …/fix-bound-to-a-different-conversation). A block from another model is dropped without an
  error (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking). Assumed:
  moving a `cache_control` breakpoint is not a change (the prefix check compares content, as
  prompt caching does; the docs' list of changes names content, not breakpoints);
- more than 4 `cache_control` breakpoints → 400
  (https://platform.claude.com/docs/en/build-with-claude/prompt-caching: "up to 4 cache
  breakpoints");
- every `tool_use` needs its `tool_result` at the start of the next user message, and text
  blocks may not be empty → 400
  (https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use);
- `stream: true` is answered as server-sent events (message_start, content_block_start /
  _delta / _stop, message_delta, message_stop), each block's deltas as the SDK's
  `messages.stream` accumulates them (https://platform.claude.com/docs/en/build-with-claude/streaming);
  a slow reply sends its events `gap` seconds apart;
- 429 / 529 carry `retry-after` (https://platform.claude.com/docs/en/api/rate-limits,
  https://platform.claude.com/docs/en/api/errors);
- usage as the API reports it: `cache_creation_input_tokens` split in `cache_creation`
  (`ephemeral_5m_input_tokens`, `ephemeral_1h_input_tokens`), `cache_read_input_tokens`, and
  thinking counted inside `output_tokens` (`output_tokens_details.thinking_tokens`)
  (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
  https://platform.claude.com/docs/en/api/messages).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bot.core.message_events import reply_events
from tests.loopback import QuietHandler, loopback

DEFAULT_MODEL = "claude-sonnet-5-5"
# Models the fake knows (https://platform.claude.com/docs/en/about-claude/models/overview).
MODELS = {
    "claude-sonnet-5-5",
    "claude-sonnet-5",
    "claude-opus-5-5",
    "claude-opus-5",
    "claude-fable-5-1",
    "claude-haiku-4-5",
    "claude-sonnet-4-6",
    "claude-opus-4-8",
    "claude-opus-4-7",
}
BINDING_BETA = "thinking-binding-controls-2026-08-01"
# A reply's usage unless the test says otherwise; `cache_write` goes to the cache duration the
# request's breakpoints asked for (`cache_5m` / `cache_1h` given explicitly split it as given).
USAGE = {"input_tokens": 10, "output_tokens": 5, "cache_read": 0, "cache_write": 8}


@dataclass
class Scripted:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    gap: float = 0.0  # seconds between streamed events (a slow reply)
    usage: dict[str, int] = field(default_factory=dict)  # the counts, split when served


@dataclass
class FakeAnthropic:
    """Answers POST /v1/messages from a queue and records every request."""

    url: str = ""
    answers: list[Scripted] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)  # (status, message) the rules gave
    released: threading.Event = field(default_factory=threading.Event)
    secret: bytes = b"fake-anthropic"
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(
        self,
        *content: dict[str, Any],
        stop_reason: str = "end_turn",
        usage: dict[str, int] | None = None,
        gap: float = 0.0,
    ) -> None:
        """The next answer: these blocks (thinking blocks are signed by the fake, bound to the
        request that gets them). `usage`: overrides of USAGE's counts; `gap`: a slow reply."""
        counts = {**USAGE, **(usage or {})}
        thinking = sum(
            len(str(b.get("thinking", "")).split()) for b in content if b["type"] == "thinking"
        )
        counts["thinking"] = thinking
        body = {
            "id": f"msg_{len(self.answers)}",
            "type": "message",
            "role": "assistant",
            "model": DEFAULT_MODEL,
            "content": [dict(b) for b in content],
            "stop_reason": stop_reason,
            "stop_sequence": None,
        }
        self.answers.append(Scripted(200, body, gap=gap, usage=counts))

    def hang(self) -> None:
        """The next request gets no answer until `released` is set (a model call in flight)."""
        self.answers.append(Scripted(0, {}))

    def fail(
        self, status: int, error_type: str, message: str, *, retry_after: int | None = None
    ) -> None:
        """The next answer: an error. 429 and 529 say when to retry (`retry-after`, seconds);
        without one the fake asks for 5 ms (retry-after-ms), so the SDK's backoff stays short."""
        body = {"type": "error", "error": {"type": error_type, "message": message}}
        headers = (
            {"retry-after": str(retry_after)}
            if retry_after is not None
            else {"retry-after-ms": "5"}
        )
        self.answers.append(Scripted(status, body, headers))

    # -- the documented rules ---------------------------------------------------------

    def check(
        self, request: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, str, str] | None:
        """(status, error type, message) the real API answers this request with, or None."""
        model = request.get("model")
        if model not in MODELS:
            return 404, "not_found_error", f"model: {model}"
        thinking = request.get("thinking") or {"type": "adaptive"}
        if thinking.get("type") not in ("adaptive", "between_tools") or "budget_tokens" in thinking:
            return 400, "invalid_request_error", f"thinking: {thinking} is not supported on {model}"
        for knob in ("temperature", "top_p", "top_k"):
            if knob in request:
                return 400, "invalid_request_error", f"{knob}: not supported on {model}"
        choice = (request.get("tool_choice") or {}).get("type")
        if choice in ("any", "tool"):
            return (
                400,
                "invalid_request_error",
                f"tool_choice: forced tool use ({choice!r}) is not supported on {model}; "
                "use tool_choice auto",
            )
        breakpoints = json.dumps(request).count('"cache_control"')
        if breakpoints > 4:
            return (
                400,
                "invalid_request_error",
                f"a maximum of 4 blocks with cache_control may be provided. Found {breakpoints}.",
            )
        problem = _shape_problem(request.get("messages") or [])
        if problem:
            return 400, "invalid_request_error", problem
        return self._binding_problem(request, headers)

    def _binding_problem(
        self, request: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, str, str] | None:
        drop = (request.get("thinking") or {}).get("block_binding", {}).get(
            "prefix_mismatch_behavior"
        ) == "drop_block"
        if drop and BINDING_BETA not in headers.get("anthropic-beta", ""):
            return (
                400,
                "invalid_request_error",
                f"thinking.block_binding needs the beta header {BINDING_BETA}",
            )
        invalid = False
        for i, message in enumerate(request.get("messages") or []):
            content = message.get("content")
            if message.get("role") != "assistant" or not isinstance(content, list):
                continue
            kept = []
            for j, block in enumerate(content):
                if block.get("type") not in ("thinking", "redacted_thinking"):
                    kept.append(block)
                    continue
                signed_model, _, digest = str(block.get("signature", "")).partition(":")
                if signed_model in MODELS and signed_model != request.get("model"):
                    continue  # another model's thinking: dropped without an error
                if invalid or digest != self.sign(request, i, j):
                    if not drop:
                        return (
                            400,
                            "invalid_request_error",
                            f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block. "
                            "The block is bound to a different conversation. Remove the block, or "
                            'set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".',
                        )
                    invalid = True  # this block and every later one are dropped
                    continue
                kept.append(block)
            message["content"] = kept
        return None

    def sign(self, request: dict[str, Any], i: int, j: int) -> str:
        """The signature a thinking block at messages[i].content[j] carries: bound to the
        system, the tools and everything before it (cache_control aside)."""
        messages = request.get("messages") or []
        before = (
            [*messages[:i], {**messages[i], "content": _blocks(messages[i])[:j]}]
            if i < len(messages)
            else messages
        )
        prefix = {
            "system": _system(request.get("system")),
            "tools": _plain(request.get("tools") or []),
            "messages": [{"role": m["role"], "content": _plain(_blocks(m))} for m in before],
        }
        raw = json.dumps(prefix, sort_keys=True).encode()
        return hashlib.sha256(self.secret + raw).hexdigest()[:32]

    def served(self, request: dict[str, Any], answer: Scripted) -> dict[str, Any]:
        """The reply as served to this request: thinking signed, usage as the API reports it."""
        c = answer.usage
        hour = '"ttl": "1h"' in json.dumps(request)  # the breakpoints asked for the 1-hour cache
        written_1h = c.get("cache_1h", 0 if "cache_5m" in c else c["cache_write"] * hour)
        written_5m = c.get("cache_5m", 0 if "cache_1h" in c else c["cache_write"] * (not hour))
        usage: dict[str, Any] = {
            "input_tokens": c["input_tokens"],
            "output_tokens": c["output_tokens"] + c["thinking"],  # thinking is output
            "cache_read_input_tokens": c["cache_read"],
            "cache_creation_input_tokens": written_5m + written_1h,
            "cache_creation": {
                "ephemeral_5m_input_tokens": written_5m,
                "ephemeral_1h_input_tokens": written_1h,
            },
        }
        if c["thinking"]:
            usage["output_tokens_details"] = {"thinking_tokens": c["thinking"]}
        return {**self.signed(request, answer.body), "usage": usage}

    def signed(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        """The reply with each thinking block signed for this request's prefix."""
        model = str(request.get("model"))
        reply = {"role": "assistant", "content": body["content"]}
        extended = {**request, "messages": [*(request.get("messages") or []), reply]}
        at = len(extended["messages"]) - 1
        content = []
        for j, block in enumerate(body["content"]):
            if block["type"] == "thinking":
                block = {**block, "signature": f"{model}:{self.sign(extended, at, j)}"}
            content.append(block)
            reply["content"] = content + body["content"][j + 1 :]
        return {**body, "model": model, "content": content}


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _plain(value: Any) -> Any:
    """`value` without its cache_control breakpoints."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _system(system: Any) -> Any:
    return _plain([{"type": "text", "text": system}] if isinstance(system, str) else system or [])


def _shape_problem(messages: list[dict[str, Any]]) -> str | None:
    """Why these messages break the Messages API's shape rules (tool results, empty text)."""
    for i, message in enumerate(messages):
        blocks = _blocks(message)
        for j, block in enumerate(blocks):
            if block.get("type") == "text" and not str(block.get("text", "")).strip():
                return f"messages.{i}.content.{j}: text content blocks must be non-empty"
        if message.get("role") != "assistant":
            continue
        ids = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if not ids:
            continue
        following = _blocks(messages[i + 1]) if i + 1 < len(messages) else []
        results = []
        for block in following:
            if block.get("type") != "tool_result":
                break  # tool results come first in the user message
            results.append(block.get("tool_use_id"))
        if i + 1 < len(messages) and set(ids) - set(results):
            return (
                f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(sorted(set(ids) - set(results)))}. Each "
                "`tool_use` block must have a corresponding `tool_result` block in the next message."
            )
    return None


@contextmanager
def fake_anthropic() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            request = json.loads(self.rfile.read(length))
            headers = {k.lower(): v for k, v in self.headers.items()}
            with fake.lock:
                fake.requests.append(json.loads(json.dumps(request)))
                fake.headers.append(headers)
                refusal = fake.check(request, headers) if self.path == "/v1/messages" else None
                if refusal is not None:
                    fake.refused.append((refusal[0], refusal[2]))
                    answer = Scripted(
                        refusal[0],
                        {"type": "error", "error": {"type": refusal[1], "message": refusal[2]}},
                        {"x-should-retry": "false"},
                    )
                elif self.path != "/v1/messages" or not fake.answers:
                    answer = Scripted(
                        500,
                        {
                            "type": "error",
                            "error": {"type": "api_error", "message": f"unscripted {self.path}"},
                        },
                        {"x-should-retry": "false"},
                    )
                else:
                    answer = fake.answers.pop(0)
            if answer.status == 0:  # hang(): answer only once released, and then with a failure
                fake.released.wait(120)
                answer = Scripted(500, {"type": "error", "error": {}})
            if answer.status != 200:
                self.send(
                    answer.status,
                    json.dumps(answer.body).encode(),
                    {
                        "content-type": "application/json",
                        "request-id": "req_fake",
                        **answer.headers,
                    },
                )
                return
            body = fake.served(request, answer)
            if not request.get("stream"):
                time.sleep(answer.gap * len(list(reply_events(body))))  # slow, then all at once
                self.send(200, json.dumps(body).encode(), {"content-type": "application/json"})
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            for name, event in reply_events(body):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                if answer.gap:
                    time.sleep(answer.gap)  # the API writes the reply as it thinks

    with loopback(Handler) as url:
        fake.url = url
        yield fake

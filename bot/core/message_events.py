"""A Messages API reply as the streaming API sends it: the server-sent events the SDK's
`messages.stream` accumulates (message_start, content_block_start / _delta / _stop with each
block's text, thinking and signature, or tool input JSON in parts, message_delta with the stop
reason and the final usage, message_stop), per
https://platform.claude.com/docs/en/build-with-claude/streaming. For the loopback APIs that
stand in for Anthropic's: the tests' strict fake and the eval's scripted API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def reply_events(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The reply as the streaming API sends it."""
    usage = body["usage"]
    start = {**body, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        if kind == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": part} for part in _halves(block["text"])]
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _halves(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "tool_use":
            opening = {
                "type": "tool_use",
                "id": block.get("id"),
                "name": block.get("name"),
                "input": {},
            }
            raw = json.dumps(block.get("input", {}))
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _halves(raw)]
        else:
            opening, deltas = block, []
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
        for delta in deltas:
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        yield "ping", {"type": "ping"}
    final = {k: usage[k] for k in ("output_tokens",)}
    for k in (
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens_details",
    ):
        if k in usage:
            final[k] = usage[k]
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
            "usage": final,
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [p for p in (text[:middle], text[middle:]) if p] or [""]


def sse(body: dict[str, Any]) -> bytes:
    """The whole reply as one server-sent-events body."""
    return b"".join(
        f"event: {name}\ndata: {json.dumps(event)}\n\n".encode()
        for name, event in reply_events(body)
    )

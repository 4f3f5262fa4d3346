"""A model request built incrementally (issue 33): each message of a turn's transcript is
JSON-encoded once, when it joins the transcript, and the request body of every later step is
those encodings joined — not the whole transcript deep-copied and encoded again per step (at
990 steps that was 91 % of the bot's time per step, on a 1.6 MB request).

JSON as the Anthropic SDK writes it (UTF-8, compact separators, no NaN), so the body sent is
the one the SDK would have sent for the same request."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> bytes:
    """`value` as the request's JSON."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class SentMessages(list[dict[str, Any]]):
    """The messages of a request (a list, as every Model takes them) with each one's JSON,
    made once: `encoded[i]` is `dumps(self[i])` while `self[i]` is the message it was made of."""

    def __init__(self, messages: list[dict[str, Any]], encoded: list[bytes]) -> None:
        super().__init__(messages)
        self.encoded = encoded


def request_body(head: bytes, messages: list[dict[str, Any]], kept: list[dict[str, Any]]) -> bytes:
    """The request's JSON: `head` (everything but the messages, encoded: a run sends the same
    system prompt and tools at every step) and `messages`, each one's
    encoding taken from `kept` (the transcript as the caller gave it, SentMessages) where it
    is the very message that was encoded (a copy marked with a cache breakpoint is encoded
    afresh)."""
    sent = kept if isinstance(kept, SentMessages) else None
    parts = []
    for i, message in enumerate(messages):
        if sent is not None and i < len(sent) and sent[i] is message:
            parts.append(sent.encoded[i])
        else:
            parts.append(dumps(message))
    if head == b"{}":
        return b'{"messages":[' + b",".join(parts) + b"]}"
    return head[:-1] + b',"messages":[' + b",".join(parts) + b"]}"

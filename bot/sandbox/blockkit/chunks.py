"""A stream's chunks checked the way Slack checks them (chat.startStream / appendStream /
stopStream)."""

from __future__ import annotations

from typing import Any

from bot.sandbox.blockkit.base import Checker
from bot.sandbox.blockkit.blocks import problems
from bot.sandbox.blockkit.limits import (
    CHUNK_TYPES,
    MAX_ID,
    MAX_SECTION_TEXT,
    MAX_STREAM_MARKDOWN,
    TASK_STATUSES,
)


def chunk_problems(chunks: Any) -> list[str]:
    """What Slack would refuse in a stream's chunks (chat.startStream / appendStream / stopStream):
    markdown_text ≤ 12,000 characters, task_update with id, title and a known status,
    plan_update with a title, blocks that pass the Block Kit checks."""
    check = Checker()
    for i, chunk in enumerate(check.items(chunks, 100, "/chunks", least=0)):
        p = f"/chunks/{i}"
        if not isinstance(chunk, dict) or chunk.get("type") not in CHUNK_TYPES:
            check.bad(f"{p}/type", f"must be one of {', '.join(sorted(CHUNK_TYPES))}")
            continue
        kind = chunk["type"]
        if kind == "markdown_text":
            check.length(chunk.get("text"), MAX_STREAM_MARKDOWN, f"{p}/text")
        elif kind == "plan_update":
            check.length(chunk.get("title"), 256, f"{p}/title")
        elif kind == "task_update":
            check.length(chunk.get("id"), MAX_ID, f"{p}/id")
            check.length(chunk.get("title"), 256, f"{p}/title")
            if chunk.get("status") not in TASK_STATUSES:
                check.bad(f"{p}/status", f"must be one of {', '.join(sorted(TASK_STATUSES))}")
            for key in ("details", "output"):
                check.length(chunk.get(key), MAX_SECTION_TEXT, f"{p}/{key}", required=False)
        else:
            found = problems(chunk.get("blocks"))
            check.found += [
                f.replace("json-pointer:/blocks", f"json-pointer:{p}/blocks") for f in found
            ]
    return check.found

"""Block Kit checked the way Slack checks it: a message that breaks a limit is refused.

Each problem names the bad spot with a JSON pointer, in the words Slack's own
`invalid_blocks` answers use ("must be less than 3001 characters
[json-pointer:/blocks/2/text/text]"), so a developer sees which block to fix.
The limits are the ones in SLACK.md. By concern: limits.py (the numbers and types), base.py
(the checker's words), elements.py, blocks.py, chunks.py (a stream's chunks); here the
surfaces: a message's blocks and a Home tab's view.
"""

from __future__ import annotations

import json
from typing import Any

from bot.sandbox.blockkit.base import Checker
from bot.sandbox.blockkit.blocks import problems
from bot.sandbox.blockkit.chunks import chunk_problems
from bot.sandbox.blockkit.limits import (
    MAX_ID,
    MAX_LOADING_MESSAGES,
    MAX_MESSAGE_BLOCKS_CHARS,
    MAX_VIEW_BLOCKS,
    MAX_VIEW_TITLE,
    TASK_DISPLAY_MODES,
)

__all__ = [
    "MAX_LOADING_MESSAGES",
    "TASK_DISPLAY_MODES",
    "BlocksTooLong",
    "chunk_problems",
    "message_problems",
    "problems",
    "view_problems",
]


class BlocksTooLong(ValueError):
    """The blocks of one message are larger than Slack accepts (`msg_blocks_too_long`)."""


def view_problems(view: Any, *, kind: str = "home") -> list[str]:
    """What Slack would refuse in a view: a Home tab (`views.publish`) or a modal
    (`views.open`) of at most 100 blocks. A modal's title, close and submit are plain_text of
    at most 24 characters, its title required, a submit required when it has input blocks;
    callback_id ≤ 255, private_metadata ≤ 3000 characters
    (docs.slack.dev/reference/views/modal-views, "Fields")."""
    if not isinstance(view, dict):
        return ["must provide an object [json-pointer:/view]"]
    found = []
    if view.get("type") != kind:
        found.append(f"must be {kind} [json-pointer:/view/type]")
    if kind == "modal":
        check = Checker()
        check.text(view.get("title"), MAX_VIEW_TITLE, "/view/title", plain_only=True)
        for key in ("close", "submit"):
            check.text(
                view.get(key), MAX_VIEW_TITLE, f"/view/{key}", plain_only=True, required=False
            )
        check.length(view.get("callback_id"), MAX_ID, "/view/callback_id", required=False)
        check.length(view.get("private_metadata"), 3000, "/view/private_metadata", required=False)
        given = view.get("blocks")
        blocks: list[Any] = given if isinstance(given, list) else []
        if view.get("submit") is None and any(
            isinstance(b, dict) and b.get("type") == "input" for b in blocks
        ):
            check.bad("/view/submit", "must provide submit when the view has input blocks")
        found += check.found
    return found + problems(view.get("blocks"), limit=MAX_VIEW_BLOCKS)


def message_problems(blocks: Any) -> tuple[str, list[str]] | None:
    """(Slack error code, details) for blocks Slack would refuse, or None."""
    found = problems(blocks)
    if found:
        return "invalid_blocks", found
    if len(json.dumps(blocks, ensure_ascii=False)) > MAX_MESSAGE_BLOCKS_CHARS:
        return "msg_blocks_too_long", [
            f"the blocks are longer than {MAX_MESSAGE_BLOCKS_CHARS} characters [json-pointer:/blocks]"
        ]
    return None

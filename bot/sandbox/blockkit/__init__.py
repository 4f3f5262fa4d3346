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

from bot.sandbox.blockkit.blocks import problems
from bot.sandbox.blockkit.chunks import chunk_problems
from bot.sandbox.blockkit.limits import (
    MAX_LOADING_MESSAGES,
    MAX_MESSAGE_BLOCKS_CHARS,
    MAX_VIEW_BLOCKS,
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


def view_problems(view: Any) -> list[str]:
    """What Slack would refuse in a view (`views.publish`): a Home tab of at most 100 blocks."""
    if not isinstance(view, dict):
        return ["must provide an object [json-pointer:/view]"]
    found = []
    if view.get("type") != "home":
        found.append("must be home [json-pointer:/view/type]")
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

"""The checker's own words: each problem named with a JSON pointer, in the words of Slack's
`invalid_blocks` answers ("must be less than 3001 characters [json-pointer:/blocks/2/text/text]"),
and the generic checks every block and element uses (strings, text objects, arrays, ids)."""

from __future__ import annotations

from typing import Any

from bot.sandbox.blockkit.limits import (
    MAX_ID,
)


class Checker:
    def __init__(self) -> None:
        self.found: list[str] = []
        self.block_ids: set[str] = set()
        self.tables = 0

    def bad(self, pointer: str, message: str) -> None:
        self.found.append(f"{message} [json-pointer:{pointer}]")

    # -- generic -----------------------------------------------------------

    def length(self, value: Any, limit: int, pointer: str, *, required: bool = True) -> None:
        if value is None:
            if required:
                self.bad(pointer, "must provide a string")
            return
        if not isinstance(value, str):
            self.bad(pointer, "must be a string")
        elif required and not value:
            self.bad(pointer, "must be more than 0 characters")
        elif len(value) > limit:
            self.bad(pointer, f"must be less than {limit + 1} characters")

    def text(
        self,
        obj: Any,
        limit: int,
        pointer: str,
        *,
        plain_only: bool = False,
        required: bool = True,
    ) -> None:
        if obj is None and not required:
            return
        if not isinstance(obj, dict):
            self.bad(pointer, "must provide an object")
            return
        kind = obj.get("type")
        allowed = ("plain_text",) if plain_only else ("plain_text", "mrkdwn")
        if kind not in allowed:
            self.bad(f"{pointer}/type", f"must be one of {', '.join(allowed)}")
            return
        self.length(obj.get("text"), limit, f"{pointer}/text")

    def items(self, value: Any, limit: int, pointer: str, *, least: int = 1) -> list[Any]:
        if not isinstance(value, list):
            self.bad(pointer, "must provide an array")
            return []
        if len(value) > limit:
            self.bad(pointer, f"must be less than {limit + 1} items")
        elif len(value) < least:
            self.bad(pointer, f"must provide at least {least} items")
        return value

    def ident(self, value: Any, pointer: str) -> None:
        if value is not None:
            self.length(value, MAX_ID, pointer)

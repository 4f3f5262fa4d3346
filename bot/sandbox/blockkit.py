"""Block Kit checked the way Slack checks it: a message that breaks a limit is refused.

Each problem names the bad spot with a JSON pointer, in the words Slack's own
`invalid_blocks` answers use ("must be less than 3001 characters
[json-pointer:/blocks/2/text/text]"), so a developer sees which block to fix.
The limits are the ones in SLACK.md.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_FIELDS, MAX_FIELD_TEXT = 10, 2000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS_ELEMENTS = 25
MAX_LABEL, MAX_HINT = 2000, 2000
MAX_ID = 255
MAX_CHOICE_OPTIONS = 10
MAX_SELECT_OPTIONS = 100
MAX_OPTION_TEXT, MAX_OPTION_DESCRIPTION, MAX_OPTION_VALUE = 75, 75, 150
MAX_BUTTON_TEXT, MAX_BUTTON_VALUE = 75, 2000
MAX_CONFIRM_TITLE, MAX_CONFIRM_TEXT, MAX_CONFIRM_BUTTON = 100, 300, 30
MAX_PLACEHOLDER = 150
MAX_INPUT_LENGTH = 3000
MAX_MESSAGE_BLOCKS_CHARS = 13_000  # Slack answers msg_blocks_too_long around here
MAX_VIEW_BLOCKS = 100  # a Home tab or a modal
MAX_TABLE_ROWS, MAX_TABLE_CELLS = 100, 20
# A table's text across all its cells (docs.slack.dev/reference/block-kit/blocks/table-block,
# "Usage info"; the same cap on data_table: .../blocks/data-table-block).
MAX_TABLE_CHARS = 10_000
TABLE_ALIGN = {"left", "center", "right"}
MAX_LOADING_MESSAGES = 10
MAX_STREAM_MARKDOWN = 12_000
TASK_STATUSES = {"pending", "in_progress", "complete", "error"}
TASK_DISPLAY_MODES = {"timeline", "plan"}
CHUNK_TYPES = {"markdown_text", "task_update", "plan_update", "blocks"}

BLOCK_TYPES = {
    "section",
    "header",
    "context",
    "divider",
    "actions",
    "input",
    "rich_text",
    "image",
    "table",
}
CHOICE_ELEMENTS = {"radio_buttons", "checkboxes"}
STATIC_SELECTS = {"static_select", "multi_static_select"}
EXTERNAL_SELECTS = {"external_select", "multi_external_select"}
INPUT_ELEMENTS = {
    *CHOICE_ELEMENTS,
    *STATIC_SELECTS,
    *EXTERNAL_SELECTS,
    "plain_text_input",
    "users_select",
    "conversations_select",
    "datepicker",
    "number_input",
}
ACTION_ELEMENTS = {"button", "overflow", *INPUT_ELEMENTS}
RICH_TEXT_PARTS = {
    "rich_text_section",
    "rich_text_list",
    "rich_text_preformatted",
    "rich_text_quote",
}


class BlocksTooLong(ValueError):
    """The blocks of one message are larger than Slack accepts (`msg_blocks_too_long`)."""


def problems(blocks: Any, *, limit: int = MAX_BLOCKS) -> list[str]:
    """Every limit `blocks` breaks, as Slack words it; empty when Slack would accept them."""
    check = _Checker()
    check.blocks(blocks, limit)
    if check.tables > 1:
        check.bad("/blocks", "only one table block is allowed per message")
    return check.found


def view_problems(view: Any) -> list[str]:
    """What Slack would refuse in a view (`views.publish`): a Home tab of at most 100 blocks."""
    if not isinstance(view, dict):
        return ["must provide an object [json-pointer:/view]"]
    found = []
    if view.get("type") != "home":
        found.append("must be home [json-pointer:/view/type]")
    return found + problems(view.get("blocks"), limit=MAX_VIEW_BLOCKS)


def chunk_problems(chunks: Any) -> list[str]:
    """What Slack would refuse in a stream's chunks (chat.startStream / appendStream / stopStream):
    markdown_text ≤ 12,000 characters, task_update with id, title and a known status,
    plan_update with a title, blocks that pass the Block Kit checks."""
    check = _Checker()
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


class _Checker:
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

    # -- blocks ------------------------------------------------------------

    def blocks(self, blocks: Any, limit: int = MAX_BLOCKS) -> None:
        for i, block in enumerate(self.items(blocks, limit, "/blocks", least=0)):
            self.block(block, f"/blocks/{i}")

    def block(self, block: Any, p: str) -> None:
        if not isinstance(block, dict):
            self.bad(p, "must provide an object")
            return
        kind = block.get("type")
        if kind not in BLOCK_TYPES:
            self.bad(f"{p}/type", f"unsupported block type {kind!r}")
            return
        bid = block.get("block_id")
        self.ident(bid, f"{p}/block_id")
        if isinstance(bid, str):
            if bid in self.block_ids:
                self.bad(f"{p}/block_id", f"duplicate block_id {bid!r}")
            self.block_ids.add(bid)
        getattr(self, f"block_{kind}")(block, p)

    def block_section(self, b: dict[str, Any], p: str) -> None:
        if b.get("text") is None and b.get("fields") is None:
            self.bad(p, "must provide text or fields")
        self.text(b.get("text"), MAX_SECTION_TEXT, f"{p}/text", required=False)
        if b.get("fields") is not None:
            for i, field in enumerate(self.items(b["fields"], MAX_FIELDS, f"{p}/fields")):
                self.text(field, MAX_FIELD_TEXT, f"{p}/fields/{i}")
        if b.get("accessory") is not None:
            self.element(b["accessory"], f"{p}/accessory", ACTION_ELEMENTS | {"image"})

    def block_header(self, b: dict[str, Any], p: str) -> None:
        self.text(b.get("text"), MAX_HEADER_TEXT, f"{p}/text", plain_only=True)

    def block_context(self, b: dict[str, Any], p: str) -> None:
        for i, el in enumerate(
            self.items(b.get("elements"), MAX_CONTEXT_ELEMENTS, f"{p}/elements")
        ):
            if isinstance(el, dict) and el.get("type") == "image":
                self.length(el.get("image_url"), 3000, f"{p}/elements/{i}/image_url")
            else:
                self.text(el, MAX_SECTION_TEXT, f"{p}/elements/{i}")

    def block_divider(self, b: dict[str, Any], p: str) -> None:
        pass

    def block_image(self, b: dict[str, Any], p: str) -> None:
        self.length(b.get("image_url"), 3000, f"{p}/image_url")
        self.length(b.get("alt_text"), 2000, f"{p}/alt_text")

    def block_actions(self, b: dict[str, Any], p: str) -> None:
        for i, el in enumerate(
            self.items(b.get("elements"), MAX_ACTIONS_ELEMENTS, f"{p}/elements")
        ):
            self.element(el, f"{p}/elements/{i}", ACTION_ELEMENTS)

    def block_input(self, b: dict[str, Any], p: str) -> None:
        self.text(b.get("label"), MAX_LABEL, f"{p}/label", plain_only=True)
        self.text(b.get("hint"), MAX_HINT, f"{p}/hint", plain_only=True, required=False)
        if b.get("element") is None:
            self.bad(f"{p}/element", "must provide an object")
            return
        self.element(b["element"], f"{p}/element", INPUT_ELEMENTS)

    def block_rich_text(self, b: dict[str, Any], p: str) -> None:
        for i, part in enumerate(self.items(b.get("elements"), 100, f"{p}/elements")):
            if not isinstance(part, dict) or part.get("type") not in RICH_TEXT_PARTS:
                self.bad(f"{p}/elements/{i}/type", "unsupported rich text element")

    def block_table(self, b: dict[str, Any], p: str) -> None:
        """Slack's table: ≤ 100 rows of ≤ 20 cells, each raw_text or rich_text, ≤ 10,000
        characters across all cells; one per message."""
        self.tables += 1
        rows = self.items(b.get("rows"), MAX_TABLE_ROWS, f"{p}/rows")
        chars = sum(_cell_chars(cell) for row in rows if isinstance(row, list) for cell in row)
        if chars > MAX_TABLE_CHARS:
            self.bad(f"{p}/rows", f"must be less than {MAX_TABLE_CHARS + 1} characters in all")
        for r, row in enumerate(rows):
            cells = self.items(row, MAX_TABLE_CELLS, f"{p}/rows/{r}")
            for c, cell in enumerate(cells):
                q = f"{p}/rows/{r}/{c}"
                kind = cell.get("type") if isinstance(cell, dict) else None
                if kind == "raw_text":
                    self.length(cell.get("text"), MAX_SECTION_TEXT, f"{q}/text", required=False)
                elif kind == "rich_text":
                    self.block_rich_text(cell, q)
                else:
                    self.bad(f"{q}/type", "must be one of raw_text, rich_text")
        settings = b.get("column_settings")
        if settings is not None:
            for i, setting in enumerate(
                self.items(settings, MAX_TABLE_CELLS, f"{p}/column_settings", least=0)
            ):
                if setting is None:
                    continue  # a column left at its defaults
                if not isinstance(setting, dict):
                    self.bad(f"{p}/column_settings/{i}", "must provide an object")
                    continue
                if setting.get("align") not in (None, *TABLE_ALIGN):
                    self.bad(f"{p}/column_settings/{i}/align", "must be one of left, center, right")
                if not isinstance(setting.get("is_wrapped", False), bool):
                    self.bad(f"{p}/column_settings/{i}/is_wrapped", "must be a boolean")

    # -- elements ----------------------------------------------------------

    def element(self, el: Any, p: str, allowed: set[str]) -> None:
        if not isinstance(el, dict):
            self.bad(p, "must provide an object")
            return
        kind = el.get("type")
        if kind not in allowed:
            self.bad(f"{p}/type", f"element type {kind!r} is not allowed here")
            return
        self.ident(el.get("action_id"), f"{p}/action_id")
        if el.get("placeholder") is not None:
            self.text(el["placeholder"], MAX_PLACEHOLDER, f"{p}/placeholder", plain_only=True)
        if el.get("confirm") is not None:
            self.confirm(el["confirm"], f"{p}/confirm")
        if kind == "button":
            self.text(el.get("text"), MAX_BUTTON_TEXT, f"{p}/text", plain_only=True)
            if el.get("value") is not None:
                self.length(el["value"], MAX_BUTTON_VALUE, f"{p}/value")
            if el.get("style") not in (None, "primary", "danger"):
                self.bad(f"{p}/style", "must be one of primary, danger")
        elif kind in CHOICE_ELEMENTS:
            self.options(el.get("options"), MAX_CHOICE_OPTIONS, f"{p}/options")
        elif kind in STATIC_SELECTS:
            if el.get("option_groups") is not None:
                groups = self.items(el["option_groups"], MAX_SELECT_OPTIONS, f"{p}/option_groups")
                for i, group in enumerate(groups):
                    self.options(
                        (group or {}).get("options"),
                        MAX_SELECT_OPTIONS,
                        f"{p}/option_groups/{i}/options",
                    )
            else:
                self.options(el.get("options"), MAX_SELECT_OPTIONS, f"{p}/options")
        elif kind == "plain_text_input":
            limit = el.get("max_length")
            if limit is not None and (
                not isinstance(limit, int) or not 1 <= limit <= MAX_INPUT_LENGTH
            ):
                self.bad(f"{p}/max_length", f"must be between 1 and {MAX_INPUT_LENGTH}")
        elif kind == "users_select":
            user = el.get("initial_user")
            if user is not None and not (isinstance(user, str) and USER_ID.match(user)):
                self.bad(f"{p}/initial_user", "must be a valid user ID")
        elif kind == "datepicker":
            day = el.get("initial_date")
            if day is not None and not _iso_date(day):
                self.bad(f"{p}/initial_date", "must be a valid date in the format YYYY-MM-DD")
        if kind in CHOICE_ELEMENTS or kind in STATIC_SELECTS:
            self.initial(el, p)

    def initial(self, el: dict[str, Any], p: str) -> None:
        """initial_option(s) must be exactly one of the element's options."""
        offered = [o for o in _options_of(el) if isinstance(o, dict)]
        given = (
            [el["initial_option"]]
            if el.get("initial_option") is not None
            else list(el.get("initial_options") or [])
        )
        name = "initial_option" if el.get("initial_option") is not None else "initial_options"
        if el.get("initial_option") is not None and el["type"] in (
            "checkboxes",
            "multi_static_select",
        ):
            self.bad(f"{p}/initial_option", "use initial_options for a multi-select element")
        for i, option in enumerate(given):
            if option not in offered:
                where = f"{p}/{name}" + ("" if name == "initial_option" else f"/{i}")
                self.bad(where, "must match one of the provided options")

    def options(self, options: Any, limit: int, p: str) -> None:
        for i, opt in enumerate(self.items(options, limit, p)):
            q = f"{p}/{i}"
            if not isinstance(opt, dict):
                self.bad(q, "must provide an object")
                continue
            self.text(opt.get("text"), MAX_OPTION_TEXT, f"{q}/text")
            self.length(opt.get("value"), MAX_OPTION_VALUE, f"{q}/value")
            self.text(
                opt.get("description"),
                MAX_OPTION_DESCRIPTION,
                f"{q}/description",
                plain_only=True,
                required=False,
            )

    def confirm(self, c: Any, p: str) -> None:
        if not isinstance(c, dict):
            self.bad(p, "must provide an object")
            return
        self.text(c.get("title"), MAX_CONFIRM_TITLE, f"{p}/title", plain_only=True)
        self.text(c.get("text"), MAX_CONFIRM_TEXT, f"{p}/text")
        self.text(c.get("confirm"), MAX_CONFIRM_BUTTON, f"{p}/confirm", plain_only=True)
        self.text(c.get("deny"), MAX_CONFIRM_BUTTON, f"{p}/deny", plain_only=True)


USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")


def _iso_date(value: Any) -> bool:
    if not (isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _options_of(el: dict[str, Any]) -> list[Any]:
    options = list(el.get("options") or [])
    for group in el.get("option_groups") or []:
        if isinstance(group, dict):
            options.extend(group.get("options") or [])
    return options


def _cell_chars(cell: Any) -> int:
    """The characters a table cell shows: its text, or every text inside its rich text."""
    if isinstance(cell, dict):
        text = cell.get("text")
        own = len(text) if isinstance(text, str) else 0
        return own + sum(_cell_chars(part) for part in cell.get("elements") or [])
    if isinstance(cell, list):
        return sum(_cell_chars(part) for part in cell)
    return 0

"""Blocks checked the way Slack checks them: section, header, context, divider, image,
actions, input, rich_text, table, plan and task_card; `problems` is every limit a list of
blocks breaks."""

from __future__ import annotations

from typing import Any

from bot.sandbox.blockkit.elements import ElementChecks
from bot.sandbox.blockkit.limits import (
    ACTION_ELEMENTS,
    BLOCK_TYPES,
    CONTAINER_CHILDREN,
    CONTAINER_WIDTHS,
    INPUT_ELEMENTS,
    MAX_ACTIONS_ELEMENTS,
    MAX_BLOCKS,
    MAX_CONTAINER_CHILDREN,
    MAX_CONTAINER_TITLE,
    MAX_CONTEXT_ELEMENTS,
    MAX_FIELD_TEXT,
    MAX_FIELDS,
    MAX_HEADER_TEXT,
    MAX_HINT,
    MAX_ID,
    MAX_LABEL,
    MAX_SECTION_TEXT,
    MAX_TABLE_CELLS,
    MAX_TABLE_CHARS,
    MAX_TABLE_ROWS,
    RICH_TEXT_PARTS,
    TABLE_ALIGN,
    TASK_STATUSES,
)


class BlockChecks(ElementChecks):
    """The checks of a list of blocks: each block, its block_id unique, one table at most."""

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
        # dispatch_action: a boolean (docs.slack.dev/reference/block-kit/blocks/input-block)
        for key in ("dispatch_action", "optional"):
            if not isinstance(b.get(key, False), bool):
                self.bad(f"{p}/{key}", "must be a boolean")
        self.text(b.get("hint"), MAX_HINT, f"{p}/hint", plain_only=True, required=False)
        if b.get("element") is None:
            self.bad(f"{p}/element", "must provide an object")
            return
        self.element(b["element"], f"{p}/element", INPUT_ELEMENTS)

    def block_plan(self, b: dict[str, Any], p: str) -> None:
        """A plan: its title in plain text, and `tasks`, task_card blocks
        (docs.slack.dev/reference/block-kit/blocks/plan-block)."""
        self.length(b.get("title"), MAX_SECTION_TEXT, f"{p}/title")
        for i, task in enumerate(self.items(b.get("tasks", []), 100, f"{p}/tasks", least=0)):
            if not isinstance(task, dict) or task.get("type") != "task_card":
                self.bad(f"{p}/tasks/{i}/type", "must be task_card")
                continue
            self.block_task_card(task, f"{p}/tasks/{i}")

    def block_task_card(self, b: dict[str, Any], p: str) -> None:
        """A task: task_id and title required, status pending / in_progress / complete /
        error, details and output each a single rich_text
        (docs.slack.dev/reference/block-kit/blocks/task-card-block)."""
        self.length(b.get("task_id"), MAX_ID, f"{p}/task_id")
        self.length(b.get("title"), MAX_SECTION_TEXT, f"{p}/title")
        if b.get("status") is not None and b["status"] not in TASK_STATUSES:
            self.bad(f"{p}/status", f"must be one of {', '.join(sorted(TASK_STATUSES))}")
        for key in ("details", "output"):
            part = b.get(key)
            if part is None:
                continue
            if not isinstance(part, dict) or part.get("type") != "rich_text":
                self.bad(f"{p}/{key}", "must be a rich_text block")
                continue
            self.block_rich_text(part, f"{p}/{key}")

    def block_container(self, b: dict[str, Any], p: str) -> None:
        """A container (docs.slack.dev/reference/block-kit/blocks/container-block): a title
        (plain_text, ≤ 150) unless a rich_text_title is given; a subtitle (plain_text or
        mrkdwn, ≤ 150); 1–10 child_blocks of the supported types (no container in a
        container); width narrow / standard / wide / full; is_collapsible and
        default_collapsed booleans."""
        if b.get("rich_text_title") is None:
            self.text(b.get("title"), MAX_CONTAINER_TITLE, f"{p}/title", plain_only=True)
        elif isinstance(b["rich_text_title"], dict):
            self.block_rich_text(b["rich_text_title"], f"{p}/rich_text_title")
        self.text(b.get("subtitle"), MAX_CONTAINER_TITLE, f"{p}/subtitle", required=False)
        if b.get("width") not in (None, *CONTAINER_WIDTHS):
            self.bad(f"{p}/width", "must be one of narrow, standard, wide, full")
        for key in ("is_collapsible", "default_collapsed"):
            if not isinstance(b.get(key, False), bool):
                self.bad(f"{p}/{key}", "must be a boolean")
        children = self.items(b.get("child_blocks"), MAX_CONTAINER_CHILDREN, f"{p}/child_blocks")
        for i, child in enumerate(children):
            q = f"{p}/child_blocks/{i}"
            if isinstance(child, dict) and child.get("type") not in CONTAINER_CHILDREN:
                self.bad(f"{q}/type", f"unsupported child block type {child.get('type')!r}")
                continue
            self.block(child, q)

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


def problems(blocks: Any, *, limit: int = MAX_BLOCKS) -> list[str]:
    """Every limit `blocks` breaks, as Slack words it; empty when Slack would accept them."""
    check = BlockChecks()
    check.blocks(blocks, limit)
    if check.tables > 1:
        check.bad("/blocks", "only one table block is allowed per message")
    return check.found


def _cell_chars(cell: Any) -> int:
    """The characters a table cell shows: its text, or every text inside its rich text."""
    if isinstance(cell, dict):
        text = cell.get("text")
        own = len(text) if isinstance(text, str) else 0
        return own + sum(_cell_chars(part) for part in cell.get("elements") or [])
    if isinstance(cell, list):
        return sum(_cell_chars(part) for part in cell)
    return 0

"""Block Kit for files dropped into a thread: what closebot read, what is wrong with a file,
and the form that asks a file's kind, period or column mapping. Pure: data in, blocks out."""

from __future__ import annotations

from typing import Any

from bot.blocks import (
    MAX_OPTION_TEXT,
    MAX_SELECT_OPTIONS,
    Namer,
    context,
    cut,
    escape,
    plain,
    section,
)
from bot.close import (
    FILE_KINDS,
    FILE_LEVEL_COLUMNS,
    KIND_NAMES,
    Ask,
    Problem,
    Received,
    column_label,
    fixed_value,
    kind_label,
    period_label,
)
from bot.close import optional_file as optional

CONFIRM_ACTION = "closebot_file_confirm"
CANCEL_ACTION = "closebot_file_cancel"
KIND_BLOCK = "file_kind"
PERIOD_BLOCK = "file_period"
HEADER_BLOCK = "file_header"
COLUMN_PREFIX = "file_col:"
FIXED_PREFIX = "file_fixed:"
WELL_PREFIX = "file_well:"
PICK_ACTION = "file_pick"
NONE = "__none__"
MAX_PROBLEMS_SHOWN = 25

__all__ = ["KIND_NAMES", "kind_label"]


class FileFormError(ValueError):
    """A file form submitted without what it asks."""


def _option(text: str, value: str) -> dict[str, Any]:
    return {
        "text": {"type": "plain_text", "text": cut(text, MAX_OPTION_TEXT)},
        "value": value[:150],
    }


def problem_lines(problems: list[Problem]) -> list[str]:
    out = []
    for p in problems[:MAX_PROBLEMS_SHOWN]:
        where = f"row {p.line}" if p.line else "the file"
        column = f", column *{escape(p.column)}*" if p.column else ""
        value = f" `{escape(cut(p.value, 60))}`" if p.value else ""
        out.append(f"• {where}{column}:{value} expected {escape(p.expected)}")
    if len(problems) > MAX_PROBLEMS_SHOWN:
        out.append(f"… and {len(problems) - MAX_PROBLEMS_SHOWN} more (all in the attached list)")
    return out


def received_text(got: Received, dropped_by: str, names: Namer) -> str:
    """The thread's answer to a dropped file, as mrkdwn (user text escaped)."""
    name = f"*{escape(got.filename)}*" + (f" (sheet {escape(got.sheet)})" if got.sheet else "")
    if got.status == "refused":
        head = (
            f"❌ {name}: {len(got.problems)} problem{'s' if len(got.problems) != 1 else ''}"
            "; nothing of it was used."
        )
        return "\n".join([head, *problem_lines(got.problems)])
    what = f"*{kind_label(got.kind)}* for *{period_label(got.period)}*"
    if got.status == "duplicate":
        return f"🔁 {name} is the same file as the {what} already in use; nothing changed."
    assert got.converted is not None
    lines = [f"📄 {name} → {what}: {escape(got.converted.summary())}"]
    notes = [f"Columns mapped by {escape(got.mapped)}."]
    if got.skipped_titles:
        notes.append(
            f"Skipped the title row(s) above the header: {escape(cut('; '.join(got.skipped_titles), 120))}."
        )
    if got.superseded:
        notes.append(
            f"Replaces {escape(got.superseded['filename'])} (dropped by "
            f"{escape(names(got.superseded['dropped_by'] or '-'))} at {got.superseded['dropped_at'][:16]})."
        )
    notes.append(f"Dropped by {escape(names(dropped_by))}." if dropped_by else "")
    lines.append(" ".join(n for n in notes if n))
    return "\n".join(lines)


def received_blocks(got: Received, dropped_by: str, names: Namer) -> list[dict[str, Any]]:
    text = received_text(got, dropped_by, names)
    return [section(cut(text, 3000))]


def _preview_text(rows: list[dict[str, str]], columns: list[str]) -> str:
    shown = [c for c in columns if any(r.get(c) for r in rows)]
    if not rows or not shown:
        return "_(no rows to preview)_"
    lines = []
    for n, r in enumerate(rows, start=1):
        cells = ", ".join(f"{column_label(c)}: {cut(r.get(c, ''), 24)}" for c in shown)
        lines.append(f"{n}. {cells}")
    return "```" + escape(cut("\n".join(lines), 2800)) + "```"


def _intro(name: str, ask: Ask) -> str:
    if "kind" in ask.needs or "period" in ask.needs:
        unknown = " and ".join(
            {"kind": "which of the eleven files it is", "period": "which period it is for"}[n]
            for n in ask.needs
            if n in ("kind", "period")
        )
        return f"❔ *{name}*: I can't tell {unknown}."
    if ask.needs == ["wells"]:
        return (
            f"🛢️ *{name}* ({escape(kind_label(ask.kind))}, *{period_label(ask.period)}*) names "
            "wells by names the DOI has more than one well for, or none exactly. Which well is each?"
        )
    return (
        f"↔️ *{name}* reads as *{escape(kind_label(ask.kind))}* for *{period_label(ask.period)}*, "
        "but its columns are not named as closebot names them. Check how they map (my "
        "proposal is selected; the preview follows each pick), then confirm. Once the file "
        "imports with it, I'll remember it for this source's files in this layout."
    )


def _kind_and_period(ask: Ask, nonce: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if "kind" in ask.needs:
        options = [_option(kind_label(k), k) for k in (ask.kinds or list(FILE_KINDS))]
        element: dict[str, Any] = {
            "type": "static_select",
            "action_id": PICK_ACTION,
            "placeholder": plain("Choose the kind of file", 150),
            "options": options,
        }
        if ask.kind:
            element["initial_option"] = _option(kind_label(ask.kind), ask.kind)
        blocks.append(
            {
                "type": "input",
                "block_id": f"{KIND_BLOCK}:{nonce}",
                "label": plain("Which file is this?", 2000),
                "element": element,
            }
        )
    if "period" in ask.needs:
        element = {
            "type": "plain_text_input",
            "action_id": PICK_ACTION,
            "placeholder": plain("YYYY-MM, e.g. 2026-10", 150),
        }
        if ask.period:
            element["initial_value"] = ask.period
        blocks.append(
            {
                "type": "input",
                "block_id": f"{PERIOD_BLOCK}:{nonce}",
                "label": plain("For which period (the month being closed)?", 2000),
                "element": element,
            }
        )
    return blocks


def _header_row(ask: Ask, nonce: str) -> list[dict[str, Any]]:
    """Which row names the columns (the one found is selected): another re-reads the file."""
    if not ask.top:
        return []
    options = [_option(f"row {n}: {text}", str(n)) for n, text in ask.top[:MAX_SELECT_OPTIONS]]
    element: dict[str, Any] = {
        "type": "static_select",
        "action_id": PICK_ACTION,
        "options": options,
    }
    found = next((o for o in options if o["value"] == str(ask.header_row)), None)
    if found:
        element["initial_option"] = found
    return [
        {
            "type": "input",
            "block_id": f"{HEADER_BLOCK}:{nonce}",
            "label": plain("The row that names the columns", 2000),
            "hint": plain("Choose another row and Submit: I read the file again from it.", 2000),
            "element": element,
        }
    ]


def _columns(ask: Ask, nonce: str) -> list[dict[str, Any]]:
    headers = ask.headers[: MAX_SELECT_OPTIONS - 1]
    blocks: list[dict[str, Any]] = []
    for column in FILE_KINDS[ask.kind].columns:
        chosen = ask.mapping.get(column, "")
        whole = fixed_value(chosen)
        may_skip = optional(ask.kind, column) or column in FILE_LEVEL_COLUMNS
        element: dict[str, Any] = {  # the menu loads from closebot: every header is too long
            "type": "external_select",
            "action_id": PICK_ACTION,
            "min_query_length": 0,
            "placeholder": plain("Choose the file's column", 150),
        }
        if chosen in headers:
            element["initial_option"] = _option(chosen, str(headers.index(chosen)))
        elif may_skip:
            element["initial_option"] = _option("— none —", NONE)
        label = column_label(column) + (" (may be blank)" if optional(ask.kind, column) else "")
        blocks.append(
            {
                "type": "input",
                "block_id": f"{COLUMN_PREFIX}{column}:{nonce}",
                "dispatch_action": True,  # a pick updates the preview
                "label": plain(label, 2000),
                "element": element,
            }
        )
        if column in FILE_LEVEL_COLUMNS and (whole is not None or chosen not in headers):
            typed: dict[str, Any] = {
                "type": "plain_text_input",
                "action_id": PICK_ACTION,
                "placeholder": plain("when no column holds it: one value for every row", 150),
            }
            if whole:
                typed["initial_value"] = whole
            blocks.append(
                {
                    "type": "input",
                    "block_id": f"{FIXED_PREFIX}{column}:{nonce}",
                    "optional": True,
                    "label": plain(f"{column_label(column)} for the whole file", 2000),
                    "element": typed,
                }
            )
    return blocks


def _wells(ask: Ask, nonce: str) -> list[dict[str, Any]]:
    blocks = []
    for name, options in list(ask.wells.items())[:40]:
        choices = [_option(label, well) for well, label in options[: MAX_SELECT_OPTIONS - 1]]
        if not choices:
            continue
        blocks.append(
            {
                "type": "input",
                "block_id": cut(f"{WELL_PREFIX}{name}", 200) + f":{nonce}",
                "label": plain(f"“{name}” is which well?", 2000),
                "element": {
                    "type": "static_select",
                    "action_id": PICK_ACTION,
                    "placeholder": plain("Choose the DOI's well", 150),
                    "options": choices,
                },
            }
        )
    return blocks


def file_form(
    file_id: int,
    filename: str,
    ask: Ask,
    preview_rows: list[dict[str, str]],
    *,
    nonce: str = "0",
) -> list[dict[str, Any]]:
    """The question about one file: its kind and period when they can't be told; else each
    column closebot needs (in words) with a menu of the file's headers, the proposal
    preselected, a whole-file value for a column the file lacks, the header row, the wells
    its names may be, and the first rows as they would be read; Submit or Cancel."""
    blocks: list[dict[str, Any]] = [section(_intro(escape(filename), ask))]
    blocks += _kind_and_period(ask, nonce)
    if "mapping" in ask.needs and ask.kind:
        blocks += _header_row(ask, nonce)
        blocks += _columns(ask, nonce)
    if "wells" in ask.needs:
        blocks += _wells(ask, nonce)
    if ask.kind and "kind" not in ask.needs:
        blocks.append(
            section(
                "*Preview*, the first rows as they would be read:\n"
                + _preview_text(preview_rows, list(FILE_KINDS[ask.kind].columns))
            )
        )
    blocks.append(
        {
            "type": "actions",
            "block_id": f"file_actions:{nonce}",
            "elements": [
                {
                    "type": "button",
                    "action_id": CONFIRM_ACTION,
                    "text": plain("Submit", 75),
                    "style": "primary",
                    "value": str(file_id),
                },
                {
                    "type": "button",
                    "action_id": CANCEL_ACTION,
                    "text": plain("Cancel", 75),
                    "value": str(file_id),
                },
            ],
        }
    )
    blocks.append(context(f"File {file_id} · nothing of it is used until this is confirmed"))
    return blocks


def header_options(headers: list[str], query: str, *, may_skip: bool) -> list[dict[str, Any]]:
    """A column menu's options: the file's headers that contain what was typed."""
    typed = query.strip().casefold()
    options = [
        _option(h, str(i))
        for i, h in enumerate(headers[: MAX_SELECT_OPTIONS - 1])
        if typed in h.casefold()
    ]
    if may_skip and (not typed or typed in "— none —"):
        options.insert(0, _option("— none —", NONE))
    return options


def column_of(block_id: str) -> tuple[str, int] | None:
    """(closebot column, file id) of a column menu's block."""
    if not block_id.startswith(COLUMN_PREFIX):
        return None
    column, _, nonce = block_id.removeprefix(COLUMN_PREFIX).rpartition(":")
    file_id = file_id_of(nonce)
    return (column, file_id) if file_id is not None and column else None


def file_id_of(text: str) -> int | None:
    """A file's id as a form carries it, or None: digits, and no more than SQLite's integers
    hold (a 21-digit id from a forged payload was an OverflowError, a 500; issue 31)."""
    if not text.isdigit() or len(text) > 18:
        return None
    return int(text)


def read_file_form(values: dict[str, dict[str, Any]], *, partial: bool = False) -> dict[str, Any]:
    """What a person chose in a file form: kind, period, mapping ("#i" for the file's i-th
    header, "" for none), whole-file values, wells, header row (any may be absent).
    `partial`: the form as it stands mid-way (a pick), nothing refused."""
    out: dict[str, Any] = {}
    mapping: dict[str, str] = {}
    whole: dict[str, str] = {}
    wells: dict[str, str] = {}
    for block_id, actions in values.items():
        action = (actions or {}).get(PICK_ACTION) or {}
        base = block_id.rsplit(":", 1)[0]
        if base.startswith(FIXED_PREFIX):
            typed = (action.get("value") or "").strip()
            if typed:
                whole[base.removeprefix(FIXED_PREFIX)] = typed
            continue
        if base.startswith(WELL_PREFIX):
            picked = (action.get("selected_option") or {}).get("value")
            if not picked and not partial:
                raise FileFormError(f"choose the well {base.removeprefix(WELL_PREFIX)!r} is")
            if picked:
                wells[base.removeprefix(WELL_PREFIX)] = picked
            continue
        if base == HEADER_BLOCK:
            picked = (action.get("selected_option") or {}).get("value") or ""
            if picked.isdigit():
                out["header_row"] = int(picked)
            continue
        if base == KIND_BLOCK:
            picked = (action.get("selected_option") or {}).get("value")
            if not picked:
                raise FileFormError("choose which file this is")
            out["kind"] = picked
        elif base == PERIOD_BLOCK:
            typed = (action.get("value") or "").strip()
            if not typed:
                raise FileFormError("type the period, as YYYY-MM")
            out["period"] = typed
        elif base.startswith(COLUMN_PREFIX):
            column = base.removeprefix(COLUMN_PREFIX)
            picked = (action.get("selected_option") or {}).get("value")
            mapping[column] = "" if picked in (None, NONE) else f"#{picked}"
    for column, typed in whole.items():
        mapping[column] = "=" + typed  # a value for every row: what the form says
    missing = [c for c, v in mapping.items() if not v and c not in whole]
    if not partial:
        for column in missing:
            picked_none = any(
                b.rsplit(":", 1)[0] == COLUMN_PREFIX + column
                and ((values[b] or {}).get(PICK_ACTION) or {}).get("selected_option")
                for b in values
            )
            if not picked_none:
                raise FileFormError(
                    f"choose a column for {column_label(column)}, or type its value for the whole file"
                )
    if mapping:
        out["mapping"] = mapping
    if wells:
        out["wells"] = wells
    return out


def settled_form(filename: str, by: str, what: str) -> list[dict[str, Any]]:
    """The file form after it was answered: read-only, who said what (`by`: a name)."""
    return [section(f"✅ *{escape(filename)}*: {escape(what)} — confirmed by {escape(by)}")]

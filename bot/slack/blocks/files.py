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
from bot.close import FILE_KINDS, Ask, Problem, Received, period_label
from bot.close import optional_file as optional

CONFIRM_ACTION = "closebot_file_confirm"
KIND_BLOCK = "file_kind"
PERIOD_BLOCK = "file_period"
COLUMN_PREFIX = "file_col:"
PICK_ACTION = "file_pick"
NONE = "__none__"
MAX_PROBLEMS_SHOWN = 25
KIND_NAMES = {
    "doi.csv": "DOI master",
    "jib.csv": "JIB (joint interest billing)",
    "revenue.csv": "Revenue check stubs",
    "jib_history.csv": "JIB history",
    "revenue_history.csv": "Revenue history",
    "production.csv": "Production volumes",
    "prices.csv": "Prices",
    "afe.csv": "AFEs",
    "joa.csv": "JOA overhead rates",
    "accruals.csv": "Last month's accruals",
    "tb_activity.csv": "Trial balance activity",
}


class FileFormError(ValueError):
    """A file form submitted without what it asks."""


def kind_label(kind: str) -> str:
    return f"{KIND_NAMES.get(kind, kind)} ({kind})"


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
        cells = ", ".join(f"{c}={cut(r.get(c, ''), 24)}" for c in shown)
        lines.append(f"{n}. {cells}")
    return "```" + escape(cut("\n".join(lines), 2800)) + "```"


def file_form(
    file_id: int,
    filename: str,
    ask: Ask,
    preview_rows: list[dict[str, str]],
    *,
    nonce: str = "0",
) -> list[dict[str, Any]]:
    """The question about one file: its kind and period when they can't be told; else each
    column closebot needs with a menu of the file's headers, the proposal preselected, and
    the first rows as they would be read."""
    name = escape(filename)
    blocks: list[dict[str, Any]] = []
    if "kind" in ask.needs or "period" in ask.needs:
        unknown = " and ".join(
            {"kind": "which of the eleven files it is", "period": "which period it is for"}[n]
            for n in ask.needs
            if n != "mapping"
        )
        blocks.append(section(f"❔ *{name}*: I can't tell {unknown}."))
    else:
        blocks.append(
            section(
                f"↔️ *{name}* reads as *{kind_label(ask.kind)}* for "
                f"*{period_label(ask.period)}*, but its columns are not named as closebot names them. "
                "Check how they map (my proposal is selected), then confirm. "
                "I'll remember it for this source's files in this layout."
            )
        )
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
    if "mapping" in ask.needs and ask.kind:
        headers = ask.headers[: MAX_SELECT_OPTIONS - 1]
        for column in FILE_KINDS[ask.kind].columns:
            may_skip = optional(ask.kind, column)
            element = {  # the menu loads from closebot: eleven menus of every header are too long
                "type": "external_select",
                "action_id": PICK_ACTION,
                "min_query_length": 0,
                "placeholder": plain("Choose the file's column", 150),
            }
            chosen = ask.mapping.get(column, "")
            if chosen in headers:
                element["initial_option"] = _option(chosen, str(headers.index(chosen)))
            elif may_skip:
                element["initial_option"] = _option("— none —", NONE)
            blocks.append(
                {
                    "type": "input",
                    "block_id": f"{COLUMN_PREFIX}{column}:{nonce}",
                    "label": plain(column + (" (may be blank)" if may_skip else ""), 2000),
                    "element": element,
                }
            )
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
                }
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
    return (column, int(nonce)) if nonce.isdigit() and column else None


def read_file_form(values: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What a person chose in a file form: kind, period, mapping (any of them may be absent)."""
    out: dict[str, Any] = {}
    mapping: dict[str, str] = {}
    for block_id, actions in values.items():
        action = (actions or {}).get(PICK_ACTION) or {}
        base = block_id.rsplit(":", 1)[0]
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
            picked = (action.get("selected_option") or {}).get("value")
            if picked is None:
                raise FileFormError(f"choose a column for {base.removeprefix(COLUMN_PREFIX)}")
            mapping[base.removeprefix(COLUMN_PREFIX)] = "" if picked == NONE else f"#{picked}"
    if mapping:
        out["mapping"] = mapping
    return out


def settled_form(filename: str, by: str, what: str) -> list[dict[str, Any]]:
    """The file form after it was answered: read-only, who said what (`by`: a name)."""
    return [section(f"✅ *{escape(filename)}*: {escape(what)} — confirmed by {escape(by)}")]

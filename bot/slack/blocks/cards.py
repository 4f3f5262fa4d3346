"""The decision card (issue 30): a decision read at a glance — what happened, the number that
matters, what the ⭐ books — with the ⭐ preselected so one click takes it; several items as
one table with a choice per row; "Other" and "Why" once per card, only where they can apply.
Everything else (each option's full entry, the reasoning, the whole question) is in the
Details modal (`details_view`), one click away."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from bot.close import for_people
from bot.core.questions import Ask, Question, QuestionType
from bot.slack.blocks.actions import ANSWER_ACTION, OTHER_VALUE
from bot.slack.blocks.boxes import (
    Picks,
    Typed,
    dispatches,
    other_box,
    other_picked,
    typed_of,
    why_box,
    why_needed,
)
from bot.slack.blocks.limits import (
    MAX_CHOICE_BUTTONS,
    MAX_LABEL,
    MAX_OPTION_TEXT,
    MAX_SECTION_TEXT,
    MAX_SELECT_OPTIONS,
)
from bot.slack.blocks.text import USER_ID, cut, escape, mrkdwn, plain, section, split_text

Item = dict[str, str]  # a question's row: item, basis, billed, expected, difference
COLUMNS = (
    ("item", "Item"),
    ("basis", "Basis"),
    ("billed", "Billed"),
    ("expected", "Expected"),
    ("difference", "Difference"),
)
AMOUNT_COLUMNS = {"billed", "expected", "difference"}
LEAD_WORDS = 28  # what happened, when no item gives it: the question's first words
CELL_WORDS = 5  # a table cell's words (an item, its basis) on the card
# A context that only says a decision is needed ("Intake: 1 item needs your decision before I
# book anything."): the card says so already. Any other (a change, the model's own) is shown.
ROUTINE = re.compile(r"\d+ items? needs? your decision")
MAX_VIEW_TITLE = 24  # docs.slack.dev/reference/views/modal-views: title, close ≤ 24 chars
MAX_VIEW_BLOCKS = 100


def readable(text: str) -> str:
    """What a person reads of a question's text: without its [ref …] tag or an approval's
    content hash (the decision log keeps both): bot.close.for_people."""
    return for_people(text).strip()


def lead(text: str, words: int = LEAD_WORDS) -> str:
    """The first sentence of `text`, at most `words` words (cut between words, never inside
    an amount)."""
    text = readable(text)
    first = re.split(r"(?<=[.?!])\s+(?=[A-Z])", text, maxsplit=1)[0]
    parts = first.split()
    return first if len(parts) <= words else " ".join(parts[:words]).rstrip(",;:") + " …"


def situation(context: str, count: int) -> str:
    """A card of several items: what they are ('WI/NRI validation') and how many decisions,
    from the context's head; else the context's first words."""
    head, colon, _ = readable(context).partition(":")
    if colon and len(head.split()) <= 6:
        return f"{head.strip()} · {count} decisions"
    return lead(context, 20)


def star_line(q: Question) -> str | None:
    """'⭐ books: …' — what the recommended option books (its label is on its choice, marked ⭐,
    so it is not said twice)."""
    if q.recommended is None:
        return None
    option = q.options[q.recommended - 1]
    return f"*⭐ books:* {escape(option.description)}" if option.description else None


def _sure(q: Question, number: int) -> str:
    """' 85%': how sure the recommender is of an option, where it said."""
    confidence = q.options[number - 1].confidence
    return "" if confidence is None else f" {round(confidence * 100)}%"


def choice_option(q: Question, number: int) -> dict[str, Any]:
    """Option `number` as a choice shows it: its label, ⭐ on the recommended, how sure."""
    label = q.options[number - 1].label
    mark = (" ⭐" if q.recommended == number else "") + _sure(q, number)
    return {
        "text": plain(cut(label, MAX_OPTION_TEXT - len(mark)) + mark, MAX_OPTION_TEXT),
        "value": str(number),
    }


def choice_element(
    q: Question, *, row: bool, external: bool, picked: str | list[str] | None = None
) -> dict[str, Any]:
    """A question's choice: radio buttons (labels only, the ⭐ preselected) on a card of one
    question; a menu on a table's row; with "Other…" where a typed answer is allowed and the
    choice can hold it (its box then appears: boxes.py). `picked`: what the person chose
    already (a card redrawn), else the ⭐."""
    options = [choice_option(q, n) for n in range(1, len(q.options) + 1)]
    element = q.kind.element(q, options, action_id=ANSWER_ACTION, external=external)
    if row and element["type"] == "radio_buttons":  # a row's choice takes one line: a menu
        element = {"type": "static_select", "action_id": ANSWER_ACTION, "options": options}
        if q.recommended is not None:
            element["initial_option"] = options[q.recommended - 1]
    room = {"radio_buttons": MAX_CHOICE_BUTTONS, "static_select": MAX_SELECT_OPTIONS}
    if q.allow_other and len(options) < room.get(element["type"], 0):
        element["options"] = [
            *element["options"],
            {
                "text": plain(
                    "Other… (type it below)" if row else "Other (type your own)",
                    MAX_OPTION_TEXT,
                ),
                "value": OTHER_VALUE,
            },
        ]
    if isinstance(picked, str):
        found = [o for o in element.get("options") or [] if o["value"] == picked]
        if found:
            element["initial_option"] = found[0]
    return element


def offers_other(element: dict[str, Any]) -> bool:
    """Whether a choice holds the "Other…" option (else a typed answer has its own box)."""
    return any(o.get("value") == OTHER_VALUE for o in element.get("options") or [])


def _cell(key: str, value: str | None) -> dict[str, Any]:
    """A table cell: an amount whole; words cut to a glance (the whole is in Details)."""
    text = (value or "").strip()
    if key not in AMOUNT_COLUMNS:
        text = lead(text, CELL_WORDS)
    return {"type": "raw_text", "text": cut(text, 300) or " "}


def _table(rows: list[Item]) -> dict[str, Any]:
    """Several items as one table — item | basis | billed / expected | difference — sized for
    a thread's narrow pane: the item and its basis wrapped, billed and expected in
    one cell (one above the other), the amounts right-aligned. A column no row fills is left
    out."""
    both = any(r.get("billed") or r.get("expected") for r in rows)
    differ = any(r.get("difference") for r in rows)
    header = [
        "Item",
        "Basis",
        *(["Billed / expected"] if both else []),
        *(["Difference"] if differ else []),
    ]
    body = [
        [
            {"type": "raw_text", "text": cut(r.get("item") or " ", 80)},
            _cell("basis", r.get("basis")),
            *(
                [
                    {
                        "type": "raw_text",
                        "text": " / ".join(v for v in (r.get("billed"), r.get("expected")) if v)
                        or " ",
                    }
                ]
                if both
                else []
            ),
            *([_cell("difference", r.get("difference"))] if differ else []),
        ]
        for r in rows
    ]
    settings: list[dict[str, Any] | None] = [
        {"is_wrapped": True},
        {"is_wrapped": True},
        *([{"align": "right", "is_wrapped": True}] if both else []),
        *([{"align": "right"}] if differ else []),
    ]
    return {
        "type": "table",
        "rows": [[{"type": "raw_text", "text": h} for h in header], *body],
        "column_settings": settings,
    }


def _fields(item: Item) -> dict[str, Any]:
    figures = [(h, item[k]) for k, h in COLUMNS[2:4] if item.get(k)]
    # the difference between billed and expected; alone, the amount at stake
    last = "Difference" if figures else "At stake"
    shown = figures + ([(last, item["difference"])] if item.get("difference") else [])
    return {
        "type": "section",
        "fields": [mrkdwn(f"*{h}*\n{escape(v)}") for h, v in shown[:10]],
    }


def _assignment_rows(ask: Ask, names: Callable[[str], str] | None) -> list[tuple[str, str, str]]:
    """The owners and due dates a form assigns, as (item, owner, due) — a picked owner and
    the date that follows it make one row."""
    rows: list[tuple[str, str, str]] = []
    for q in ask.questions:
        if not q.kind.assigns:
            continue
        value = q.initial or "—"
        if q.type is QuestionType.USER:
            who = names(value) if names and q.initial else value
            item = re.sub(r"\s*·\s*owner$", "", readable(q.question))
            rows.append((item, who, "—"))
        elif rows and rows[-1][2] == "—":
            rows[-1] = (rows[-1][0], rows[-1][1], value)
        else:
            rows.append((re.sub(r"\s*·?\s*due date$", "", readable(q.question)), "—", value))
    return rows


def card_blocks(
    ask: Ask,
    *,
    block_id: Callable[[str, int], str],
    items: Sequence[Item | None] = (),
    external: bool = False,
    expanded: bool = False,
    names: Callable[[str], str] | None = None,
    picks: Picks | None = None,
    typed: Typed | None = None,
) -> list[dict[str, Any]]:
    """The card's body, before its footer and buttons: the situation, the items (fields for
    one, a table for several), the choices, the ⭐ and what it books; Other and Why once,
    only when the choices made so far (`picks`, with what was `typed`) call for them."""
    picks = picks or {}
    deciding = [(n, q) for n, q in enumerate(ask.questions, start=1) if not q.kind.assigns]
    always_other = False  # a typed answer its choice cannot hold: its box is always shown
    facts = [items[n - 1] if n - 1 < len(items) else None for n, _ in deciding]
    blocks: list[dict[str, Any]] = []
    if len(deciding) == 1:
        (number, q), item = deciding[0], facts[0]
        title = q.header or lead(ask.context, 8)
        what = item["basis"] if item and item.get("basis") else lead(q.question)
        named = item.get("item", "") if item else ""
        named = _unsaid(named, what)
        subject = f"{named} · " if named and named not in title and named not in what else ""
        # the context, unless routine or already the title
        said = (
            ""
            if ROUTINE.search(ask.context) or not q.header
            else f"_{escape(lead(ask.context, 14))}_\n"
        )
        blocks.append(section(f"*🙋 {escape(title)}*\n{said}{escape(subject + what)}"))
        if item and any(item.get(k) for k, _ in COLUMNS[2:]):
            blocks.append(_fields(item))
        if star := star_line(q):
            blocks.append(section(star))
        if q.is_choice or q.kind.type is QuestionType.FREE_TEXT:
            element = (
                choice_element(q, row=False, external=external, picked=picks.get(number))
                if q.is_choice
                else q.kind.element(q, [], action_id=ANSWER_ACTION, external=external)
            )
            blocks.append(_choice_block(q, block_id("q", number), q.kind.label, element))
            always_other = q.allow_other and q.is_choice and not offers_other(element)
        # a typed answer its choice cannot hold keeps the box of an earlier card (o:N)
        other_id = block_id("o", number if always_other else 0)
    else:
        blocks.append(section(f"*🙋 {escape(situation(ask.context, len(deciding)))}*"))
        rows = [
            f or {"item": q.header or f"Question {n}", "basis": lead(q.question, 16)}
            for (n, q), f in zip(deciding, facts, strict=True)
        ]
        blocks.append(_table(rows))
        for (number, q), row in zip(deciding, rows, strict=True):
            element = (
                choice_element(q, row=True, external=external, picked=picks.get(number))
                if q.is_choice
                else q.kind.element(q, [], action_id=ANSWER_ACTION, external=external)
            )
            blocks.append(_choice_block(q, block_id("q", number), row["item"], element))
            always_other |= q.allow_other and q.is_choice and not offers_other(element)
        other_id = block_id("o", 0)
    assigned = _assignment_rows(ask, names)
    if assigned and not expanded:
        if len(deciding) == 1:  # the card's one table: each item, its owner and due date
            blocks.append(
                {
                    "type": "table",
                    "rows": [
                        [{"type": "raw_text", "text": h} for h in ("Item", "Owner", "Due")],
                        *(
                            [_cell("item", item), _cell("owner", who), _cell("due", due)]
                            for item, who, due in assigned
                        ),
                    ],
                    "column_settings": [{"is_wrapped": True}, None, None],
                }
            )
        else:
            listed = "\n".join(
                f"• {escape(i)} → *{escape(o)}*, due {escape(d)}" for i, o, d in assigned
            )
            blocks.extend(section(t) for t in split_text(listed, MAX_SECTION_TEXT)[:3])
        # its button (Reassign: each owner's and due date's picker) rides in the card's
        # actions row (forms.py)
    elif assigned:
        for number, q in enumerate(ask.questions, start=1):
            if q.kind.assigns:
                blocks.append(
                    {
                        "type": "input",
                        "block_id": block_id("q", number),
                        "label": plain(cut(readable(q.question), 150), MAX_LABEL),
                        "optional": not q.required,
                        "element": q.kind.element(
                            q, [], action_id=ANSWER_ACTION, external=external
                        ),
                    }
                )
    if always_other or other_picked(picks):
        one = len(deciding) == 1
        label = (
            ("Or type your own answer" if always_other else "Your own answer")
            if one
            else "Your own answer, for a row set to Other…"
        )
        blocks.append(other_box(other_id, label, typed_of(typed, "o")))
    if why_needed(ask, picks):  # an override of a ⭐ (each such choice dispatches)
        blocks.append(why_box(block_id("w", 0), typed_of(typed, "w")))
    return blocks


def _unsaid(named: str, what: str) -> str:
    """An item's name without the words its basis says first ('property PRO-40188 on
    PRO-JIB-2609-118' beside 'property PRO-40188 is not in the DOI master': 'PRO-JIB-2609-118')."""
    a, b = named.split(), what.split()
    same = 0
    while same < min(len(a), len(b)) and a[same] == b[same]:
        same += 1
    if same < 2 or same == len(a):
        return named
    rest = a[same:]
    return " ".join(rest[1:] if rest[0] in ("on", "of", "for", "in", "at", "from") else rest)


def _choice_block(
    q: Question, block_id: str, label: str, element: dict[str, Any]
) -> dict[str, Any]:
    """A question's input block; a choice that can add a box dispatches (boxes.py)."""
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "label": plain(label, MAX_LABEL),
        "optional": not q.required,
        "element": element,
    }
    if dispatches(q):
        block["dispatch_action"] = True
    return block


def details_view(
    ask: Ask, *, question_id: str, items: Sequence[Item | None] = ()
) -> dict[str, Any]:
    """The Details modal: every question whole, each option with what it books, the
    reasoning behind the ⭐ — what the card leaves out, one click away (views.open)."""
    lines: list[str] = [escape(readable(ask.context))]
    deciding = [(n, q) for n, q in enumerate(ask.questions, start=1) if not q.kind.assigns]
    for n, q in deciding:
        title = q.header or f"Question {n}"
        lines += ["", f"*{escape(title)}*", escape(readable(q.question))]
        for number, option in enumerate(q.options, start=1):
            mark = (" ⭐" if q.recommended == number else "") + _sure(q, number)
            books = f": {escape(option.description)}" if option.description else ""
            lines.append(f"• *{escape(option.label)}*{mark}{books}")
        if q.reasoning:
            sure = (
                f" ({_sure(q, q.recommended).strip()} confident)"
                if q.recommended and _sure(q, q.recommended)
                else ""
            )
            lines.append(f"⭐ *Recommended, preselected*{sure}: {escape(q.reasoning)}")
    assigned = [q for q in ask.questions if q.kind.assigns]
    if assigned:
        lines += ["", "*Owners and due dates* (⭐ the recommended ones, changed on the card)"]
        for q in assigned:
            value = q.initial or "—"
            shown = f"<@{value}>" if USER_ID.match(value) else escape(value)
            lines.append(f"• {escape(readable(q.question))}: {shown}")
    blocks: list[dict[str, Any]] = []
    for piece in split_text("\n".join(lines), MAX_SECTION_TEXT):
        if piece.strip():
            blocks.append(section(piece))
    return {
        "type": "modal",
        "callback_id": "closebot_details",
        "private_metadata": cut(question_id, 3000),
        "title": plain("Decision details", MAX_VIEW_TITLE),
        "close": plain("Close", MAX_VIEW_TITLE),
        "blocks": blocks[:MAX_VIEW_BLOCKS],
    }

"""The posting approval's form: the batch as a table, Approve / Keep as draft / Reject as
buttons, only Approve behind a confirm."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from bot.core.questions import Ask, why_applies
from bot.slack.blocks.actions import CHOICE_ACTION, DETAILS_ACTION
from bot.slack.blocks.cards import lead, readable
from bot.slack.blocks.forms import (
    block_id,
    fit,
    who_may_answer_block,
    why_input,
)
from bot.slack.blocks.limits import (
    MAX_ACTIONS,
    MAX_BUTTON_TEXT,
    MAX_CONFIRM_BUTTON,
    MAX_CONFIRM_TEXT,
    MAX_CONFIRM_TITLE,
)
from bot.slack.blocks.text import context, cut, escape, plain, section

MAX_TABLE_ROWS = 100  # the header included (docs.slack.dev/reference/block-kit/blocks/table-block)
MAX_TABLE_CHARS = 10_000  # the text of all its cells together (the same page, "Usage info")
# The table's share of its message: Slack refuses a message whose blocks run to about 13,000
# characters (msg_blocks_too_long); the approval form's other blocks keep the rest.
TABLE_BUDGET = 8_000
CARD_TABLE_ROWS = 4  # the accounts an approval card shows before "… N more" and the total


def table(
    header: list[str],
    rows: list[list[str]],
    *,
    right: Iterable[int] = (),
    more: Callable[[int], str] | None = None,
) -> dict[str, Any]:
    """A `table` block (first row the header); columns in `right` aligned right (amounts).

    No row is ever dropped unsaid: when the rows do not fit Slack's table (100 rows, 10,000
    characters) or its share of the message, the last row (the total) stays last and the rows
    left out are counted in one row, `more(count)`, which says where they are."""
    aligned = set(right)
    if table_fits(header, rows):
        return _table(header, rows, aligned)
    *body, last = rows
    told = more or (lambda k: f"… {k} more rows, not shown")

    def shown(keep: int) -> list[list[str]]:
        return [*body[:keep], [told(len(body) - keep), *[""] * (len(header) - 1)], last]

    keep = min(len(body), MAX_TABLE_ROWS - 3)  # the header, the "more" row and the total
    while keep > 0 and not table_fits(header, shown(keep)):
        keep -= 1
    return _table(header, shown(keep), aligned)


def table_fits(header: list[str], rows: list[list[str]]) -> bool:
    """Whether these rows, every one, fit one table block in a form."""
    chars = sum(len(t or " ") for row in [header, *rows] for t in row)
    return (
        len(rows) + 1 <= MAX_TABLE_ROWS
        and chars <= MAX_TABLE_CHARS
        and len(json.dumps(_table(header, rows, set()), ensure_ascii=False)) <= TABLE_BUDGET
    )


def _table(header: list[str], rows: list[list[str]], aligned: set[int]) -> dict[str, Any]:
    def cell(text: str) -> dict[str, Any]:
        return {"type": "raw_text", "text": text or " "}

    return {
        "type": "table",
        "rows": [[cell(t) for t in header], *([cell(t) for t in row] for row in rows)],
        "column_settings": [
            {"align": "right"} if i in aligned else {"is_wrapped": True} for i in range(len(header))
        ],
    }


def table_text(header: list[str], rows: list[list[str]]) -> str:
    """The same rows as text, for the notification and wherever tables are not drawn."""
    return "\n".join(" · ".join(c for c in row if c) for row in [header, *rows])


def approval_form(
    ask: Ask,
    *,
    question_id: str,
    who_may_answer: str,
    nonce: str,
    confirm: str | None,
    facts: dict[str, Any] | None = None,
    deadline: str | None = None,
    why: bool = False,
) -> list[dict[str, Any]]:
    """The posting approval as a card (issue 30): what is posted (the question's first line),
    what else comes with it (DOI changes, the limit) in small print, the batch by account
    (`facts`: its first accounts and the total when they are many), a Why, who may approve,
    and one button per choice (Approve / Keep as draft / Reject) beside Details (each
    choice's meaning and the reasoning, in a modal). Only the button that approves carries the
    `confirm` dialog, and only where it posts (None: a first approval over the limit posts
    nothing, a second approver is asked): the other choices post nothing. The buttons answer by themselves: no
    radio buttons, no Submit (the documented exception to a form's one Submit, DESIGN.md's
    interface contract)."""
    q = ask.questions[0]
    lines = [
        line
        for line in readable(q.question).splitlines()
        if line.strip()
        # the accounts listed in words: the table shows them
        and not (facts is not None and (line.startswith("• ") or line.rstrip(":") == "By account"))
    ]
    first, *rest = lines or [""]
    title = escape(q.header or "Posting")
    blocks: list[dict[str, Any]] = [section(f"*🙋 {title}*\n{escape(first)}")]
    if rest:  # what comes with it (DOI changes, the limit), a glance each; whole in Details
        blocks.append(context(*(escape(lead(line, 16)) for line in rest)))
    if facts is not None:
        blocks.append(shortened_table(facts, CARD_TABLE_ROWS))
    # its Why box only once asked for: a choice against the ⭐ pressed without one is refused
    # and the card redrawn with it (listeners/forms.py); Approve needs none (issue 30)
    if why and why_applies(q):
        blocks.append(why_input(1, nonce))
    blocks.append(who_may_answer_block(who_may_answer, deadline, nonce))
    buttons = []
    for number, option in enumerate(q.options[: MAX_ACTIONS - 1], start=1):
        mark = " ⭐" if q.recommended == number else ""
        button: dict[str, Any] = {
            "type": "button",
            "action_id": f"{CHOICE_ACTION}{number}",
            "text": plain(fit(option.label, MAX_BUTTON_TEXT - len(mark)) + mark, MAX_BUTTON_TEXT),
            "value": cut(question_id, 2000),
        }
        if approving(option.label):
            button["style"] = "primary"
        if approving(option.label) and confirm is not None:
            button["confirm"] = {
                "title": plain("Post to the ledger?", MAX_CONFIRM_TITLE),
                "text": plain(confirm, MAX_CONFIRM_TEXT),
                "confirm": plain("Post", MAX_CONFIRM_BUTTON),
                "deny": plain("Not yet", MAX_CONFIRM_BUTTON),
            }
        buttons.append(button)
    buttons.append(
        {
            "type": "button",
            "action_id": DETAILS_ACTION,
            "text": plain("Details", MAX_BUTTON_TEXT),
            "value": cut(question_id, 2000),
        }
    )
    blocks.append({"type": "actions", "block_id": block_id("a", 0, nonce), "elements": buttons})
    return blocks


def shortened_table(table_block: dict[str, Any], keep: int) -> dict[str, Any]:
    """A table of at most `keep` body rows before its last (the total): the rows after the
    first `keep` are counted in one row (with any a "… N more" row already counted), which
    says where they all are."""
    header, *body = table_block["rows"]
    if len(body) <= keep + 2:
        return table_block
    *shown, last = body
    hidden, said = 0, "… {} more accounts (in the Total): every line is in the draft journal above"
    rows = []
    for row in shown:
        if m := re.match(r"^… (\d+) more", row[0].get("text") or ""):
            hidden += int(m.group(1))
            said = re.sub(r"^… \d+", "… {}", row[0]["text"])
        else:
            rows.append(row)
    hidden += len(rows) - keep
    more = [{"type": "raw_text", "text": said.format(hidden)}]
    more += [{"type": "raw_text", "text": " "} for _ in header[1:]]
    return {**table_block, "rows": [header, *rows[:keep], more, last]}


def approving(label: str) -> bool:
    """An option that approves posting (as bot.close.controls.approves reads an answer)."""
    return label.casefold().startswith("approve")

"""A question's form: each question's input (buttons, a select, a typed answer), the Why box,
who may answer and the deadline, Submit and Cancel; the external select's options."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from bot.core.questions import Ask, Question, has_defaults
from bot.slack.blocks.actions import (
    BLOCK_PREFIX,
    CANCEL_ACTION,
    CHOICE_ACTION_RE,
    DETAILS_ACTION,
    EXPAND_ACTION,
    PER_QUESTION_WHY,
    SUBMIT_ACTION,
)
from bot.slack.blocks.boxes import Picks, Typed, why_box
from bot.slack.blocks.cards import card_blocks, choice_option
from bot.slack.blocks.limits import (
    MAX_BUTTON_TEXT,
    MAX_CONFIRM_BUTTON,
    MAX_CONFIRM_TEXT,
    MAX_CONFIRM_TITLE,
    MAX_ID,
    MAX_SELECT_OPTIONS,
)
from bot.slack.blocks.text import (
    context,
    cut,
    fits,
    plain,
    when_text,
)


def block_id(kind: str, number: int, nonce: str) -> str:
    return cut(f"{BLOCK_PREFIX}:{kind}:{number}:{nonce}", MAX_ID)


def why_input(number: int, nonce: str) -> dict[str, Any]:
    """The Why box (question `number`'s; 0: the card's one box)."""
    return why_box(block_id("w", number, nonce))


def who_may_answer_block(who_may_answer: str, deadline: str | None, nonce: str) -> dict[str, Any]:
    """A form's footer: who may answer (and the deadline), marking the form's Why as per question."""
    who = (
        who_may_answer
        if who_may_answer.startswith("Who may")
        else f"Who may answer: {who_may_answer}"
    )
    footer = context(who, *([deadline] if deadline else []))
    footer["block_id"] = block_id(PER_QUESTION_WHY, 0, nonce)  # marks a Why per question
    return footer


def parse_block_id(value: str) -> tuple[str, int] | None:
    """(kind, question number) of one of our block ids, whatever nonce it was built with."""
    m = re.match(rf"^{BLOCK_PREFIX}:(q|o|w):(\d+):", value)
    return (m.group(1), int(m.group(2))) if m else None


def fit(text: str, limit: int) -> str:
    """Text no longer than `limit`, cut only between words (never inside an amount)."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;·/") + "…"


def percent(confidence: float | None) -> str:
    return "" if confidence is None else f"{round(confidence * 100)}%"


def search_options(
    q: Question, query: str, limit: int = MAX_SELECT_OPTIONS
) -> list[dict[str, Any]]:
    """Options of a large question whose label contains `query`, for an external select."""
    needle = query.strip().casefold()
    numbers = [n for n, o in enumerate(q.options, start=1) if needle in o.label.casefold()]
    return [choice_option(q, n) for n in numbers[:limit]]


def question_form(
    ask: Ask,
    *,
    question_id: str,
    who_may_answer: str,
    nonce: str,
    external: bool = False,
    deadline: str | None = None,
    confirm: str | None = None,
    items: Sequence[dict[str, str] | None] = (),
    expanded: bool = False,
    names: Callable[[str], str] | None = None,
    picks: Picks | None = None,
    typed: Typed | None = None,
) -> list[dict[str, Any]]:
    """One message, the decision card (blocks/cards.py): what happened, the number that
    matters and what the ⭐ books, the ⭐ preselected; several items as one table with a
    choice per row; Other and Why once, where they can apply; who may answer and the
    deadline; Submit, Details (the rest, in a modal) and Cancel. `items`: each question's
    row (the close's facts), where it has one.

    `nonce` makes the block ids fresh each time a form is (re)built, so Slack keeps no
    stale input state; the Submit handler reads values by question number, not nonce.
    """
    blocks = card_blocks(
        ask,
        block_id=lambda kind, number: block_id(kind, number, nonce),
        items=items,
        external=external,
        expanded=expanded,
        names=names,
        picks=picks,
        typed=typed,
    )
    blocks.append(who_may_answer_block(who_may_answer, deadline, nonce))
    actions = form_actions(question_id, nonce, confirm, details=True)
    if not expanded and any(q.kind.assigns for q in ask.questions):
        actions["elements"].insert(
            2,
            {
                "type": "button",
                "action_id": EXPAND_ACTION,
                "text": plain("Reassign", MAX_BUTTON_TEXT),
                "value": cut(question_id, 2000),
            },
        )
    blocks.append(actions)
    if not fits(blocks) and not external:
        # Too big for one message: large menus served from the store (external_select).
        return question_form(
            ask,
            question_id=question_id,
            who_may_answer=who_may_answer,
            nonce=nonce,
            external=True,
            deadline=deadline,
            confirm=confirm,
            items=items,
            expanded=expanded,
            names=names,
            picks=picks,
            typed=typed,
        )
    return blocks


def form_actions(
    question_id: str, nonce: str, confirm: str | None, *, details: bool = False
) -> dict[str, Any]:
    """Submit (with a confirm dialog when the answer is irreversible), Details (the card's
    detail in a modal) and Cancel."""
    submit: dict[str, Any] = {
        "type": "button",
        "action_id": SUBMIT_ACTION,
        "text": plain("Submit", MAX_BUTTON_TEXT),
        "style": "primary",
        "value": cut(question_id, 2000),
    }
    if confirm:  # an irreversible answer: Slack shows the dialog before the payload is sent
        submit["confirm"] = {
            "title": plain("Post to the ledger?", MAX_CONFIRM_TITLE),
            "text": plain(confirm, MAX_CONFIRM_TEXT),
            "confirm": plain("Submit", MAX_CONFIRM_BUTTON),
            "deny": plain("Not yet", MAX_CONFIRM_BUTTON),
        }
    return {
        "type": "actions",
        "block_id": block_id("a", 0, nonce),
        "elements": [
            submit,
            *(
                [
                    {
                        "type": "button",
                        "action_id": DETAILS_ACTION,
                        "text": plain("Details", MAX_BUTTON_TEXT),
                        "value": cut(question_id, 2000),
                    }
                ]
                if details
                else []
            ),
            {
                "type": "button",
                "action_id": CANCEL_ACTION,
                "text": plain("Cancel", MAX_BUTTON_TEXT),
                "value": cut(question_id, 2000),
                "confirm": {
                    "title": plain("Not now?", MAX_CONFIRM_TITLE),
                    "text": plain(
                        "The close goes on without these answers and waits for them at the end; "
                        "nothing is assumed or posted. Decide on the close's message brings them back.",
                        MAX_CONFIRM_TEXT,
                    ),
                    "confirm": plain("Not now", MAX_CONFIRM_BUTTON),
                    "deny": plain("Keep answering", MAX_CONFIRM_BUTTON),
                },
            },
        ],
    }


def deadline_note(ask: Ask, expires_at: str | None) -> str | None:
    """What happens if nobody answers in time, for the form's context line."""
    if not expires_at:
        return None
    then = (
        "the recommended answers are applied"
        if has_defaults(ask)
        else "the question expires unanswered"
    )
    return f"⌛ If nobody answers by {when_text(expires_at)}, {then}."


def chosen_option(action_id: str) -> int | None:
    """The option number a choice button stands for (None: not a choice button)."""
    m = CHOICE_ACTION_RE.match(action_id or "")
    return int(m.group(1)) if m else None


def question_text(ask: Ask) -> str:
    """The notification text of a form (the fallback where blocks are not shown)."""
    return cut(f"Your decision is needed: {ask.questions[0].question}", 300)

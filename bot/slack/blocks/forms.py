"""A question's form: each question's input (buttons, a select, a typed answer), the Why box,
who may answer and the deadline, Submit and Cancel; the external select's options."""

from __future__ import annotations

import re
from typing import Any

from bot.close import for_people
from bot.core.questions import Ask, Question, has_defaults
from bot.slack.blocks.actions import (
    ANSWER_ACTION,
    BLOCK_PREFIX,
    CANCEL_ACTION,
    CHOICE_ACTION_RE,
    OTHER_ACTION,
    PER_QUESTION_WHY,
    SUBMIT_ACTION,
    WHY_ACTION,
)
from bot.slack.blocks.limits import (
    MAX_BUTTON_TEXT,
    MAX_CHOICE_BUTTONS,
    MAX_CONFIRM_BUTTON,
    MAX_CONFIRM_TEXT,
    MAX_CONFIRM_TITLE,
    MAX_ID,
    MAX_LABEL,
    MAX_OPTION_DESCRIPTION,
    MAX_OPTION_TEXT,
    MAX_SELECT_OPTIONS,
)
from bot.slack.blocks.text import (
    context,
    cut,
    escape,
    fits,
    plain,
    section,
    split_text,
    when_text,
)


def block_id(kind: str, number: int, nonce: str) -> str:
    return cut(f"{BLOCK_PREFIX}:{kind}:{number}:{nonce}", MAX_ID)


def why_input(number: int, nonce: str) -> dict[str, Any]:
    """The optional Why box of question `number`: required only where it overrides."""
    return {
        "type": "input",
        "block_id": block_id("w", number, nonce),
        "label": plain("Why (only if you choose other than recommended)", MAX_LABEL),
        "optional": True,
        "element": {"type": "plain_text_input", "action_id": WHY_ACTION, "max_length": 3000},
    }


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


def _described_apart(q: Question) -> bool:
    """Whether the options' descriptions go in the question's text (one too long for a radio
    description, or a menu, which shows none) rather than under each option."""
    few = len(q.options) <= MAX_CHOICE_BUTTONS
    return any(o.description for o in q.options) and (
        not few or any(len(o.description) > MAX_OPTION_DESCRIPTION for o in q.options)
    )


def _option(q: Question, number: int, *, with_description: bool, compact: bool) -> dict[str, Any]:
    opt = q.options[number - 1]
    marks = " ⭐" if q.recommended == number else ""
    if (sure := percent(opt.confidence)) and q.is_choice:
        marks += f" {sure}"
    prefix = f"{number}. " if _described_apart(q) and not compact else ""
    limit = 40 if compact else MAX_OPTION_TEXT
    out: dict[str, Any] = {
        "text": plain(prefix + fit(opt.label, limit - len(prefix) - len(marks)) + marks, limit),
        "value": str(number),
    }
    if with_description and opt.description and not _described_apart(q):
        out["description"] = plain(opt.description, MAX_OPTION_DESCRIPTION)
    return out


def _element(q: Question, *, compact: bool, external: bool = False) -> dict[str, Any]:
    few = len(q.options) <= MAX_CHOICE_BUTTONS
    options = [
        _option(q, n, with_description=few, compact=compact) for n in range(1, len(q.options) + 1)
    ]
    return q.kind.element(q, options, action_id=ANSWER_ACTION, external=external)


def search_options(
    q: Question, query: str, limit: int = MAX_SELECT_OPTIONS
) -> list[dict[str, Any]]:
    """Options of a large question whose label contains `query`, for an external select."""
    needle = query.strip().casefold()
    numbers = [n for n, o in enumerate(q.options, start=1) if needle in o.label.casefold()]
    return [_option(q, n, with_description=False, compact=False) for n in numbers[:limit]]


def _option_details(q: Question) -> str:
    """'*1.* what option 1 books' per line, one line per option (never "2, 4." merged: each
    option shows its own entry, the one way every front end shows it)."""
    return "\n".join(
        f"*{n}.* {escape(o.description)}" for n, o in enumerate(q.options, start=1) if o.description
    )


def _question_sections(
    q: Question,
    number: int,
    total: int,
    *,
    compact: bool,
    listed: bool = False,
    details: bool = True,
) -> list[str]:
    """The question as mrkdwn: its text, what each option books (when that cannot ride under
    the option), and the recommendation's reasoning — each option's words once, never cut."""
    head = f"*{number}/{total}" + (f" · {escape(q.header)}" if q.header else "") + "*"
    if not q.required:
        head += " _(optional)_"
    text = for_people(q.question)  # the [ref …] tag stays in the decision log
    if listed:  # the figures are in the form's table: not again as a list of lines
        text = "\n".join(
            line
            for line in text.splitlines()
            if not (line.startswith("• ") or line.rstrip(":") == "By account")
        )
    parts = [head, escape(text)]
    if details and _described_apart(q) and not compact:
        parts.append(_option_details(q))
    if q.recommended:
        sure = percent(q.confidence(q.recommended))
        rec = "⭐ *Recommended, preselected*" + (f" ({sure} confident)" if sure else "")
        if q.reasoning:
            rec += f": {escape(fit(q.reasoning, 300) if compact else q.reasoning)}"
        parts.append(rec)
    return split_text("\n".join(parts))


def question_form(
    ask: Ask,
    *,
    question_id: str,
    who_may_answer: str,
    nonce: str,
    compact: bool = False,
    external: bool = False,
    deadline: str | None = None,
    confirm: str | None = None,
    facts: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One message: the situation (with `facts`, a table block, after it), each question with its options once (the recommended one
    preselected), an Other box where allowed, a Why per question that has a recommendation
    (needed only when it is overridden), Submit and Cancel.

    `nonce` makes the block ids fresh each time a form is (re)built, so Slack keeps no
    stale input state; the Submit handler reads values by question number, not nonce.
    """
    blocks: list[dict[str, Any]] = [section(f"*🙋 Your decision is needed*\n{escape(ask.context)}")]
    total = sum(1 for q in ask.questions if not q.kind.assigns)
    for number, q in enumerate(ask.questions, start=1):
        if q.kind.assigns:
            # an owner or a due date: one labelled picker, the recommended value preselected
            blocks.append(
                {
                    "type": "input",
                    "block_id": block_id("q", number, nonce),
                    "label": plain(fit(q.question, 150), MAX_LABEL),
                    "optional": not q.required,
                    "element": q.kind.element(q, [], action_id=ANSWER_ACTION, external=external),
                }
            )
            continue
        shown = _question_sections(q, number, total, compact=compact, listed=facts is not None)
        blocks.extend(section(t) for t in shown)
        if facts is not None and number == 1:
            blocks.append(facts)
        few = len(q.options) <= MAX_CHOICE_BUTTONS
        options = [
            _option(q, n, with_description=few, compact=compact)
            for n in range(1, len(q.options) + 1)
        ]
        blocks.append(
            {
                "type": "input",
                "block_id": block_id("q", number, nonce),
                "label": plain(q.kind.label, MAX_LABEL),
                "optional": not q.required,
                "element": q.kind.element(q, options, action_id=ANSWER_ACTION, external=external),
            }
        )
        if q.allow_other and q.is_choice:
            blocks.append(
                {
                    "type": "input",
                    "block_id": block_id("o", number, nonce),
                    "label": plain("Other (your own answer, instead of a choice)", MAX_LABEL),
                    "optional": True,
                    "element": {
                        "type": "plain_text_input",
                        "action_id": OTHER_ACTION,
                        "max_length": 3000,
                    },
                }
            )
        if q.recommended is not None:
            blocks.append(why_input(number, nonce))
    blocks.append(who_may_answer_block(who_may_answer, deadline, nonce))
    blocks.append(form_actions(question_id, nonce, confirm))
    if not fits(blocks) and not external:
        # Too big for one message: first compact (no option details, shorter option texts),
        # then with large menus served from the store (external_select).
        return question_form(
            ask,
            question_id=question_id,
            who_may_answer=who_may_answer,
            nonce=nonce,
            compact=True,
            external=compact,
            deadline=deadline,
            confirm=confirm,
            facts=facts,
        )
    return blocks


def form_actions(question_id: str, nonce: str, confirm: str | None) -> dict[str, Any]:
    """Submit (with a confirm dialog when the answer is irreversible) and Cancel."""
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

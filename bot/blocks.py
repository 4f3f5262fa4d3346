"""Pure Block Kit builders: data in, list[dict] out, every Slack limit enforced here.

Nothing here talks to Slack. Text that came from the model or a user is escaped, so it
can never become `<!channel>` or a fake link, and cut to size with an ellipsis instead of
being rejected with `invalid_blocks`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from bot.core.names import named_text
from bot.core.questions import Ask, Outcome, Question, Response, answer_text, has_defaults

# Limits from SLACK.md.
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_CONTEXT_ELEMENTS = 10
MAX_LABEL = 2000
MAX_ID = 255
MAX_CHOICE_BUTTONS = 10
MAX_ACTIONS = 25  # elements of an actions block
MAX_SELECT_OPTIONS = 100
MAX_OPTION_TEXT = 75
MAX_OPTION_DESCRIPTION = 75
MAX_OPTION_VALUE = 150
MAX_BUTTON_TEXT = 75
MAX_CONFIRM_TITLE, MAX_CONFIRM_TEXT, MAX_CONFIRM_BUTTON = 100, 300, 30
MAX_MESSAGE_CHARS = 12_000  # Slack answers msg_blocks_too_long around 13k

SUBMIT_ACTION = "closebot_submit"
CANCEL_ACTION = "closebot_cancel"
STOP_ACTION = "closebot_stop"
RETRY_ACTION = "closebot_retry"
DECIDE_ACTION = "closebot_decide"  # a question put off: post its form again
CHANGE_ACTION = "closebot_change"  # before posting: ask a decision again
CHOICE_ACTION = "closebot_choose_"  # + the option's number: a choice made by its own button
CHOICE_ACTION_RE = re.compile(r"^closebot_choose_(\d+)$")
ANSWER_ACTION = "answer"
OTHER_ACTION = "other"
WHY_ACTION = "why"
BLOCK_PREFIX = "closebot"
PER_QUESTION_WHY = "v"  # a form whose questions each have their own Why (where it can be needed)

STEP_ICONS = {
    "done": "✅",
    "running": "⏳",
    "waiting": "🙋",
    "failed": "❌",
    "stopped": "⏹",
    "pending": "⚪",
}
STEP_WORDS = {
    "done": "done",
    "running": "running",
    "waiting": "waiting on you",
    "failed": "failed",
    "stopped": "stopped",
    "pending": "not run yet",
}


def escape(text: str) -> str:
    """Escape &, < and > so text is shown as written, never as a mention or a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_ESCAPED_MENTION = re.compile(r"&lt;@([UW][A-Z0-9]{2,})&gt;")

Namer = Callable[[str], str]  # a user id → the name to show (bot/core/names.py)


def outgoing(text: str, people: Iterable[str] = (), names: Namer | None = None) -> str:
    """Any text made safe to send to Slack, as `text` or mrkdwn: `&`, `<`, `>` escaped, so no
    `<!channel>`, no link and no mention survives — except mentions of `people`, whom the bot
    means to notify (who a form waits on), written as `<@U…>` on purpose. With `names`, every
    other `<@U…>` is shown as that person's name (escaped), never as an escaped mention."""
    allowed = {p for p in people if p and USER_ID.match(p)}

    def shown(m: re.Match[str]) -> str:
        if m.group(1) in allowed:
            return f"<@{m.group(1)}>"
        return escape(names(m.group(1))) if names is not None else m.group(0)

    return _ESCAPED_MENTION.sub(shown, escape(text))


def name_ids(text: str, user_ids: Iterable[str], names: Namer, *, safe: bool = True) -> str:
    """Bare user ids of these people (in text from the model or a tool result: 'decided by
    UALICE') shown as their names — escaped in `safe` text, as written in raw text that is
    escaped later; mentions are left as they are."""
    return named_text(text, user_ids, (lambda u: escape(names(u))) if safe else names)


def cut(text: str, limit: int) -> str:
    """Text no longer than `limit`, with an ellipsis where it was cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def split_text(text: str, limit: int = MAX_SECTION_TEXT) -> list[str]:
    """Split long text into pieces of at most `limit`, at line breaks where possible."""
    pieces: list[str] = []
    current = ""
    for line in text.splitlines():
        while len(line) > limit:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:limit])
            line = line[limit:]
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) > limit:
            pieces.append(current)
            current = line
        else:
            current = candidate
    if current or not pieces:
        pieces.append(current)
    return pieces


def mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}


def plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": cut(text, limit), "emoji": True}


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": mrkdwn(cut(text, MAX_SECTION_TEXT))}


def context(*texts: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [mrkdwn(cut(t, MAX_SECTION_TEXT)) for t in texts[:MAX_CONTEXT_ELEMENTS]],
    }


USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")


def person(who: str | None, default: str = "closebot") -> str:
    """A Slack user id as a mention; anything else (auto, timeout) as escaped text."""
    if who and USER_ID.match(who):
        return f"<@{who}>"
    return escape(who or default)


def mention_known(text: str, user_ids: Iterable[str]) -> str:
    """Turn the bare ids of the run's own people into mentions, after escaping; nothing else."""
    for uid in sorted({u for u in user_ids if u and USER_ID.match(u)}, key=len, reverse=True):
        text = re.sub(rf"(?<![<@\w]){uid}\b", f"<@{uid}>", text)
    return text


def text_blocks(
    text: str,
    *,
    max_blocks: int = MAX_BLOCKS,
    people: Iterable[str] = (),
    names: Namer | None = None,
    mention: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """Model text (mrkdwn) as sections, made safe (outgoing) and split; never more than
    `max_blocks`. With `names`, people read as names (the bare ids of the run's `people`, and
    every `<@U…>` but those of `mention`); without, the bare ids of `people` become mentions."""
    people = [p for p in people if p]
    if names is not None:
        safe = name_ids(outgoing(text, mention, names), people, names)
    else:
        safe = mention_known(outgoing(text, people), people)
    pieces = [p for p in split_text(safe) if p.strip()] or [" "]
    if len(pieces) > max_blocks:
        pieces = [*pieces[: max_blocks - 1], "… (cut: the full text is in the run's transcript)"]
    return [section(p) for p in pieces]


def fits(blocks: list[dict[str, Any]]) -> bool:
    """Within the block count and the rough size Slack accepts for one message."""
    return (
        len(blocks) <= MAX_BLOCKS
        and len(json.dumps(blocks, ensure_ascii=False)) <= MAX_MESSAGE_CHARS
    )


# -- status -------------------------------------------------------------


def stop_button(run_id: str) -> dict[str, Any]:
    """Stop, behind a confirm: the turn ends at its next step, open questions are cancelled."""
    return {
        "type": "button",
        "action_id": STOP_ACTION,
        "text": plain("Stop", MAX_BUTTON_TEXT),
        "style": "danger",
        "value": run_id,
        "confirm": {
            "title": plain("Stop this close?", MAX_CONFIRM_TITLE),
            "text": plain(
                "The close stops at its next step and any open question is cancelled. Nothing already posted is undone.",
                MAX_CONFIRM_TEXT,
            ),
            "confirm": plain("Stop", MAX_CONFIRM_BUTTON),
            "deny": plain("Keep going", MAX_CONFIRM_BUTTON),
        },
    }


def decide_buttons(waiting: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """One Decide button per question put off ((question id, what it asks)): it posts the
    same question again as a fresh form."""
    return [
        {
            "type": "button",
            "action_id": DECIDE_ACTION if n == 0 else f"{DECIDE_ACTION}_{n}",
            "text": plain(cut(f"Decide: {what}", MAX_BUTTON_TEXT), MAX_BUTTON_TEXT),
            "style": "primary",
            "value": question_id,
        }
        for n, (question_id, what) in enumerate(waiting[:MAX_DECIDE])
    ]


def change_menu(run_id: str, decisions: Sequence[tuple[str, str]]) -> dict[str, Any] | None:
    """'Change a decision': a menu of the decisions taken ((value, what was decided)); choosing
    one asks it again. None when there is nothing to change."""
    if not decisions:
        return None
    return {
        "type": "static_select",
        "action_id": CHANGE_ACTION,
        "placeholder": plain("Change a decision", MAX_BUTTON_TEXT),
        "options": [
            {
                "text": plain(fit(what, MAX_OPTION_TEXT), MAX_OPTION_TEXT),
                "value": value[:MAX_OPTION_VALUE],
            }
            for value, what in decisions[:MAX_SELECT_OPTIONS]
        ],
        "confirm": {
            "title": plain("Change this decision?", MAX_CONFIRM_TITLE),
            "text": plain(
                "The question is asked again. Your new answer is recorded beside the old one, the "
                "batch is drafted again and needs a new approval.",
                MAX_CONFIRM_TEXT,
            ),
            "confirm": plain("Ask it again", MAX_CONFIRM_BUTTON),
            "deny": plain("Keep it", MAX_CONFIRM_BUTTON),
        },
    }


MAX_DECIDE = 4  # Decide buttons on one message (the rest show once these are decided)


def root_blocks(
    title: str,
    state: str,
    *,
    stop_run_id: str | None = None,
    decide: Sequence[tuple[str, str]] = (),
    change: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The close's message in the channel: what it is and, live, where it stands (running
    step, waiting on whom, finished / stopped / failed with the reason); Stop while it runs,
    Decide for each question put off, and 'Change a decision' before posting.
    `title` and `state` are mrkdwn the caller made safe."""
    out: list[dict[str, Any]] = [section(f"*{title}*"), context(state)]
    elements = [*decide_buttons(decide), *([change] if change else [])]
    if stop_run_id:
        elements.append(stop_button(stop_run_id))
    if elements:
        out.append(
            {
                "type": "actions",
                "block_id": block_id("root-stop", 0, stop_run_id or "run"),
                "elements": elements,
            }
        )
    return out


def status_blocks(
    title: str,
    steps: Iterable[tuple[str, str]],
    note: str | None = None,
    *,
    stop_run_id: str | None = None,
) -> list[dict[str, Any]]:
    """The status message: one line per step, moved in place as the run proceeds.

    `note` is mrkdwn the caller made safe (it may mention who stopped the run); a Stop
    button is shown while the run can still be stopped.
    """
    lines = [
        f"{STEP_ICONS.get(state, '⚪')} {escape(name)} — {STEP_WORDS.get(state, state)}"
        for name, state in steps
    ]
    blocks: list[dict[str, Any]] = [section(f"*{escape(title)}*\n" + "\n".join(lines))]
    if note:
        blocks.append(context(note))
    if stop_run_id:
        blocks.append(
            {
                "type": "actions",
                "block_id": block_id("stop", 0, stop_run_id),
                "elements": [
                    {
                        "type": "button",
                        "action_id": STOP_ACTION,
                        "text": plain("Stop", MAX_BUTTON_TEXT),
                        "style": "danger",
                        "value": stop_run_id,
                        "confirm": {
                            "title": plain("Stop this close?", MAX_CONFIRM_TITLE),
                            "text": plain(
                                "The close stops at its next step and any open question is cancelled. Nothing already posted is undone.",
                                MAX_CONFIRM_TEXT,
                            ),
                            "confirm": plain("Stop", MAX_CONFIRM_BUTTON),
                            "deny": plain("Keep going", MAX_CONFIRM_BUTTON),
                        },
                    }
                ],
            }
        )
    return blocks


def retry_blocks(safe_text: str, run_id: str) -> list[dict[str, Any]]:
    """A failed run's message (mrkdwn already made safe) with a Retry button."""
    return [
        section(f"❌ {safe_text}"),
        {
            "type": "actions",
            "block_id": block_id("retry", 0, run_id),
            "elements": [
                {
                    "type": "button",
                    "action_id": RETRY_ACTION,
                    "text": plain("Retry", MAX_BUTTON_TEXT),
                    "style": "primary",
                    "value": run_id,
                }
            ],
        },
    ]


# -- question forms -----------------------------------------------------


def block_id(kind: str, number: int, nonce: str) -> str:
    return cut(f"{BLOCK_PREFIX}:{kind}:{number}:{nonce}", MAX_ID)


def _why_input(number: int, nonce: str) -> dict[str, Any]:
    """The optional Why box of question `number`: required only where it overrides."""
    return {
        "type": "input",
        "block_id": block_id("w", number, nonce),
        "label": plain("Why (only if you choose other than recommended)", MAX_LABEL),
        "optional": True,
        "element": {"type": "plain_text_input", "action_id": WHY_ACTION, "max_length": 3000},
    }


def _who_may_answer(who_may_answer: str, deadline: str | None, nonce: str) -> dict[str, Any]:
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
    """'*1.* what option 1 books' per line; options that say the same thing share a line."""
    said: dict[str, list[int]] = {}
    for n, o in enumerate(q.options, start=1):
        if o.description:
            said.setdefault(o.description, []).append(n)
    return "\n".join(
        f"*{', '.join(map(str, numbers))}.* {escape(text)}" for text, numbers in said.items()
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
    text = q.question
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
            blocks.append(_why_input(number, nonce))
    blocks.append(_who_may_answer(who_may_answer, deadline, nonce))
    blocks.append(_form_actions(question_id, nonce, confirm))
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


def _form_actions(question_id: str, nonce: str, confirm: str | None) -> dict[str, Any]:
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


def table(header: list[str], rows: list[list[str]], *, right: Iterable[int] = ()) -> dict[str, Any]:
    """A `table` block (first row the header); columns in `right` aligned right (amounts)."""
    width = len(header)
    aligned = set(right)

    def cell(text: str) -> dict[str, Any]:
        return {"type": "raw_text", "text": text or " "}

    return {
        "type": "table",
        "rows": [[cell(t) for t in header], *([cell(t) for t in row] for row in rows)][:100],
        "column_settings": [
            {"align": "right"} if i in aligned else {"is_wrapped": True} for i in range(width)
        ],
    }


def table_text(header: list[str], rows: list[list[str]]) -> str:
    """The same rows as text, for the notification and wherever tables are not drawn."""
    return "\n".join(" · ".join(c for c in row if c) for row in [header, *rows])


def deadline_note(ask: Ask, expires_at: str | None) -> str | None:
    """What happens if nobody answers in time, for the form's context line."""
    if not expires_at:
        return None
    then = (
        "the recommended answers are applied"
        if has_defaults(ask)
        else "the question expires unanswered"
    )
    return f"⌛ If nobody answers by {_when(expires_at)}, {then}."


def approval_form(
    ask: Ask,
    *,
    question_id: str,
    who_may_answer: str,
    nonce: str,
    confirm: str,
    facts: dict[str, Any] | None = None,
    deadline: str | None = None,
) -> list[dict[str, Any]]:
    """The posting approval: the situation, the batch by account (`facts`), what each choice
    does (once), a Why, who may approve, and one button per choice (Approve / Keep as
    draft / Reject). Only the button that approves carries the `confirm` dialog: the other
    choices post nothing. The buttons answer by themselves: no radio buttons, no Submit
    (the documented exception to a form's one Submit, DESIGN.md's interface contract)."""
    q = ask.questions[0]
    blocks: list[dict[str, Any]] = [section(f"*🙋 Your decision is needed*\n{escape(ask.context)}")]
    shown = _question_sections(q, 1, 1, compact=False, listed=facts is not None, details=False)
    blocks.extend(section(t) for t in shown)
    if facts is not None:
        blocks.append(facts)
    what = "\n".join(
        f"• *{escape(o.label)}*" + (f" — {escape(o.description)}" if o.description else "")
        for o in q.options
    )
    blocks.extend(section(t) for t in split_text(what))
    if q.recommended is not None:
        blocks.append(_why_input(1, nonce))
    blocks.append(_who_may_answer(who_may_answer, deadline, nonce))
    buttons = []
    for number, option in enumerate(q.options[:MAX_ACTIONS], start=1):
        mark = " ⭐" if q.recommended == number else ""
        button: dict[str, Any] = {
            "type": "button",
            "action_id": f"{CHOICE_ACTION}{number}",
            "text": plain(fit(option.label, MAX_BUTTON_TEXT - len(mark)) + mark, MAX_BUTTON_TEXT),
            "value": cut(question_id, 2000),
        }
        if approving(option.label):
            button["style"] = "primary"
            button["confirm"] = {
                "title": plain("Post to the ledger?", MAX_CONFIRM_TITLE),
                "text": plain(confirm, MAX_CONFIRM_TEXT),
                "confirm": plain("Post", MAX_CONFIRM_BUTTON),
                "deny": plain("Not yet", MAX_CONFIRM_BUTTON),
            }
        buttons.append(button)
    blocks.append({"type": "actions", "block_id": block_id("a", 0, nonce), "elements": buttons})
    return blocks


def approving(label: str) -> bool:
    """An option that approves posting (as bot.close.controls.approves reads an answer)."""
    return label.casefold().startswith("approve")


def chosen_option(action_id: str) -> int | None:
    """The option number a choice button stands for (None: not a choice button)."""
    m = CHOICE_ACTION_RE.match(action_id or "")
    return int(m.group(1)) if m else None


def question_text(ask: Ask) -> str:
    """The notification text of a form (the fallback where blocks are not shown)."""
    return cut(f"Your decision is needed: {ask.questions[0].question}", 300)


class FormError(ValueError):
    """A submitted form could not be read as answers."""


def read_form(ask: Ask, values: dict[str, dict[str, Any]]) -> dict[int, Response]:
    """state.values of a submitted form → a Response per question (validation is the caller's)."""
    if not isinstance(values, dict):
        raise FormError("the form sent no values")
    raw: dict[int, dict[str, Any]] = {}
    for bid, actions in values.items():
        if not isinstance(actions, dict):
            continue
        parsed = parse_block_id(bid)
        if parsed is None:
            continue
        kind, number = parsed
        for action in actions.values():
            if not isinstance(action, dict):
                raise FormError(f"question {number}: the form sent a value this bot did not build")
            raw.setdefault(number, {})[kind] = action
    responses: dict[int, Response] = {}
    for number, q in enumerate(ask.questions, start=1):
        entry = raw.get(number, {})
        other = _typed(entry.get("o") or {}) or None
        try:
            responses[number] = q.kind.read(q, entry.get("q") or {}, other)
        except (TypeError, ValueError):
            raise FormError(
                f"question {number}: the form sent an option this bot did not build"
            ) from None
    return responses


def read_choice(ask: Ask, number: int) -> dict[int, Response]:
    """A form answered by a choice's own button: option `number` of its one question."""
    if len(ask.questions) != 1 or not 1 <= number <= len(ask.questions[0].options):
        raise FormError("the form sent a choice this bot did not build")
    return {1: Response(selected=(number,))}


def _typed(action: dict[str, Any]) -> str:
    """The text of a text input's state ('' when there is none, or it is not text)."""
    value = action.get("value")
    return value.strip() if isinstance(value, str) else ""


def has_why_box(shown: Any) -> bool:
    """Whether a form as Slack shows it (the payload's message blocks) has the "Why" box;
    forms posted by releases before it (68fe5b6) have none. Unknown: assume it has."""
    if not isinstance(shown, list):
        return True
    ids = [str(b.get("block_id") or "") for b in shown if isinstance(b, dict)]
    return any(i.startswith(f"{BLOCK_PREFIX}:{PER_QUESTION_WHY}:") for i in ids) or any(
        (parse_block_id(i) or ("", 0))[0] == "w" for i in ids
    )


def read_rationale(values: dict[str, dict[str, Any]]) -> str | dict[int, str] | None:
    """The form's 'Why': per question number (each question has its own box), or the one
    text of a form built before that (its box is question 0)."""
    whys: dict[int, str] = {}
    for bid, actions in (values or {}).items():
        parsed = parse_block_id(bid)
        if not (parsed and parsed[0] == "w" and isinstance(actions, dict)):
            continue
        for action in actions.values():
            text = _typed(action) if isinstance(action, dict) else ""
            if parsed[1] == 0:
                return text or None
            if text:
                whys[parsed[1]] = text
    return whys


def answered_form(ask: Ask, outcome: Outcome, *, who: str | None = None) -> list[dict[str, Any]]:
    """The form after it was settled: read-only, no input elements left; `who` is the
    answerer's name (mrkdwn made safe), else a mention of their id."""
    status, answers, by, source, at = (
        outcome.status,
        outcome.answers,
        outcome.by,
        outcome.source,
        outcome.at,
    )
    blocks: list[dict[str, Any]] = [section(f"*Decision* · {escape(ask.context)}")]
    assigned: list[str] = []  # owners and due dates: one line each, in one section
    for number, q in enumerate(ask.questions, start=1):
        entry = (answers or {}).get(str(number), {})
        shown = escape(answer_text(entry)) if status == "answered" and entry else "—"
        if q.kind.assigns:
            kept = escape(q.initial or "—") if entry.get("skipped") else shown
            assigned.append(f"{escape(fit(q.question, 150))} → *{kept}*")
            continue
        title = escape(q.header) if q.header else f"Question {number}"
        blocks.append(section(f"*{title}*: {escape(fit(q.question, 600))}\n→ *{shown}*"))
    blocks.extend(section(t) for t in split_text("\n".join(assigned))[:20] if assigned)
    when = _when(at)
    who = who or person(by)
    if status == "answered":
        chose = "the answers above"
        first = (answers or {}).get("1")
        if len(ask.questions) == 1 and first:
            chose = f"*{escape(answer_text(first))}*"
        line = {
            "timeout_default": f"⌛ Timed out: the recommended answers were applied · source: timeout_default · {when}",
            "auto_default": f"🤖 Auto mode applied the recommended answers · source: auto_default · {when}",
        }.get(source or "", f"✅ {who} chose {chose} · source: {escape(source or 'user')} · {when}")
    elif status == "cancelled":
        line = f"🚫 Cancelled by {who} · {when}"
    elif status == "deferred":
        line = (
            f"⏸ Put off by {who} (not now) · {when} · the close goes on without it; "
            "*Decide* on the close's message brings it back"
        )
    else:
        line = f"⌛ Expired unanswered · {when}"
    if outcome.rationale:
        blocks.append(section(f"*Why*: {cut(escape(outcome.rationale), 2000)}"))
    blocks.append(context(line))
    return blocks


def _when(at: str | None) -> str:
    if not at:
        return ""
    try:
        moment = datetime.fromisoformat(at)
    except ValueError:
        return escape(at)
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time}}|{moment:%Y-%m-%d %H:%M} UTC>"


def notice_blocks(safe_text: str) -> list[dict[str, Any]]:
    """A short message to one person (ephemeral) or the thread; the text made safe by outgoing()."""
    return [section(safe_text)]


def error_blocks(text: str) -> list[dict[str, Any]]:
    return [section(f"❌ {escape(text)}")]

"""A submitted form read back: the answers, the Why, a choice's own button; FormError when it
cannot be read."""

from __future__ import annotations

from typing import Any

from bot.core.questions import Ask, Response
from bot.slack.blocks.actions import BLOCK_PREFIX, OTHER_VALUE, PER_QUESTION_WHY, SUBMIT_ACTION
from bot.slack.blocks.forms import parse_block_id


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
    shared = _typed((raw.get(0) or {}).get("o") or {}) or None  # a table card's one Other
    to_other = [n for n, e in raw.items() if n and _picked(e.get("q") or {}) == OTHER_VALUE]
    if len(to_other) > 1:
        raise FormError("one typed answer per card: set only one row to Other…")
    if shared and not to_other:
        raise FormError("your typed answer is for which item? Set its row to Other…")
    if to_other and not shared:
        raise FormError(f"question {to_other[0]} is set to Other…: type your answer in Other")
    responses: dict[int, Response] = {}
    for number, q in enumerate(ask.questions, start=1):
        entry = raw.get(number, {})
        other = _typed(entry.get("o") or {}) or None
        if number in to_other:
            entry, other = {k: v for k, v in entry.items() if k != "q"}, shared
        if q.kind.assigns and "q" not in entry:
            # a card that lists its owners and due dates without their pickers (not
            # expanded): the recommended ones stand, as if the pickers were untouched
            responses[number] = q.kind.default(q) or Response(skipped=True)
            continue
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


def _picked(action: dict[str, Any]) -> str | None:
    """The value of a menu's selected option, if it has one."""
    option = action.get("selected_option")
    value = option.get("value") if isinstance(option, dict) else None
    return value if isinstance(value, str) else None


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


def read_picks(values: Any) -> tuple[dict[int, str | list[str]], dict[str, str]]:
    """What a person has chosen and typed on a card so far (a block_actions payload's
    state.values): each question's picked option value(s), and the text in its Other ("o")
    and Why ("w") boxes — to redraw the card with the boxes its choices call for."""
    picks: dict[int, str | list[str]] = {}
    typed: dict[str, str] = {}
    for bid, actions in (values or {}).items() if isinstance(values, dict) else ():
        parsed = parse_block_id(str(bid))
        if parsed is None or not isinstance(actions, dict):
            continue
        kind, number = parsed
        for action in actions.values():
            if not isinstance(action, dict):
                continue
            if kind == "q":
                many = [
                    o["value"]
                    for o in action.get("selected_options") or []
                    if isinstance(o, dict) and isinstance(o.get("value"), str)
                ]
                one = _picked(action)
                if one is not None:
                    picks[number] = one
                elif many:
                    picks[number] = many
            elif text := _typed(action):
                typed[kind] = text
    return picks, typed


def form_parts(shown: Any) -> tuple[str | None, str | None, set[str]]:
    """A card as Slack shows it (a payload's message blocks): the question its Submit answers,
    the nonce of its block ids, and which of its boxes it shows ("o", "w")."""
    question_id = nonce = None
    boxes: set[str] = set()
    for block in shown if isinstance(shown, list) else []:
        if not isinstance(block, dict):
            continue
        bid = str(block.get("block_id") or "")
        parsed = parse_block_id(bid)
        if parsed is not None:
            nonce = nonce or bid.split(":", 3)[3]
            if parsed[0] in ("o", "w"):
                boxes.add(parsed[0])
        for element in block.get("elements") or []:
            if isinstance(element, dict) and element.get("action_id") == SUBMIT_ACTION:
                question_id = str(element.get("value") or "") or None
    return question_id, nonce, boxes

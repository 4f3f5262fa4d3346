"""A decision card's "Other" and "Why" boxes, shown only when they apply (issue 30): the card
opens with neither; choosing "Other…" adds the box for the typed answer, choosing against an
accounting decision's ⭐ adds the Why box (required then: core's needs_why, the same rule the
server checks on Submit). Block Kit shows no input conditionally inside a message, so the
choice's input block sets `dispatch_action` — a choice in it then sends a block_actions
payload (docs.slack.dev/reference/interaction-payloads/block_actions-payload, "To send this
block_actions payload for interactive components used within input blocks, you can set
dispatch_action to true in those input blocks"; .../block-kit/blocks/input-block) — and the
card is redrawn with the box through the interaction's response_url (listeners/forms.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.core.questions import Ask, Question, Response, needs_why, why_applies
from bot.slack.blocks.actions import OTHER_ACTION, OTHER_VALUE, WHY_ACTION
from bot.slack.blocks.limits import MAX_LABEL
from bot.slack.blocks.text import plain

# What a person has picked on a card so far, by question number: an option's value (its
# number as text, or OTHER_VALUE), or a list of them (a question of several choices).
Picks = Mapping[int, str | list[str]]
# What they typed so far in the card's boxes: "o" (their own answer), "w" (why).
Typed = Mapping[str, str]


def dispatches(q: Question) -> bool:
    """Whether choosing in this question's input can add a box: its choice sends a
    block_actions payload (`dispatch_action`) so the card can be redrawn."""
    return q.is_choice and (q.allow_other or why_applies(q))


def picked_responses(ask: Ask, picks: Picks) -> dict[int, Response]:
    """The picks as the answers they would be on Submit (a typed answer not yet typed)."""
    out: dict[int, Response] = {}
    for number, value in picks.items():
        if not 1 <= number <= len(ask.questions):
            continue
        q = ask.questions[number - 1]
        values = value if isinstance(value, list) else [value]
        chosen = tuple(int(v) for v in values if v.isdigit() and 1 <= int(v) <= len(q.options))
        out[number] = Response(selected=chosen, other="…" if OTHER_VALUE in values else None)
    return out


def other_picked(picks: Picks) -> bool:
    return any(
        OTHER_VALUE in (value if isinstance(value, list) else [value]) for value in picks.values()
    )


def why_needed(ask: Ask, picks: Picks) -> bool:
    """Whether the picks override an accounting decision's ⭐ (the Why box is then required)."""
    return bool(needs_why(ask, picked_responses(ask, picks)))


def other_box(block_id: str, label: str, initial: str | None = None) -> dict[str, Any]:
    """The card's one box for a typed answer."""
    return _text_box(block_id, OTHER_ACTION, label, initial, optional=True)


def why_box(block_id: str, initial: str | None = None) -> dict[str, Any]:
    """The card's one Why box: required only where the answer overrides a ⭐ (the server
    checks it: bot/core/questions/responses.needs_why), so labelled so, not "(optional)"."""
    return _text_box(block_id, WHY_ACTION, "Why (required if not the ⭐)", initial, optional=False)


def _text_box(
    block_id: str, action_id: str, label: str, initial: str | None, *, optional: bool
) -> dict[str, Any]:
    """An input block of one plain-text box (3,000 characters, Slack's most), kept as typed."""
    element: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": action_id,
        "max_length": 3000,
    }
    if initial:
        element["initial_value"] = initial[:3000]
    return {
        "type": "input",
        "block_id": block_id,
        "label": plain(label, MAX_LABEL),
        "optional": optional,
        "element": element,
    }


def typed_of(typed: Typed | None, key: str) -> str | None:
    return (typed or {}).get(key) or None

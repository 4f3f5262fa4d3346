"""A close's own messages: the root message in the channel (Stop, Decide, Change a decision)
and the status message of its steps, the failure's Retry."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from bot.slack.blocks.actions import CHANGE_ACTION, DECIDE_ACTION, RETRY_ACTION, STOP_ACTION
from bot.slack.blocks.forms import block_id, fit
from bot.slack.blocks.limits import (
    MAX_BUTTON_TEXT,
    MAX_CONFIRM_BUTTON,
    MAX_CONFIRM_TEXT,
    MAX_CONFIRM_TITLE,
    MAX_OPTION_TEXT,
    MAX_OPTION_VALUE,
    MAX_SELECT_OPTIONS,
)
from bot.slack.blocks.text import context, cut, escape, plain, section

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

"""Recording a person's decision, bound to the question that asked it: the tools
(`DecisionTools`), reading the answer (`answers`), recording it and what its kind sets off
(`recording`; the follow-ups themselves are the kinds' hooks in `bot/close/kinds/`), changing
it before posting (`changes`) and deciding a group at once (`grouped`)."""

from __future__ import annotations

from bot.close.decisions.changes import (
    CannotChange,
    ask_change,
    change_refusal,
    changeable_decisions,
)
from bot.close.decisions.tools import DecisionTools

__all__ = [
    "CannotChange",
    "DecisionTools",
    "ask_change",
    "change_refusal",
    "changeable_decisions",
]

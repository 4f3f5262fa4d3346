"""The prose-question fallback (seed 001's question detector): a turn that ends on a
question in plain text would end the run with nobody asked, so the loop has the model
restate it once as a form (RESTATE), nudged with tool_choice auto (NUDGE), never forced."""

from __future__ import annotations

import re

RESTATE = (
    "(closebot) You ended your turn with a question in plain text, which nobody can answer "
    "there. Ask it now with ask_user_question: the situation and its figures in `context`, "
    "the choices as options with what each books, your recommendation and why."
)
# The restatement is nudged, never forced: forced tool choice (`any`, `tool`) returns a 400 on
# the default model (https://platform.claude.com/docs/en/models/sonnet-5-5/whats-new-sonnet-5-5,
# "Forced tool use returns an error"), and with thinking on any model
# (https://platform.claude.com/docs/en/build-with-claude/extended-thinking).
NUDGE = {"type": "auto"}
_QUESTION_END = re.compile(r"\?[\s\*_)\]\"'”’»]*$")


def asks_in_prose(text: str) -> bool:
    """Whether a turn's last words put a question to the person (its last sentence ends in
    '?'): then the loop has the model restate it as a form."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return bool(lines) and bool(_QUESTION_END.search(lines[-1]))

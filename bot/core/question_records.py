"""A stored question read back as the ask_user_question contract's objects: the Ask it
was made from and how it ended (the Outcome the model reads)."""

from __future__ import annotations

from bot.core.questions import Ask, Outcome
from bot.store import QuestionRecord


def outcome_of(record: QuestionRecord) -> Outcome:
    """How a settled question ended: status, who, how, when, and the answers."""
    return Outcome(
        status=record.status,
        source=record.source,
        by=record.answered_by,
        at=record.answered_at,
        answers=record.answer,
        rationale=record.rationale,
    )


def ask_of(record: QuestionRecord) -> Ask:
    """The validated Ask a stored question was made from."""
    return Ask.from_record(record.context, record.questions)

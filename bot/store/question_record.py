"""A question's record (one ask_user_question call) and the questions table's reads: by id,
by run, what is due, and where each form is in Slack."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.core.errors import NotFoundError
from bot.core.tenancy import current
from bot.store.core import StoreCore, known


@dataclass(frozen=True)
class QuestionRecord:
    """One ask_user_question call: 1–5 questions shown and answered together."""

    id: str
    run_id: str
    context: str
    questions: list[dict[str, Any]]
    status: str
    answer: dict[str, Any] | None
    answered_by: str | None
    source: str | None
    answered_at: str | None
    channel: str | None
    message_ts: str | None
    created_at: str
    expires_at: str | None
    rationale: str | None = None
    overridden: int | None = None
    settled_shown_at: str | None = None
    remind_at: str | None = None
    reopened_at: str | None = None  # put off, then brought back by Decide
    changes: str | None = None  # the question whose decision this one changes
    told_at: str | None = None  # a late answer (after Decide, or a change) told to the agent

    @property
    def late(self) -> bool:
        """Answered after the agent's turn moved on: its answer reaches the agent as a message."""
        return bool(self.reopened_at or self.changes)


def question_from_row(r: dict[str, Any]) -> QuestionRecord:
    """A questions row with its JSON columns read."""
    r["questions"] = json.loads(r["questions"])
    r["answer"] = json.loads(r["answer"]) if r["answer"] else None
    return QuestionRecord(**known(QuestionRecord, r))


class QuestionReads:
    """The questions table read, and the small updates that track a form in Slack."""

    def __init__(self, core: StoreCore) -> None:
        self.core = core

    def get(self, question_id: str) -> QuestionRecord:
        rows = self.core.query("select * from questions where id = ?", (question_id,))
        if not rows or not self._ours(rows[0]["run_id"]):
            raise NotFoundError(f"no question with id {question_id!r}")
        return question_from_row(rows[0])

    def _ours(self, run_id: str) -> bool:
        """Whether the work in hand may reach the run's questions: any, outside a workspace;
        inside one, only its own runs' (issue 32; bot/core/tenancy.py)."""
        tenant = current()
        if tenant is None:
            return True
        rows = self.core.query("select team_id, enterprise_id from runs where id = ?", (run_id,))
        return bool(rows) and tenant.owns(rows[0]["team_id"], rows[0]["enterprise_id"])

    def of_run(self, run_id: str) -> list[QuestionRecord]:
        rows = self.core.query(
            "select * from questions where run_id = ? order by created_at, rowid", (run_id,)
        )
        return [question_from_row(r) for r in rows]

    def pending(self, run_id: str) -> QuestionRecord | None:
        rows = self.core.query(
            "select * from questions where run_id = ? and status = 'pending' order by rowid limit 1",
            (run_id,),
        )
        return question_from_row(rows[0]) if rows else None

    def due(self) -> list[QuestionRecord]:
        """Pending questions whose expiry time has passed."""
        rows = self.core.query(
            "select id from questions where status = 'pending' and expires_at is not null and expires_at <= ? order by expires_at",
            (self.core.now(),),
        )
        return [self.get(r["id"]) for r in rows]

    def for_message(self, *, channel: str, message_ts: str) -> QuestionRecord | None:
        """The question whose form is the message at (channel, ts)."""
        rows = self.core.query(
            "select id from questions where channel = ? and message_ts = ?", (channel, message_ts)
        )
        return self.get(rows[0]["id"]) if rows else None

    def set_message(self, question_id: str, *, channel: str, message_ts: str) -> None:
        with self.core.write() as db:
            db.execute(
                "update questions set channel = ?, message_ts = ? where id = ?",
                (channel, message_ts, question_id),
            )

    def deferred(self, run_id: str) -> list[QuestionRecord]:
        """The run's questions put off with Cancel and not brought back yet."""
        rows = self.core.query(
            "select * from questions where run_id = ? and status = 'deferred' order by rowid",
            (run_id,),
        )
        return [question_from_row(r) for r in rows]

    def untold_answers(self, run_id: str) -> list[QuestionRecord]:
        """Late answers (after Decide, or a change) the agent has not been told yet."""
        rows = self.core.query(
            "select * from questions where run_id = ? and status = 'answered' and told_at is null "
            "and (reopened_at is not null or changes is not null) order by answered_at, rowid",
            (run_id,),
        )
        return [question_from_row(r) for r in rows]

    def mark_told(self, question_id: str) -> None:
        with self.core.write() as db:
            db.execute(
                "update questions set told_at = ? where id = ?", (self.core.now(), question_id)
            )

    def set_form_shown_settled(self, question_id: str) -> None:
        """The settled form's message now shows it read-only."""
        with self.core.write() as db:
            db.execute(
                "update questions set settled_shown_at = ? where id = ?",
                (self.core.now(), question_id),
            )

    def forms_to_repair(self) -> tuple[list[QuestionRecord], list[QuestionRecord]]:
        """Pending questions whose form never reached Slack; settled ones whose form still looks live."""
        unposted = self.core.query(
            "select q.id from questions q join runs r on r.id = q.run_id "
            "where q.status = 'pending' and q.message_ts is null and r.thread_ts is not null "
            "and r.status in ('running', 'waiting') order by q.rowid"
        )
        unsettled = self.core.query(
            "select id from questions where status != 'pending' and message_ts is not null "
            "and settled_shown_at is null order by rowid"
        )
        return (
            [self.get(r["id"]) for r in unposted],
            [self.get(r["id"]) for r in unsettled],
        )

    def set_remind_at(self, question_id: str, at: str | None) -> None:
        with self.core.write() as db:
            db.execute("update questions set remind_at = ? where id = ?", (at, question_id))

    def due_reminders(self) -> list[QuestionRecord]:
        """Pending questions whose next reminder time has passed."""
        rows = self.core.query(
            "select id from questions where status = 'pending' and remind_at is not null "
            "and remind_at <= ? order by remind_at",
            (self.core.now(),),
        )
        return [self.get(r["id"]) for r in rows]

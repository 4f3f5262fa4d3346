"""Questions asked of people, their forms in Slack, and the one claim that settles each."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from bot.core.errors import AlreadyAnsweredError, NotFoundError
from bot.store.audit import AuditChain
from bot.store.core import dumps, insert_row, known


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


def _question(r: dict[str, Any]) -> QuestionRecord:
    """A questions row with its JSON columns read."""
    r["questions"] = json.loads(r["questions"])
    r["answer"] = json.loads(r["answer"]) if r["answer"] else None
    return QuestionRecord(**known(QuestionRecord, r))


class Questions(AuditChain):
    # -- questions --------------------------------------------------------

    def create_question(
        self,
        run_id: str,
        *,
        question_id: str,
        context: str,
        questions: list[dict[str, Any]],
        expires_at: str | None = None,
    ) -> tuple[QuestionRecord, bool]:
        """Store a pending question once; return it and whether it was new."""
        with self.write() as db:
            existing = self.query("select id from questions where id = ?", (question_id,))
            if not existing:
                insert_row(
                    db,
                    "questions",
                    {
                        "id": question_id,
                        "run_id": run_id,
                        "context": context,
                        "questions": dumps(questions),
                        "status": "pending",
                        "created_at": self.now(),
                        "expires_at": expires_at,
                    },
                )
                self._audit(
                    db,
                    run_id=run_id,
                    kind="question_asked",
                    actor="agent",
                    detail={"question_id": question_id, "context": context, "questions": questions},
                    covers=[("questions", "id", question_id)],
                )
        return self.question(question_id), not existing

    def question(self, question_id: str) -> QuestionRecord:
        rows = self.query("select * from questions where id = ?", (question_id,))
        if not rows:
            raise NotFoundError(f"no question with id {question_id!r}")
        return _question(rows[0])

    def questions(self, run_id: str) -> list[QuestionRecord]:
        rows = self.query(
            "select * from questions where run_id = ? order by created_at, rowid", (run_id,)
        )
        return [_question(r) for r in rows]

    def pending_question(self, run_id: str) -> QuestionRecord | None:
        rows = self.query(
            "select * from questions where run_id = ? and status = 'pending' order by rowid limit 1",
            (run_id,),
        )
        return _question(rows[0]) if rows else None

    def due_questions(self) -> list[QuestionRecord]:
        """Pending questions whose expiry time has passed."""
        rows = self.query(
            "select id from questions where status = 'pending' and expires_at is not null and expires_at <= ? order by expires_at",
            (self.now(),),
        )
        return [self.question(r["id"]) for r in rows]

    def question_for_message(self, *, channel: str, message_ts: str) -> QuestionRecord | None:
        """The question whose form is the message at (channel, ts)."""
        rows = self.query(
            "select id from questions where channel = ? and message_ts = ?", (channel, message_ts)
        )
        return self.question(rows[0]["id"]) if rows else None

    def set_question_message(self, question_id: str, *, channel: str, message_ts: str) -> None:
        with self.write() as db:
            db.execute(
                "update questions set channel = ?, message_ts = ? where id = ?",
                (channel, message_ts, question_id),
            )

    def _settle_question(
        self,
        question_id: str,
        *,
        status: str,
        answer: dict[str, Any] | None,
        by: str | None,
        source: str,
        kind: str,
        rationale: str | None = None,
        overridden: bool = False,
        evidence: dict[str, Any] | None = None,
        known: QuestionRecord | None = None,
        from_statuses: tuple[str, ...] = ("pending",),
    ) -> QuestionRecord:
        """Move a pending question to a final status; exactly one concurrent caller wins.
        `known`: the question as the caller read it while pending (saves reading it again)."""
        now = self.now()
        marks = ",".join("?" for _ in from_statuses)
        with self.write() as db:
            cursor = db.execute(
                "update questions set status = ?, answer = ?, answered_by = ?, source = ?, "
                f"answered_at = ?, rationale = ?, overridden = ? where id = ? and status in ({marks})",
                (
                    status,
                    dumps(answer) if answer is not None else None,
                    by,
                    source,
                    now,
                    rationale or None,
                    int(overridden),
                    question_id,
                    *from_statuses,
                ),
            )
            won = cursor.rowcount == 1
            if won:
                run_id = (
                    known.run_id
                    if known
                    else self.query("select run_id from questions where id = ?", (question_id,))[0][
                        "run_id"
                    ]
                )
                self._audit(
                    db,
                    run_id=run_id,
                    kind=kind,
                    actor=by,
                    detail={
                        "question_id": question_id,
                        "source": source,
                        "answer": answer,
                        "rationale": rationale or None,
                        "overridden": overridden,
                        **(evidence or {}),
                    },
                    covers=[("questions", "id", question_id)],
                )
        if won and known:
            return replace(
                known,
                status=status,
                answer=answer,
                answered_by=by,
                source=source,
                answered_at=now,
                rationale=rationale or None,
                overridden=int(overridden),
            )
        record = self.question(question_id)
        if not won:
            who = f" by {record.answered_by}" if record.answered_by else ""
            raise AlreadyAnsweredError(
                f"this question was already {record.status}{who}",
                status=record.status,
                by=record.answered_by,
            )
        return record

    def claim_answer(
        self,
        question_id: str,
        *,
        answer: dict[str, Any],
        answered_by: str,
        source: str,
        rationale: str | None = None,
        overridden: bool = False,
        evidence: dict[str, Any] | None = None,
        known: QuestionRecord | None = None,
    ) -> QuestionRecord:
        """Answer a pending question; AlreadyAnsweredError if another claim got there first."""
        return self._settle_question(
            question_id,
            status="answered",
            answer=answer,
            by=answered_by,
            source=source,
            kind="question_answered",
            rationale=rationale,
            overridden=overridden,
            evidence=evidence,
            known=known,
        )

    def cancel_question(
        self, question_id: str, *, cancelled_by: str, source: str
    ) -> QuestionRecord:
        """Cancel a pending question, or one put off (Stop ends the run: nothing waits)."""
        return self._settle_question(
            question_id,
            status="cancelled",
            answer=None,
            by=cancelled_by,
            source=source,
            kind="question_cancelled",
            from_statuses=("pending", "deferred"),
        )

    def defer_question(self, question_id: str, *, deferred_by: str, source: str) -> QuestionRecord:
        """Cancel on a form: "not now". Its matters stay open and the close goes on without
        them; Decide (reopen_question) brings the same question back."""
        return self._settle_question(
            question_id,
            status="deferred",
            answer=None,
            by=deferred_by,
            source=source,
            kind="question_deferred",
        )

    def deferred_questions(self, run_id: str) -> list[QuestionRecord]:
        """The run's questions put off with Cancel and not brought back yet."""
        rows = self.query(
            "select * from questions where run_id = ? and status = 'deferred' order by rowid",
            (run_id,),
        )
        return [_question(r) for r in rows]

    def reopen_question(self, question_id: str, *, by: str) -> QuestionRecord:
        """Decide: a question put off is pending again, to be posted as a fresh form. Its
        earlier form keeps showing who put it off; the audit trail has both."""
        with self.write() as db:
            moved = db.execute(
                "update questions set status = 'pending', answer = null, answered_by = null, "
                "source = null, answered_at = null, rationale = null, overridden = null, "
                "channel = null, message_ts = null, settled_shown_at = null, remind_at = null, "
                "expires_at = null, "
                "reopened_at = ? where id = ? and status = 'deferred'",
                (self.now(), question_id),
            ).rowcount
            record = self.question(question_id)
            if not moved:
                raise AlreadyAnsweredError(
                    f"this question is {record.status}, not waiting to be decided",
                    status=record.status,
                    by=record.answered_by,
                )
            self._audit(
                db,
                run_id=record.run_id,
                kind="question_reopened",
                actor=by,
                detail={"question_id": question_id},
                covers=[("questions", "id", question_id)],
            )
        return record

    def ask_again(
        self,
        of: QuestionRecord,
        *,
        by: str,
        question_id: str,
        context: str,
        questions: list[dict[str, Any]],
    ) -> QuestionRecord:
        """Change a decision: (one question of) `of` asked again as a new pending question
        naming it. The old answer stays as it was; the new one is recorded beside it."""
        with self.write() as db:
            insert_row(
                db,
                "questions",
                {
                    "id": question_id,
                    "run_id": of.run_id,
                    "context": context,
                    "questions": dumps(questions),
                    "status": "pending",
                    "created_at": self.now(),
                    "changes": of.id,
                },
            )
            self._audit(
                db,
                run_id=of.run_id,
                kind="decision_change_asked",
                actor=by,
                detail={
                    "question_id": question_id,
                    "changes": of.id,
                    "was": of.answer,
                    "was_by": of.answered_by,
                },
                covers=[("questions", "id", question_id)],
            )
        return self.question(question_id)

    def untold_answers(self, run_id: str) -> list[QuestionRecord]:
        """Late answers (after Decide, or a change) the agent has not been told yet."""
        rows = self.query(
            "select * from questions where run_id = ? and status = 'answered' and told_at is null "
            "and (reopened_at is not null or changes is not null) order by answered_at, rowid",
            (run_id,),
        )
        return [_question(r) for r in rows]

    def mark_told(self, question_id: str) -> None:
        with self.write() as db:
            db.execute("update questions set told_at = ? where id = ?", (self.now(), question_id))

    def expire_question(self, question_id: str) -> QuestionRecord:
        return self._settle_question(
            question_id,
            status="expired",
            answer=None,
            by=None,
            source="timeout",
            kind="question_expired",
        )

    def set_form_shown_settled(self, question_id: str) -> None:
        """The settled form's message now shows it read-only."""
        with self.write() as db:
            db.execute(
                "update questions set settled_shown_at = ? where id = ?", (self.now(), question_id)
            )

    def forms_to_repair(self) -> tuple[list[QuestionRecord], list[QuestionRecord]]:
        """Pending questions whose form never reached Slack; settled ones whose form still looks live."""
        unposted = self.query(
            "select q.id from questions q join runs r on r.id = q.run_id "
            "where q.status = 'pending' and q.message_ts is null and r.thread_ts is not null "
            "and r.status in ('running', 'waiting') order by q.rowid"
        )
        unsettled = self.query(
            "select id from questions where status != 'pending' and message_ts is not null "
            "and settled_shown_at is null order by rowid"
        )
        return (
            [self.question(r["id"]) for r in unposted],
            [self.question(r["id"]) for r in unsettled],
        )

    def extend_question(self, question_id: str, expires_at: str, *, by: str | None) -> bool:
        """Move a pending question's deadline later (a person is writing about it); False when
        it was settled meanwhile or already runs that long."""
        with self.write() as db:
            moved = db.execute(
                "update questions set expires_at = ? where id = ? and status = 'pending' "
                "and expires_at is not null and expires_at < ?",
                (expires_at, question_id, expires_at),
            ).rowcount
            if moved:
                run_id = self.query("select run_id from questions where id = ?", (question_id,))
                self._audit(
                    db,
                    run_id=run_id[0]["run_id"],
                    kind="question_extended",
                    actor=by,
                    detail={"question_id": question_id, "expires_at": expires_at},
                )
        return bool(moved)

    def set_remind_at(self, question_id: str, at: str | None) -> None:
        with self.write() as db:
            db.execute("update questions set remind_at = ? where id = ?", (at, question_id))

    def due_reminders(self) -> list[QuestionRecord]:
        """Pending questions whose next reminder time has passed."""
        rows = self.query(
            "select id from questions where status = 'pending' and remind_at is not null "
            "and remind_at <= ? order by remind_at",
            (self.now(),),
        )
        return [self.question(r["id"]) for r in rows]

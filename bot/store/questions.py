"""Questions asked of people, and the one claim that settles each: answered, cancelled, put
off, reopened by Decide, asked again to change a decision, expired."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bot.core.errors import AlreadyAnsweredError
from bot.store.audit import AuditChain
from bot.store.core import StoreCore, dumps, insert_row
from bot.store.question_record import QuestionReads, QuestionRecord

__all__ = ["QuestionRecord", "Questions"]


class Questions(QuestionReads):
    """`store.questions`: asked, read, and settled by exactly one claim."""

    def __init__(self, core: StoreCore, audit: AuditChain) -> None:
        super().__init__(core)
        self.audit = audit

    def create(
        self,
        run_id: str,
        *,
        question_id: str,
        context: str,
        questions: list[dict[str, Any]],
        expires_at: str | None = None,
    ) -> tuple[QuestionRecord, bool]:
        """Store a pending question once; return it and whether it was new."""
        with self.core.write() as db:
            existing = self.core.query("select id from questions where id = ?", (question_id,))
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
                        "created_at": self.core.now(),
                        "expires_at": expires_at,
                    },
                )
                self.audit.append(
                    db,
                    run_id=run_id,
                    kind="question_asked",
                    actor="agent",
                    detail={"question_id": question_id, "context": context, "questions": questions},
                    covers=[("questions", "id", question_id)],
                )
        return self.get(question_id), not existing

    def _settle(
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
        now = self.core.now()
        marks = ",".join("?" for _ in from_statuses)
        with self.core.write() as db:
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
                    else self.core.query(
                        "select run_id from questions where id = ?", (question_id,)
                    )[0]["run_id"]
                )
                self.audit.append(
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
        record = self.get(question_id)
        if not won:
            who = f" by {record.answered_by}" if record.answered_by else ""
            raise AlreadyAnsweredError(
                f"this question was already {record.status}{who}",
                status=record.status,
                by=record.answered_by,
            )
        return record

    def claim(
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
        return self._settle(
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

    def cancel(self, question_id: str, *, cancelled_by: str, source: str) -> QuestionRecord:
        """Cancel a pending question, or one put off (Stop ends the run: nothing waits)."""
        return self._settle(
            question_id,
            status="cancelled",
            answer=None,
            by=cancelled_by,
            source=source,
            kind="question_cancelled",
            from_statuses=("pending", "deferred"),
        )

    def defer(self, question_id: str, *, deferred_by: str, source: str) -> QuestionRecord:
        """Cancel on a form: "not now". Its matters stay open and the close goes on without
        them; Decide (reopen) brings the same question back."""
        return self._settle(
            question_id,
            status="deferred",
            answer=None,
            by=deferred_by,
            source=source,
            kind="question_deferred",
        )

    def reopen(self, question_id: str, *, by: str) -> QuestionRecord:
        """Decide: a question put off is pending again, to be posted as a fresh form. Its
        earlier form keeps showing who put it off; the audit trail has both."""
        with self.core.write() as db:
            moved = db.execute(
                "update questions set status = 'pending', answer = null, answered_by = null, "
                "source = null, answered_at = null, rationale = null, overridden = null, "
                "channel = null, message_ts = null, settled_shown_at = null, remind_at = null, "
                "expires_at = null, "
                "reopened_at = ? where id = ? and status = 'deferred'",
                (self.core.now(), question_id),
            ).rowcount
            record = self.get(question_id)
            if not moved:
                raise AlreadyAnsweredError(
                    f"this question is {record.status}, not waiting to be decided",
                    status=record.status,
                    by=record.answered_by,
                )
            self.audit.append(
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
        with self.core.write() as db:
            insert_row(
                db,
                "questions",
                {
                    "id": question_id,
                    "run_id": of.run_id,
                    "context": context,
                    "questions": dumps(questions),
                    "status": "pending",
                    "created_at": self.core.now(),
                    "changes": of.id,
                },
            )
            self.audit.append(
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
        return self.get(question_id)

    def expire(self, question_id: str) -> QuestionRecord:
        return self._settle(
            question_id,
            status="expired",
            answer=None,
            by=None,
            source="timeout",
            kind="question_expired",
        )

    def extend(self, question_id: str, expires_at: str, *, by: str | None) -> bool:
        """Move a pending question's deadline later (a person is writing about it); False when
        it was settled meanwhile or already runs that long."""
        with self.core.write() as db:
            moved = db.execute(
                "update questions set expires_at = ? where id = ? and status = 'pending' "
                "and expires_at is not null and expires_at < ?",
                (expires_at, question_id, expires_at),
            ).rowcount
            if moved:
                run_id = self.core.query(
                    "select run_id from questions where id = ?", (question_id,)
                )
                self.audit.append(
                    db,
                    run_id=run_id[0]["run_id"],
                    kind="question_extended",
                    actor=by,
                    detail={"question_id": question_id, "expires_at": expires_at},
                )
        return bool(moved)

"""The store's close tables: exceptions with their resolutions, journal batches and lines."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from bot.errors import AlreadyAnsweredError, NotFoundError

_ZERO = Decimal("0.00")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class LedgerTables:
    """Mixed into Store, which owns the connection; these are its close-domain methods."""

    if TYPE_CHECKING:  # provided by Store

        def write(self) -> AbstractContextManager[Database]: ...

        def now(self) -> str: ...

        def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]: ...

        def _audit(
            self, db: Database, *, run_id: str | None, kind: str, actor: str | None, detail: Any
        ) -> None: ...

    # -- close exceptions -------------------------------------------------

    def record_exception(
        self,
        run_id: str,
        *,
        exception_id: str,
        kind: str,
        well_id: str | None,
        details: dict[str, Any],
    ) -> dict[str, Any]:
        """Record an exception found by a check once; a re-run of the check keeps the first."""
        with self.write() as db:
            if not self._rows("select id from exceptions where id = ?", (exception_id,)):
                db.table("exceptions").insert(
                    {
                        "id": exception_id,
                        "run_id": run_id,
                        "kind": kind,
                        "well_id": well_id,
                        "details": _dumps(details),
                        "status": "open",
                        "created_at": self.now(),
                    }
                )
                self._audit(
                    db,
                    run_id=run_id,
                    kind="exception_found",
                    actor="agent",
                    detail={"id": exception_id, "kind": kind},
                )
        return self.exception(exception_id)

    def exception(self, exception_id: str) -> dict[str, Any]:
        rows = self._rows("select * from exceptions where id = ?", (exception_id,))
        if not rows:
            raise NotFoundError(f"no exception with id {exception_id!r}")
        return {**rows[0], "details": json.loads(rows[0]["details"])}

    def exceptions(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows("select id from exceptions where run_id = ? order by rowid", (run_id,))
        return [self.exception(r["id"]) for r in rows]

    def resolve_exception(
        self,
        exception_id: str,
        *,
        resolution: str,
        note: str | None,
        question_id: str | None,
        decided_by: str | None,
        decision_source: str | None,
    ) -> dict[str, Any]:
        actor = decided_by
        with self.write() as db:
            db.execute(
                "update exceptions set status = 'resolved', resolution = ?, note = ?, question_id = ?, "
                "decided_by = ?, decision_source = ?, resolved_at = ? where id = ?",
                (
                    resolution,
                    note,
                    question_id,
                    decided_by,
                    decision_source,
                    self.now(),
                    exception_id,
                ),
            )
            run_id = self._rows("select run_id from exceptions where id = ?", (exception_id,))[0][
                "run_id"
            ]
            self._audit(
                db,
                run_id=run_id,
                kind="exception_resolved",
                actor=actor,
                detail={
                    "id": exception_id,
                    "resolution": resolution,
                    "note": note,
                    "question_id": question_id,
                    "source": decision_source,
                },
            )
        return self.exception(exception_id)

    # -- journal entries --------------------------------------------------

    def save_journal_batch(
        self, run_id: str, *, batch_id: str, period: str, lines: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """Save a draft batch (replacing an earlier draft of the same id); posted ones are final."""
        total_debit = sum((line["debit"] for line in lines), start=_ZERO)
        total_credit = sum((line["credit"] for line in lines), start=_ZERO)
        with self.write() as db:
            existing = self._rows("select status from journal_batches where id = ?", (batch_id,))
            if existing and existing[0]["status"] != "draft":
                raise AlreadyAnsweredError(
                    f"batch {batch_id} is already {existing[0]['status']}",
                    status=existing[0]["status"],
                    by=None,
                )
            db.execute("delete from journal_lines where batch_id = ?", (batch_id,))
            db.execute("delete from journal_batches where id = ?", (batch_id,))
            db.table("journal_batches").insert(
                {
                    "id": batch_id,
                    "run_id": run_id,
                    "period": period,
                    "status": "draft",
                    "total_debit": str(total_debit),
                    "total_credit": str(total_credit),
                    "created_at": self.now(),
                }
            )
            db.table("journal_lines").insert_all(
                [
                    {
                        **line,
                        "batch_id": batch_id,
                        "debit": str(line["debit"]),
                        "credit": str(line["credit"]),
                    }
                    for line in lines
                ]
            )
            self._audit(
                db,
                run_id=run_id,
                kind="journal_drafted",
                actor="agent",
                detail={"batch_id": batch_id, "lines": len(lines), "total_debit": str(total_debit)},
            )
        return self.journal_batch(batch_id)

    def journal_batch(self, batch_id: str) -> dict[str, Any]:
        rows = self._rows("select * from journal_batches where id = ?", (batch_id,))
        if not rows:
            raise NotFoundError(f"no journal batch {batch_id!r}")
        return rows[0]

    def journal_batches(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows(
            "select * from journal_batches where run_id = ? order by created_at", (run_id,)
        )

    def posted_batches(self, period: str) -> list[dict[str, Any]]:
        """Batches already posted for an accounting period, from any run."""
        return self._rows(
            "select * from journal_batches where period = ? and status = 'posted' order by posted_at",
            (period,),
        )

    def journal_lines(self, batch_id: str) -> list[dict[str, Any]]:
        rows = self._rows(
            "select * from journal_lines where batch_id = ? order by entry_no, line_no", (batch_id,)
        )
        return [{**r, "debit": Decimal(r["debit"]), "credit": Decimal(r["credit"])} for r in rows]

    def post_journal_batch(
        self, batch_id: str, *, posted_by: str, approval_question_id: str
    ) -> bool:
        """Mark a draft batch posted; False when it was posted before (posting is idempotent)."""
        with self.write() as db:
            cursor = db.execute(
                "update journal_batches set status = 'posted', posted_at = ?, posted_by = ?, "
                "approval_question_id = ? where id = ? and status = 'draft'",
                (self.now(), posted_by, approval_question_id, batch_id),
            )
            posted = cursor.rowcount == 1
            if posted:
                run_id = self._rows("select run_id from journal_batches where id = ?", (batch_id,))[
                    0
                ]["run_id"]
                self._audit(
                    db,
                    run_id=run_id,
                    kind="journal_posted",
                    actor=posted_by,
                    detail={"batch_id": batch_id, "approval_question_id": approval_question_id},
                )
        return posted

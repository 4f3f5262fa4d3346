"""The close's repository in the store: exceptions and decisions, the DOI rows closebot
added and carried-forward open items here; journal batches, their lines and posting in
bot/close/books/batches.py (Ledger's base) and batch_writer.py.

The Store owns the connection and the platform's schema; the close's tables are migrated by
the close (bot/close/books/migrations.py, `closebot-close`), applied once per Store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, cast

from bot.close.books import (
    covers,  # noqa: F401  (the close's tables, covered by the chain)
    exception_index,
)
from bot.close.books.batch_writer import BatchWriter
from bot.close.books.batches import AlreadyPostedError, Batches
from bot.close.records import DoiRecord, ExceptionDetails, ExceptionRow, OpenItem, OpenItemRow
from bot.core.errors import NotFoundError
from bot.store.core import insert_row

__all__ = ["AlreadyPostedError", "BatchWriter", "Ledger"]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class Ledger(Batches):
    """The close's reads and writes, over a Store."""

    # -- exceptions --------------------------------------------------------

    def record_exception(
        self,
        run_id: str,
        *,
        exception_id: str,
        kind: str,
        well_id: str | None,
        details: ExceptionDetails,
    ) -> ExceptionRow:
        """Record an exception once; a re-run of its check keeps the first (and its decision).

        An exception an earlier release recorded (its details under `legacy`, see c003) and
        found again here takes today's details; the earlier ones stay under `legacy`."""
        with self.store.write() as db:
            found = self._rows(
                "select details, status from exceptions where id = ?", (exception_id,)
            )
            before = json.loads(found[0]["details"]) if found else {}
            if "legacy" in before and "legacy" not in details and found[0]["status"] == "open":
                db.execute(
                    "update exceptions set kind = ?, well_id = ?, details = ? where id = ?",
                    (
                        kind,
                        well_id,
                        _dumps({**details, "legacy": before["legacy"]}),
                        exception_id,
                    ),
                )
                self.store.audit.append(
                    db,
                    run_id=run_id,
                    kind="exception_upgraded",
                    actor="agent",
                    detail={
                        "id": exception_id,
                        "kind": kind,
                        "summary": details.get("summary"),
                        "legacy": before["legacy"],
                    },
                    covers=[("exceptions", "id", exception_id)],
                )
                exception_index.forget(self.store, run_id)  # rare: read the run again
            if not found:
                insert_row(
                    db,
                    "exceptions",
                    {
                        "id": exception_id,
                        "run_id": run_id,
                        "kind": kind,
                        "well_id": well_id,
                        "details": _dumps(details),
                        "status": "open",
                        "created_at": self.store.now(),
                    },
                )
                self.store.audit.record(
                    run_id=run_id,
                    kind="exception_found",
                    actor="agent",
                    detail={"id": exception_id, "kind": kind, "summary": details.get("summary")},
                    covers=[("exceptions", "id", exception_id)],
                )
                exception_index.written(self.store, run_id, exception_id, _exception)
        return self.exception(exception_id)

    def exception(self, exception_id: str) -> ExceptionRow:
        rows = self._rows("select * from exceptions where id = ?", (exception_id,))
        if not rows:
            raise NotFoundError(f"no exception with id {exception_id!r}")
        return _exception(rows[0])

    def exceptions(self, run_id: str) -> list[ExceptionRow]:
        """The run's exceptions in the order found (decoded once and kept: read-only rows)."""
        return list(exception_index.run_exceptions(self.store, run_id, _exception).rows)

    def step_exceptions(self, run_id: str, step: str) -> Iterator[ExceptionRow]:
        """The step's exceptions in the order found, from the kept index (read-only rows)."""
        return exception_index.run_exceptions(self.store, run_id, _exception).of_step(step)

    def step_entries(
        self, run_id: str, step: str
    ) -> tuple[list[ExceptionRow], exception_index.StepEntries]:
        """The run's rows and the step's entries over them (each exception on its own, each
        group once, the open ones in order), from the kept index (read-only)."""
        kept = exception_index.run_exceptions(self.store, run_id, _exception)
        return kept.rows, kept.step_entries(step)

    def decide(
        self,
        exception_id: str,
        *,
        option: str,
        status: str,
        extra: dict[str, Any],
        question_id: str | None,
        decided_by: str | None,
        source: str | None,
    ) -> ExceptionRow:
        """Record the decision on an open exception (status resolved, or open with a note)."""
        with self.store.write() as db:
            db.execute(
                "update exceptions set status = ?, resolution = ?, note = ?, question_id = ?, "
                "decided_by = ?, decision_source = ?, resolved_at = ? where id = ?",
                (
                    status,
                    option,
                    _dumps(extra),
                    question_id,
                    decided_by,
                    source,
                    self.store.now(),
                    exception_id,
                ),
            )
            run_id = self._rows("select run_id from exceptions where id = ?", (exception_id,))[0][
                "run_id"
            ]
            self.store.audit.record(
                run_id=run_id,
                kind="exception_resolved" if status == "resolved" else "exception_noted",
                actor=decided_by,
                detail={
                    "id": exception_id,
                    "option": option,
                    "extra": extra,
                    "question_id": question_id,
                    "source": source,
                },
                covers=[("exceptions", "id", exception_id)],
            )
            exception_index.written(self.store, run_id, exception_id, _exception)
        return self.exception(exception_id)

    def change_decision(
        self,
        exception_id: str,
        *,
        option: str,
        status: str,
        extra: dict[str, Any],
        question_id: str,
        decided_by: str | None,
        source: str | None,
    ) -> ExceptionRow:
        """A decision changed before posting: the exception takes the new answer; the audit
        event keeps what it was (option, who, which question), so the trail shows the edit."""
        with self.store.write() as db:
            before = self.exception(exception_id)
            db.execute(
                "update exceptions set status = ?, resolution = ?, note = ?, question_id = ?, "
                "decided_by = ?, decision_source = ?, resolved_at = ? where id = ?",
                (
                    status,
                    option,
                    _dumps(extra),
                    question_id,
                    decided_by,
                    source,
                    self.store.now(),
                    exception_id,
                ),
            )
            self.store.audit.record(
                run_id=before["run_id"],
                kind="decision_changed",
                actor=decided_by,
                detail={
                    "id": exception_id,
                    "option": option,
                    "status": status,
                    "extra": extra,
                    "question_id": question_id,
                    "source": source,
                    "was": {
                        "option": before["resolution"],
                        "status": before["status"],
                        "decided_by": before["decided_by"],
                        "question_id": before["question_id"],
                        "extra": before["extra"],
                    },
                },
                covers=[("exceptions", "id", exception_id)],
            )
            exception_index.written(self.store, before["run_id"], exception_id, _exception)
        return self.exception(exception_id)

    # -- journal batches -----------------------------------------------------

    def propose_doi(
        self,
        run_id: str,
        *,
        well_id: str,
        row: dict[str, Any],
        effective_from: str,
        question_id: str | None,
        decided_by: str | None,
    ) -> None:
        """A DOI row decided in this run; in force only once the run's batch is posted."""
        with self.store.write() as db:
            db.execute(
                "update doi_rows set status = 'void' where run_id = ? and well_id = ? and status = 'proposed'",
                (run_id, well_id),
            )
            insert_row(
                db,
                "doi_rows",
                {
                    "well_id": well_id,
                    "row": _dumps(row),
                    "effective_from": effective_from,
                    "status": "proposed",
                    "run_id": run_id,
                    "question_id": question_id,
                    "decided_by": decided_by,
                    "created_at": self.store.now(),
                },
            )
            self.store.audit.record(
                run_id=run_id,
                kind="doi_proposed",
                actor=decided_by,
                detail={"well_id": well_id, "effective_from": effective_from, "row": row},
                covers=[("doi_rows", "run_id", run_id)],  # the new row and those it voided
            )

    def doi_rows(self, *, well_id: str | None = None, run_id: str | None = None) -> list[DoiRecord]:
        """Rows in force, plus the given run's own proposals; oldest first."""
        sql = "select * from doi_rows where (status = 'in_force'"
        params: tuple[Any, ...] = ()
        if run_id:
            sql += " or (status = 'proposed' and run_id = ?)"
            params += (run_id,)
        sql += ")"
        if well_id:
            sql += " and well_id = ?"
            params += (well_id,)
        rows = self._rows(sql + " order by id", params)
        return cast("list[DoiRecord]", [{**r, "row": json.loads(r["row"])} for r in rows])

    def all_doi_rows(self, well_id: str) -> list[DoiRecord]:
        rows = self._rows("select * from doi_rows where well_id = ? order by id", (well_id,))
        return cast("list[DoiRecord]", [{**r, "row": json.loads(r["row"])} for r in rows])

    # -- open items ----------------------------------------------------------

    def carry_forward(self, run_id: str, *, period: str, items: list[OpenItem]) -> None:
        with self.store.write() as db:
            db.execute("delete from open_items where run_id = ?", (run_id,))
            for item in items:
                insert_row(
                    db,
                    "open_items",
                    {
                        "run_id": run_id,
                        "period": period,
                        "kind": item["kind"],
                        "text": item["text"],
                        "amount": str(item.get("amount") or ""),
                        "owner": item.get("owner"),
                        "due": item.get("due"),
                        "status": "open",
                        "created_at": self.store.now(),
                        "exception_id": item.get("exception_id"),
                        "held_balance": _dumps(item.get("held_balance") or []),
                    },
                )
            self.store.audit.record(
                run_id=run_id,
                kind="open_items_carried",
                actor=None,
                detail={"period": period, "items": len(items)},
                covers=[("open_items", "run_id", run_id)],
            )

    def carried_into(self, period: str) -> list[OpenItemRow]:
        """The items the latest sign-off of `period` carried forward (they open the next month).

        A stopped close decides nothing (CLOSE.md v2.2): a sign-off in a close that was then
        stopped carried nothing, and an item it settled, wrote off or carried reads as it was
        before (`open_items`)."""
        where, args = self.store.runs.workspace_condition("r")  # this workspace's only
        latest = self._rows(
            "select o.run_id from open_items o join runs r on r.id = o.run_id "
            f"where o.period = ? and r.status != 'cancelled'{where} order by o.id desc limit 1",
            (period, *args),
        )
        if not latest:
            return []
        return [i for i in self.open_items(latest[0]["run_id"]) if i["status"] == "open"]

    def set_open_item_status(self, item_id: int, status: str, *, by_run: str | None = None) -> None:
        """A carried item settled or written off at the next close (it is not carried again),
        audited in the close that decided it (`by_run`, else the item's own)."""
        with self.store.write() as db:
            db.execute("update open_items set status = ? where id = ?", (status, item_id))
            owner = self._rows("select run_id from open_items where id = ?", (item_id,))
            self.store.audit.record(
                run_id=by_run or (owner[0]["run_id"] if owner else None),
                kind="open_item_closed",
                actor=None,
                detail={"item_id": item_id, "status": status},
                covers=[("open_items", "id", item_id)],
            )

    def open_items(self, run_id: str) -> list[OpenItemRow]:
        """The items a sign-off carried, each with its status as decided: a status set only by
        closes that were then stopped does not count (the item is as it was: open)."""
        rows = self._rows("select * from open_items where run_id = ? order by id", (run_id,))
        undone = self._undone_by_stops(int(r["id"]) for r in rows if r["status"] != "open")
        return [_open_item({**r, "status": "open"} if r["id"] in undone else r) for r in rows]

    def _undone_by_stops(self, ids: Iterable[int]) -> set[int]:
        """Of `ids`, the items whose every status change (each an `open_item_closed` event on
        the trail of the close that decided it) was made by a close that was then stopped."""
        wanted = sorted(set(ids))
        if not wanted:
            return set()
        marks = ",".join("?" * len(wanted))
        rows = self._rows(
            "select cast(json_extract(a.detail, '$.item_id') as integer) as item, "
            "min(r.status = 'cancelled') as all_stopped from audit_events a "
            "join runs r on r.id = a.run_id where a.kind = 'open_item_closed' "
            f"and cast(json_extract(a.detail, '$.item_id') as integer) in ({marks}) group by item",
            tuple(wanted),
        )
        return {int(r["item"]) for r in rows if r["all_stopped"]}


def _open_item(row: dict[str, Any]) -> OpenItemRow:
    return cast(OpenItemRow, {**row, "held_balance": json.loads(row.get("held_balance") or "[]")})


def _exception(row: dict[str, Any]) -> ExceptionRow:
    """An exceptions row with its JSON columns read."""
    note = row.get("note")
    return cast(
        ExceptionRow,
        {**row, "details": json.loads(row["details"]), "extra": json.loads(note) if note else {}},
    )

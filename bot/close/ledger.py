"""The close's tables in the store: exceptions and decisions, journal batches, the DOI rows
closebot added, posted periods and carried-forward open items.

The Store owns the connection and the core schema; the close keeps its own migrations
(`closebot-close`), applied once per Store. Migrations are append-only.
"""

from __future__ import annotations

import json
import sqlite3
import weakref
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from itertools import islice
from operator import add, itemgetter
from typing import Any

from bot.close.books.migrations import close_migrations
from bot.close.controls import ContentHash
from bot.close.data import CENT
from bot.close.doi_master import ACCOUNT_NAMES
from bot.core.errors import CloseBotError, NotFoundError
from bot.store import Store
from bot.store.chain import LINES, WrittenLines, cover

ZERO = Decimal("0.00")

# The close's tables that make the books or the record, covered by the audit chain
# (bot/store/chain/): each write to them is audited with the digest of the rows it wrote.
cover(
    "exceptions",
    key=("id",),
    fields=(
        "id",
        "run_id",
        "kind",
        "well_id",
        "details",
        "status",
        "resolution",
        "note",
        "question_id",
        "decided_by",
        "decision_source",
        "resolved_at",
        "created_at",
    ),
    what="an exception and its resolution: the option, who decided it, how and when",
    of_run="select * from exceptions where run_id = ?",
)
cover(
    "journal_batches",
    key=("id",),
    fields=(
        "id",
        "run_id",
        "period",
        "status",
        "total_debit",
        "total_credit",
        "created_at",
        "posted_at",
        "posted_by",
        "approval_question_id",
        "content_hash",
    ),
    what="a journal batch: its status, totals, content hash, who posted it and when",
    of_run="select * from journal_batches where run_id = ?",
)
cover(
    "period_posts",
    key=("period",),
    fields=("period", "batch_id", "posted_at", "posted_by"),
    what="the claim on a posted period: which batch posted it, who and when",
    of_run="select * from period_posts where batch_id in "
    "(select id from journal_batches where run_id = ?)",
)
cover(
    "doi_rows",
    key=("id",),
    fields=(
        "id",
        "well_id",
        "row",
        "effective_from",
        "status",
        "run_id",
        "batch_id",
        "question_id",
        "decided_by",
        "created_at",
        "in_force_at",
    ),
    what="a DOI row closebot added: the well's WI/NRI, from when, who decided it, in force or not",
    of_run="select * from doi_rows where run_id = ?",
)


cover(
    "open_items",
    key=("id",),
    fields=(
        "id",
        "run_id",
        "period",
        "kind",
        "text",
        "amount",
        "owner",
        "due",
        "status",
        "created_at",
        "exception_id",
        "held_balance",  # what a write-off of it books next month
    ),
    what="an open item carried forward: what is open, its amount, owner, due date, status "
    "and the balance its decision held",
    of_run="select * from open_items where run_id = ?",
    shared=True,  # the next close settles, writes off or keeps it
    newer=True,
)


class AlreadyPostedError(CloseBotError):
    """The period was posted by another batch; posting this one would book it twice."""

    def __init__(self, period: str, batch_id: str, by: str | None, at: str) -> None:
        super().__init__(
            f"batch {batch_id} already posted {period} (by {by or '-'} at {at}); "
            "posting another batch would book the period twice"
        )
        self.batch_id = batch_id


# A finished batch's lines never change (a draft is superseded, never edited): its totals by
# account are summed once per store, not by every tool that shows them (flux, the summary,
# the approval form each read 300,000 lines at volume).
_account_totals: weakref.WeakKeyDictionary[Store, dict[str, list[dict[str, Any]]]] = (
    weakref.WeakKeyDictionary()
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class Ledger:
    """The close's reads and writes, over a Store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.migrate(close_migrations)  # once per Store: the close's tables are there

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return self.store.query(sql, params)

    # -- exceptions --------------------------------------------------------

    def record_exception(
        self,
        run_id: str,
        *,
        exception_id: str,
        kind: str,
        well_id: str | None,
        details: dict[str, Any],
    ) -> dict[str, Any]:
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
            if not found:
                db.table("exceptions").insert(
                    {
                        "id": exception_id,
                        "run_id": run_id,
                        "kind": kind,
                        "well_id": well_id,
                        "details": _dumps(details),
                        "status": "open",
                        "created_at": self.store.now(),
                    }
                )
                self.store.audit.record(
                    run_id=run_id,
                    kind="exception_found",
                    actor="agent",
                    detail={"id": exception_id, "kind": kind, "summary": details.get("summary")},
                    covers=[("exceptions", "id", exception_id)],
                )
        return self.exception(exception_id)

    def exception(self, exception_id: str) -> dict[str, Any]:
        rows = self._rows("select * from exceptions where id = ?", (exception_id,))
        if not rows:
            raise NotFoundError(f"no exception with id {exception_id!r}")
        return _exception(rows[0])

    def exceptions(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows("select * from exceptions where run_id = ? order by rowid", (run_id,))
        return [_exception(row) for row in rows]

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
    ) -> dict[str, Any]:
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
    ) -> dict[str, Any]:
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
        return self.exception(exception_id)

    # -- journal batches -----------------------------------------------------

    def save_batch(
        self, run_id: str, *, period: str, lines: Iterable[dict[str, Any]]
    ) -> dict[str, Any]:
        """Save a new draft batch with its own id; earlier drafts of the run are superseded."""
        writer = self.open_batch(run_id, period=period)
        try:
            writer.add(lines)
        except BaseException:
            writer.abandon()
            raise
        return writer.finish()

    def open_batch(self, run_id: str, *, period: str) -> BatchWriter:
        """A new batch whose lines are written in chunks as they are built (its status is
        'building', which no reader takes for the run's batch, until `finish()`)."""
        return BatchWriter(self, run_id, period)

    def entry_count(self, batch_id: str) -> int:
        """How many entries a batch has (counted by SQLite, not by reading its lines)."""
        rows = self._rows(
            "select count(distinct entry_no) as n from journal_lines where batch_id = ?",
            (batch_id,),
        )
        return int(rows[0]["n"])

    def account_totals(self, batch_id: str) -> list[dict[str, Any]]:
        """Debits and credits per account of a stored batch, in account order, summed by
        SQLite in whole cents (exact); a batch with an amount finer than a cent is summed
        line by line in Decimal instead. A finished batch's are summed once per store."""
        known = _account_totals.setdefault(self.store, {})
        if batch_id not in known:
            totals = self._sum_accounts(batch_id)
            status = self._rows("select status from journal_batches where id = ?", (batch_id,))
            if not status or status[0]["status"] == "building":
                return totals
            known[batch_id] = totals
        return [dict(row) for row in known[batch_id]]

    def remember_account_totals(self, batch_id: str, totals: Iterable[dict[str, Any]]) -> None:
        """The totals by account of a batch just written, as its builder summed the very lines
        it wrote: the first reader need not sum them again. Kept only in whole cents, as
        `account_totals` would give them; a batch with a finer amount is summed from its lines."""
        rows = [dict(row) for row in totals]
        amounts = [row[side] for row in rows for side in ("debit", "credit")]
        if any(not isinstance(a, Decimal) or a.as_tuple().exponent < -2 for a in amounts):  # type: ignore[operator]
            return
        for row in rows:
            row["account_name"] = ACCOUNT_NAMES.get(row["account"], row["account"])
            row["debit"], row["credit"] = row["debit"].quantize(CENT), row["credit"].quantize(CENT)
        _account_totals.setdefault(self.store, {})[batch_id] = sorted(
            rows, key=itemgetter("account")
        )

    def _sum_accounts(self, batch_id: str) -> list[dict[str, Any]]:
        finer = self._rows(
            "select count(*) as n from journal_lines where batch_id = ? and ("
            "(instr(debit, '.') > 0 and length(debit) - instr(debit, '.') > 2) or "
            "(instr(credit, '.') > 0 and length(credit) - instr(credit, '.') > 2))",
            (batch_id,),
        )[0]["n"]
        if finer:
            sums: dict[str, list[Decimal]] = {}
            for line in self.iter_lines(batch_id):
                dr_cr = sums.setdefault(line["account"], [ZERO, ZERO])
                dr_cr[0] += line["debit"]
                dr_cr[1] += line["credit"]
            return [
                {"account": a, "account_name": ACCOUNT_NAMES.get(a, a), "debit": d, "credit": c}
                for a, (d, c) in sorted(sums.items())
            ]
        rows = self._rows(
            "select account, sum(cast(round(cast(debit as real) * 100) as integer)) as dr, "
            "sum(cast(round(cast(credit as real) * 100) as integer)) as cr "
            "from journal_lines where batch_id = ? group by account order by account",
            (batch_id,),
        )
        return [
            {
                "account": r["account"],
                "account_name": ACCOUNT_NAMES.get(r["account"], r["account"]),
                "debit": Decimal(r["dr"]).scaleb(-2),
                "credit": Decimal(r["cr"]).scaleb(-2),
            }
            for r in rows
        ]

    def iter_lines(self, batch_id: str, *, page: int = 5000) -> Iterator[dict[str, Any]]:
        """A batch's lines in entry and line order, read a page at a time."""
        after = (0, 0)
        while True:
            rows = self._rows(
                "select * from journal_lines where batch_id = ? and (entry_no, line_no) > (?, ?) "
                "order by entry_no, line_no limit ?",
                (batch_id, *after, page),
            )
            for r in rows:
                yield {**r, "debit": Decimal(r["debit"]), "credit": Decimal(r["credit"])}
            if len(rows) < page:
                return
            after = (rows[-1]["entry_no"], rows[-1]["line_no"])

    def batch(self, batch_id: str) -> dict[str, Any]:
        rows = self._rows("select * from journal_batches where id = ?", (batch_id,))
        if not rows:
            raise NotFoundError(f"no journal batch {batch_id!r}")
        return rows[0]

    def batches(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows(
            "select * from journal_batches where run_id = ? order by created_at, rowid", (run_id,)
        )

    def current_batch(self, run_id: str) -> dict[str, Any] | None:
        live = [b for b in self.batches(run_id) if b["status"] not in ("superseded", "building")]
        return live[-1] if live else None

    def posted_batch(self, period: str) -> dict[str, Any] | None:
        rows = self._rows(
            "select b.* from period_posts p join journal_batches b on b.id = p.batch_id where p.period = ?",
            (period,),
        )
        if rows:
            return rows[0]
        legacy = self._rows(  # posted before period_posts existed
            "select * from journal_batches where period = ? and status = 'posted' order by posted_at limit 1",
            (period,),
        )
        return legacy[0] if legacy else None

    def approvers(self, batch: dict[str, Any]) -> list[str]:
        """Who approved a posted batch: its approver, then the second approver when an entry
        over the limit needed one (from the posting's audit event)."""
        posted = self.store.audit.events(str(batch["run_id"]), kind="journal_posted")
        second = next(
            (
                e.detail.get("second_approver")
                for e in posted
                if e.detail.get("batch_id") == batch["id"]
            ),
            None,
        )
        return [str(who) for who in (batch.get("posted_by"), second) if who]

    def lines(self, batch_id: str) -> list[dict[str, Any]]:
        rows = self._rows(
            "select * from journal_lines where batch_id = ? order by entry_no, line_no", (batch_id,)
        )
        return [{**r, "debit": Decimal(r["debit"]), "credit": Decimal(r["credit"])} for r in rows]

    def post(
        self,
        batch_id: str,
        *,
        posted_by: str,
        approval_question_id: str,
        detail: dict[str, Any] | None = None,
    ) -> bool:
        """Post a draft and claim its period in one transaction; False if it was posted before.

        AlreadyPostedError when another batch holds the period: concurrent approvals post once.
        """
        with self.store.write() as db:
            batch = self._rows("select * from journal_batches where id = ?", (batch_id,))[0]
            if batch["status"] == "posted":
                return False
            other = self._rows(  # posted by a release before period_posts, or an older process
                "select id, posted_by, posted_at from journal_batches "
                "where period = ? and status = 'posted' and id != ? order by posted_at limit 1",
                (batch["period"], batch_id),
            )
            if other:
                raise AlreadyPostedError(
                    batch["period"],
                    other[0]["id"],
                    other[0]["posted_by"],
                    other[0]["posted_at"] or "",
                )
            now = self.store.now()
            try:
                db.execute(
                    "insert into period_posts (period, batch_id, posted_at, posted_by) values (?, ?, ?, ?)",
                    (batch["period"], batch_id, now, posted_by),
                )
            except sqlite3.IntegrityError:
                winner = self._rows(
                    "select * from period_posts where period = ?", (batch["period"],)
                )[0]
                raise AlreadyPostedError(
                    batch["period"], winner["batch_id"], winner["posted_by"], winner["posted_at"]
                ) from None
            db.execute(
                "update journal_batches set status = 'posted', posted_at = ?, posted_by = ?, "
                "approval_question_id = ? where id = ?",
                (now, posted_by, approval_question_id, batch_id),
            )
            db.execute(
                "update doi_rows set status = 'in_force', in_force_at = ?, batch_id = ? "
                "where run_id = ? and status = 'proposed'",
                (now, batch_id, batch["run_id"]),
            )
            self.store.audit.record(
                run_id=batch["run_id"],
                kind="journal_posted",
                actor=posted_by,
                detail={
                    "batch_id": batch_id,
                    "approval_question_id": approval_question_id,
                    "content_hash": batch["content_hash"],
                    **(detail or {}),
                },
                covers=[
                    ("journal_batches", "id", batch_id),
                    ("period_posts", "batch_id", batch_id),
                    ("doi_rows", "run_id", batch["run_id"]),
                ],
            )
        return True

    # -- DOI rows closebot adds ----------------------------------------------

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
            db.table("doi_rows").insert(
                {
                    "well_id": well_id,
                    "row": _dumps(row),
                    "effective_from": effective_from,
                    "status": "proposed",
                    "run_id": run_id,
                    "question_id": question_id,
                    "decided_by": decided_by,
                    "created_at": self.store.now(),
                }
            )
            self.store.audit.record(
                run_id=run_id,
                kind="doi_proposed",
                actor=decided_by,
                detail={"well_id": well_id, "effective_from": effective_from, "row": row},
                covers=[("doi_rows", "run_id", run_id)],  # the new row and those it voided
            )

    def doi_rows(
        self, *, well_id: str | None = None, run_id: str | None = None
    ) -> list[dict[str, Any]]:
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
        return [{**r, "row": json.loads(r["row"])} for r in rows]

    def all_doi_rows(self, well_id: str) -> list[dict[str, Any]]:
        rows = self._rows("select * from doi_rows where well_id = ? order by id", (well_id,))
        return [{**r, "row": json.loads(r["row"])} for r in rows]

    # -- open items ----------------------------------------------------------

    def carry_forward(self, run_id: str, *, period: str, items: list[dict[str, Any]]) -> None:
        with self.store.write() as db:
            db.execute("delete from open_items where run_id = ?", (run_id,))
            for item in items:
                db.table("open_items").insert(
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
                    }
                )
            self.store.audit.record(
                run_id=run_id,
                kind="open_items_carried",
                actor=None,
                detail={"period": period, "items": len(items)},
                covers=[("open_items", "run_id", run_id)],
            )

    def carried_into(self, period: str) -> list[dict[str, Any]]:
        """The items the latest sign-off of `period` carried forward (they open the next month)."""
        latest = self._rows(
            "select run_id from open_items where period = ? order by id desc limit 1", (period,)
        )
        if not latest:
            return []
        return [
            _open_item(r)
            for r in self._rows(
                "select * from open_items where run_id = ? and status = 'open' order by id",
                (latest[0]["run_id"],),
            )
        ]

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

    def open_items(self, run_id: str) -> list[dict[str, Any]]:
        return [
            _open_item(r)
            for r in self._rows("select * from open_items where run_id = ? order by id", (run_id,))
        ]


def _open_item(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "held_balance": json.loads(row.get("held_balance") or "[]")}


class BatchWriter:
    """Writes one batch's lines as they come, a chunk per short transaction (a long build
    never holds the store's lock), and makes it the run's draft at the end, in one."""

    CHUNK = 5000

    def __init__(self, ledger: Ledger, run_id: str, period: str) -> None:
        self.ledger, self.run_id, self.period = ledger, run_id, period
        self.hash = ContentHash()
        self.total_debit = self.total_credit = ZERO
        self.count = 0
        self._pending: list[Sequence[Any]] = []  # lines in the journal's LINE_ROW order
        store = ledger.store
        # the lines' ids and digests as written, for the drafted event's cover (None: it
        # reads them back)
        self._written: WrittenLines | None = None
        with store.write() as db:
            n = ledger._rows(
                "select count(*) as n from journal_batches where run_id = ?", (run_id,)
            )
            self.batch_id = f"JE-{period}-{run_id[:6]}-{n[0]['n'] + 1}"
            db.table("journal_batches").insert(
                {
                    "id": self.batch_id,
                    "run_id": run_id,
                    "period": period,
                    "status": "building",
                    "total_debit": "0",
                    "total_credit": "0",
                    "created_at": store.now(),
                    "content_hash": "",
                }
            )
        self._written = store.audit.lines_digest(self.batch_id)

    def add(self, lines: Iterable[dict[str, Any]]) -> None:
        """Lines as the store's dicts."""
        self.add_rows(
            (
                line["entry_no"],
                line["line_no"],
                line.get("entry"),
                line["account"],
                line.get("account_name"),
                line["debit"],
                line["credit"],
                line.get("well_id"),
                line.get("memo"),
                line.get("source"),
                line.get("ref"),
            )
            for line in lines
        )

    def add_rows(self, rows: Iterable[Sequence[Any]]) -> None:
        """Lines as tuples in the journal's LINE_ROW order (no dict per line), taken a chunk
        at a time (an entry of 90,000 lines is never held whole)."""
        rows = iter(rows)
        pending = self._pending
        while True:
            pending.extend(islice(rows, self.CHUNK - len(pending)))
            if len(pending) < self.CHUNK:
                return
            self._flush()
            pending = self._pending

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        self.total_debit = sum(map(itemgetter(5), pending), self.total_debit)
        self.total_credit = sum(map(itemgetter(6), pending), self.total_credit)
        self.hash.add_rows(pending)
        batch_id = self.batch_id
        # the store's columns (chain.LINE_FIELDS order); each line carries its own digest
        stored = [
            (batch_id, r[0], r[1], r[2], r[3], r[4], str(r[5]), str(r[6]), r[7], r[8], r[9], r[10])
            for r in pending
        ]
        macs = self.ledger.store.audit.line_digests(stored)
        with self.ledger.store.write() as db:
            db.conn.executemany(
                "insert into journal_lines (batch_id, entry_no, line_no, entry, account, "
                "account_name, debit, credit, well_id, memo, source, ref, mac) "
                "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                map(add, stored, zip(macs, strict=True)),  # each row and its digest
            )
            self._digest_written(db.conn, macs)
        self.count += len(stored)
        self._pending = []

    def _digest_written(self, conn: sqlite3.Connection, macs: list[str]) -> None:
        """The lines just inserted (in this transaction, so nothing came between them) have
        the ids up to the last one inserted; once those ids are shown to be this batch's,
        their digests go into the batch's cover in id order."""
        if self._written is None:
            return
        last = int(conn.execute("select last_insert_rowid()").fetchone()[0])
        first = last - len(macs) + 1
        ours = conn.execute(
            "select count(*) from journal_lines not indexed where id between ? and ? and batch_id = ?",
            (first, last, self.batch_id),
        ).fetchone()[0]
        if ours != len(macs) or first <= self._written.last_id:
            self._written = None  # the cover reads the lines back
            return
        self._written.digest.add_many(range(first, last + 1), macs)
        self._written.last_id = last

    def finish(self) -> dict[str, Any]:
        """The batch becomes the run's draft; earlier drafts are superseded."""
        self._flush()
        digest = self.hash.hexdigest()
        with self.ledger.store.write() as db:
            db.execute(
                "update journal_batches set status = 'superseded' where run_id = ? and status = 'draft'",
                (self.run_id,),
            )
            db.execute(
                "update journal_batches set status = 'draft', total_debit = ?, total_credit = ?, "
                "content_hash = ? where id = ?",
                (str(self.total_debit), str(self.total_credit), digest, self.batch_id),
            )
            self.ledger.store.audit.record(
                run_id=self.run_id,
                kind="journal_drafted",
                actor="agent",
                detail={
                    "batch_id": self.batch_id,
                    "lines": self.count,
                    "total_debit": str(self.total_debit),
                    "content_hash": digest,
                },
                # the new draft, the drafts it superseded, and the new draft's lines
                covers=[
                    ("journal_batches", "run_id", self.run_id),
                    (LINES, "batch_id", self._written or self.batch_id),
                ],
            )
        return self.ledger.batch(self.batch_id)

    def abandon(self) -> None:
        """A build that failed leaves nothing behind."""
        self._pending = []
        with self.ledger.store.write() as db:
            db.execute("delete from journal_lines where batch_id = ?", (self.batch_id,))
            db.execute("delete from journal_batches where id = ?", (self.batch_id,))


def _exception(row: dict[str, Any]) -> dict[str, Any]:
    """An exceptions row with its JSON columns read."""
    note = row.get("note")
    return {**row, "details": json.loads(row["details"]), "extra": json.loads(note) if note else {}}

"""The close's journal batches in the store: a batch saved or written as it is built, its
lines and totals by account, the run's draft, and posting it (one batch per period)."""

from __future__ import annotations

import json
import sqlite3
import weakref
from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from operator import itemgetter
from typing import Any, cast

from bot.close.books.batch_writer import BatchWriter
from bot.close.books.migrations import close_migrations
from bot.close.data import CENT
from bot.close.doi_master import ACCOUNT_NAMES
from bot.close.records import AccountTotal, BatchRow, JournalLine, StoredJournalLine
from bot.core.errors import CloseBotError, NotFoundError
from bot.core.tenancy import current, run_workspace_key, workspace_key
from bot.store import Store

ZERO = Decimal("0.00")


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
_account_totals: weakref.WeakKeyDictionary[Store, dict[str, list[AccountTotal]]] = (
    weakref.WeakKeyDictionary()
)


# the runs of one workspace, by its key's parts (plain SQL: SQLite and PostgreSQL alike)
_SAME_WORKSPACE = "and coalesce(r.enterprise_id, '') = ? and coalesce(r.team_id, '') = ?"


def _key_parts(key: str) -> tuple[str, str]:
    """A workspace key's (enterprise_id, team_id), as _SAME_WORKSPACE compares them."""
    enterprise, slash, team = key.rpartition("/")
    if not slash and key.startswith("E"):  # an org acting for itself
        return key, ""
    return enterprise, team


class Batches:
    """The journal batches' reads and writes, over a Store (Ledger is the close's whole
    repository; this is its batches)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.migrate(close_migrations)  # once per Store: the close's tables are there

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return self.store.query(sql, params)

    def save_batch(self, run_id: str, *, period: str, lines: Iterable[dict[str, Any]]) -> BatchRow:
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

    def account_totals(self, batch_id: str) -> list[AccountTotal]:
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
        return [row.copy() for row in known[batch_id]]

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
        _account_totals.setdefault(self.store, {})[batch_id] = cast(
            "list[AccountTotal]", sorted(rows, key=itemgetter("account"))
        )

    def _sum_accounts(self, batch_id: str) -> list[AccountTotal]:
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

    def iter_lines(self, batch_id: str, *, page: int = 5000) -> Iterator[JournalLine]:
        """A batch's lines in entry and line order, read a page at a time."""
        after = (0, 0)
        while True:
            rows = cast(
                "list[StoredJournalLine]",
                self._rows(
                    "select * from journal_lines where batch_id = ? and (entry_no, line_no) > (?, ?) "
                    "order by entry_no, line_no limit ?",
                    (batch_id, *after, page),
                ),
            )
            for r in rows:
                yield {**r, "debit": Decimal(r["debit"]), "credit": Decimal(r["credit"])}
            if len(rows) < page:
                return
            after = (rows[-1]["entry_no"], rows[-1]["line_no"])

    def batch(self, batch_id: str) -> BatchRow:
        rows = self._rows("select * from journal_batches where id = ?", (batch_id,))
        if not rows:
            raise NotFoundError(f"no journal batch {batch_id!r}")
        return cast(BatchRow, rows[0])

    def batches(self, run_id: str) -> list[BatchRow]:
        return cast(
            "list[BatchRow]",
            self._rows(
                "select * from journal_batches where run_id = ? order by created_at, rowid",
                (run_id,),
            ),
        )

    def current_batch(self, run_id: str) -> BatchRow | None:
        live = [b for b in self.batches(run_id) if b["status"] not in ("superseded", "building")]
        return live[-1] if live else None

    def posted_batch(self, period: str) -> BatchRow | None:
        """The batch that posted `period` in the workspace the work in hand is for."""
        key = workspace_key(current())
        rows = self._rows(
            "select b.* from period_posts p join journal_batches b on b.id = p.batch_id "
            "where p.period = ? and p.workspace = ?",
            (period, key),
        )
        if rows:
            return cast(BatchRow, rows[0])
        legacy = self._rows(  # posted before period_posts existed
            "select b.* from journal_batches b join runs r on r.id = b.run_id "
            "where b.period = ? and b.status = 'posted' " + _SAME_WORKSPACE + " "
            "order by b.posted_at limit 1",
            (period, *_key_parts(key)),
        )
        return cast(BatchRow, legacy[0]) if legacy else None

    def _workspace_of(self, run_id: str) -> str:
        rows = self._rows("select team_id, enterprise_id from runs where id = ?", (run_id,))
        return run_workspace_key(rows[0]["team_id"], rows[0]["enterprise_id"]) if rows else ""

    def approvers(self, batch: Mapping[str, Any]) -> list[str]:
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

    def lines(self, batch_id: str) -> list[JournalLine]:
        rows = cast(
            "list[StoredJournalLine]",
            self._rows(
                "select * from journal_lines where batch_id = ? order by entry_no, line_no",
                (batch_id,),
            ),
        )
        return [{**r, "debit": Decimal(r["debit"]), "credit": Decimal(r["credit"])} for r in rows]

    def account_lines(self, batch_id: str, accounts: Iterable[str]) -> list[JournalLine]:
        """A batch's lines on `accounts` (a flagged flux item's, say), in entry and line order."""
        wanted = sorted(set(accounts))
        if not wanted:
            return []
        rows = cast(
            "list[StoredJournalLine]",
            self._rows(
                f"select * from journal_lines where batch_id = ? and account in "
                f"({', '.join('?' * len(wanted))}) order by entry_no, line_no",
                (batch_id, *wanted),
            ),
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
            key = self._workspace_of(batch["run_id"])  # one posting per period per workspace
            other = self._rows(  # posted by a release before period_posts, or an older process
                "select b.id, b.posted_by, b.posted_at from journal_batches b "
                "join runs r on r.id = b.run_id where b.period = ? and b.status = 'posted' "
                "and b.id != ? " + _SAME_WORKSPACE + " order by b.posted_at limit 1",
                (batch["period"], batch_id, *_key_parts(key)),
            )
            if other:
                raise AlreadyPostedError(
                    batch["period"],
                    other[0]["id"],
                    other[0]["posted_by"],
                    other[0]["posted_at"] or "",
                )
            registered = self.posted_in_register(batch["period"], key)
            if registered is not None and registered["batch_id"] != batch_id:
                raise AlreadyPostedError(  # its rows deleted since: the register remembers
                    batch["period"],
                    str(registered["batch_id"]),
                    registered.get("posted_by"),
                    str(registered.get("posted_at") or ""),
                )
            now = self.store.now()
            try:
                db.execute(
                    "insert into period_posts (workspace, period, batch_id, posted_at, posted_by) "
                    "values (?, ?, ?, ?, ?)",
                    (key, batch["period"], batch_id, now, posted_by),
                )
            except sqlite3.IntegrityError:
                winner = self._rows(
                    "select * from period_posts where period = ? and workspace = ?",
                    (batch["period"], key),
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
            self.store.audit.append(  # the register: a period posted stays posted
                db,
                run_id=None,
                kind="period_posted",
                actor=posted_by,
                detail={
                    "period": batch["period"],
                    "batch_id": batch_id,
                    "run_id": batch["run_id"],
                    "posted_by": posted_by,
                    "posted_at": now,
                    "content_hash": batch["content_hash"],
                }
                | ({"workspace": key} if key else {}),
            )
        return True

    def posted_in_register(self, period: str, key: str | None = None) -> dict[str, Any] | None:
        """The register's record that `period` was posted (the event of no run that posting
        wrote, chained and sealed under the key), whatever became of its rows since; in the
        workspace `key` (default: the one the work in hand is for; a record of a release
        before workspaces names none: the one workspace's)."""
        key = workspace_key(current()) if key is None else key
        rows = self._rows(
            "select detail from audit_events where run_id is null and kind = 'period_posted' "
            "and json_extract(detail, '$.period') = ? "
            "and coalesce(json_extract(detail, '$.workspace'), '') = ? order by id limit 1",
            (period, key),
        )
        return cast("dict[str, Any]", json.loads(rows[0]["detail"])) if rows else None

    # -- DOI rows closebot adds ----------------------------------------------

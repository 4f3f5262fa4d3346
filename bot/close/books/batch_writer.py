"""Writing one journal batch as it is built: its lines a chunk per short transaction, its
content hash and the digest the audit chain records over them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from decimal import Decimal
from itertools import islice
from operator import add, itemgetter
from typing import TYPE_CHECKING, Any

from bot.close.controls import ContentHash

if TYPE_CHECKING:
    from bot.close.books.batches import Batches
from bot.close.records import BatchRow
from bot.store.chain import LINES, WrittenLines
from bot.store.core import insert_row

ZERO = Decimal("0.00")


class BatchWriter:
    """Writes one batch's lines as they come, a chunk per short transaction (a long build
    never holds the store's lock), and makes it the run's draft at the end, in one."""

    CHUNK = 5000

    def __init__(self, ledger: Batches, run_id: str, period: str) -> None:
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
            n = ledger.store.query(
                "select count(*) as n from journal_batches where run_id = ?", (run_id,)
            )
            self.batch_id = f"JE-{period}-{run_id[:6]}-{n[0]['n'] + 1}"
            insert_row(
                db,
                "journal_batches",
                {
                    "id": self.batch_id,
                    "run_id": run_id,
                    "period": period,
                    "status": "building",
                    "total_debit": "0",
                    "total_credit": "0",
                    "created_at": store.now(),
                    "content_hash": "",
                },
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

    def finish(self) -> BatchRow:
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

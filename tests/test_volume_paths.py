"""The fast paths a month at volume takes give exactly what the plain paths give: a journal
line's digest made in bulk, and a batch's lines paged by id among other batches' lines."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bot.store import chain

KEY = b"an audit key of thirty-two bytes"


@pytest.mark.parametrize("key", [KEY, b"a key longer than SHA-256's block of sixty-four bytes" * 2])
def test_digests_made_in_bulk_are_the_digests_of_each_line(key: bytes) -> None:
    lines: list[tuple[Any, ...]] = [
        (
            "JE-2026-10-abc-1",
            3,
            17,
            'JIB PRO-JIB-2609-201 · Permian Ridge "Operating" LLC',
            "6210",
            "Lease Operating Expense",
            "3924.90",
            "0.00",
            "W-TX-00001P",
            "Hollis 33-7H: Lease Operating Expense (17 lines)\nsecond line, ü, “quoted”",
            "document",
            "jib.csv:2,3,…,18 (17 lines)",
        ),
        ("JE-1", 1, 1, None, "2115", None, Decimal("0.00"), Decimal("12.5"), None, None, None, ""),
    ]
    bulk = chain.line_macs(key, lines)
    for values, digest in zip(lines, bulk, strict=True):
        line = dict(zip(chain.LINE_FIELDS, values, strict=True))
        # the digest as chain.py's docstring defines it, computed here from the definition
        canonical = json.dumps(
            [chain.LINES, {k: None if v is None else str(v) if isinstance(v, Decimal) else v
                           for k, v in line.items()}],
            ensure_ascii=False, sort_keys=True, separators=(",", ":"),
        )  # fmt: skip
        assert digest == hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()[:32]
        assert digest == chain.line_mac(key, line)
    assert bulk[0] != bulk[1]


def test_a_batch_is_paged_by_id_without_the_lines_of_batches_written_beside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(chain.covers, "PAGE", 3)  # where pages() reads it
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    conn.execute(
        "create table journal_lines (id integer primary key, batch_id text, entry_no int, "
        "line_no int, mac text)"
    )
    conn.execute("create index by_batch on journal_lines (batch_id, entry_no, line_no)")
    # two batches built at once: their chunks interleave in the table
    written: dict[str, list[int]] = {"A": [], "B": []}
    for n in range(20):
        batch = "A" if (n // 4) % 2 == 0 else "B"
        cur = conn.execute(
            "insert into journal_lines (batch_id, entry_no, line_no, mac) values (?, 1, ?, ?)",
            (batch, n, f"m{n}"),
        )
        written[batch].append(int(cur.lastrowid or 0))
    conn.execute("insert into journal_lines (batch_id, entry_no, line_no) values ('C', 1, 1)")

    def query(sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        return [dict(r) for r in conn.execute(sql, params)]

    for batch, ids in written.items():
        got = list(chain.pages(query, "id, mac", batch))
        assert [r["id"] for r in got] == ids
        assert [r["mac"] for r in got] == [f"m{i - 1}" for i in ids]
    assert list(chain.pages(query, "id", "none such")) == []


def test_a_batch_written_as_tuples_hashes_as_the_same_lines_as_dicts() -> None:
    from bot.close.batch import LINE_ROW, Entry
    from bot.close.controls import ContentHash, content_hash

    e = Entry(4, "JIB INV-1 · Operator · service 2026-09", "document")
    e.add("6210", debit=Decimal("10.00"), well_id="W-1", memo="a", ref="jib.csv:2", group="LOE")
    e.add("6210", debit=Decimal("5.25"), well_id="W-1", memo="b", ref="jib.csv:3", group="LOE")
    e.add("2110", credit=Decimal("15.25"), memo="invoice INV-1 «é»", ref="jib.csv:INV-1")
    e.finish()
    dicts, rows = list(e.iter_lines()), list(e.iter_rows())
    assert [dict(zip(LINE_ROW, r, strict=True)) for r in rows] == dicts
    assert dicts[0]["memo"] == "LOE (2 lines)" and dicts[0]["debit"] == Decimal("15.25")
    by_rows = ContentHash()
    by_rows.add_rows(rows[:1])
    by_rows.add_rows(rows[1:])
    assert by_rows.hexdigest() == content_hash(dicts)


def test_the_unheld_lines_are_those_whose_ref_no_decision_holds() -> None:
    """The held lines are found by line number first: a revenue line with a held JIB line's
    number, or one from another file with a held line's number, is kept."""
    from bot.close.checks import Pairs, _unheld
    from bot.close.data import RevenueLine

    zero = Decimal("0")
    lines = [
        RevenueLine("C1", "P", "", "W-1", "2026-09", "oil", *[zero] * 7, line=n, file=file)
        for file in ("revenue.csv", "stubs-october.csv")
        for n in range(2, 40)
    ]
    rows = [f"row {i}" for i in range(len(lines))]
    held = {"revenue.csv:7", "revenue.csv:31", "jib.csv:12", "stubs-october.csv:12", "other"}
    kept = _unheld(Pairs(lines, rows), held)  # type: ignore[arg-type]
    expected = [(line, row) for line, row in zip(lines, rows, strict=True) if line.ref not in held]
    assert list(kept) == expected and len(expected) == len(lines) - 3
    assert list(_unheld(Pairs(lines, rows), {"jib.csv:7"})) == list(zip(lines, rows, strict=True))  # type: ignore[arg-type]


def test_a_batch_written_in_chunks_keeps_every_line_in_order_with_its_totals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines come to the writer a few at a time or many at once; it stores them a chunk at a
    time (here 3): every line once, in order, with the batch's totals and content hash."""
    from bot.close.controls import content_hash
    from bot.close.ledger import BatchWriter, Ledger
    from bot.store import Store

    monkeypatch.setattr(BatchWriter, "CHUNK", 3)
    store = Store(tmp_path / "chunks.db")
    ledger = Ledger(store)
    run = store.runs.create(period="2026-10", mode="cli", started_by="U1", model="m")
    lines = [
        {
            "entry_no": 1,
            "line_no": n,
            "entry": "JIB INV-1",
            "account": "6210" if n % 2 else "2110",
            "account_name": None,
            "debit": Decimal(f"{n}.25") if n % 2 else Decimal("0.00"),
            "credit": Decimal("0.00") if n % 2 else Decimal(f"{n - 1}.25"),
            "well_id": f"W-{n}" if n % 2 else None,
            "memo": f"line {n}",
            "source": "document",
            "ref": f"jib.csv:{n + 1}",
        }
        for n in range(1, 9)
    ]
    writer = ledger.open_batch(run.id, period="2026-10")
    writer.add(lines[:5])  # a chunk and two over
    writer.add(lines[5:6])  # the chunk completed by one
    writer.add(lines[6:])
    saved = writer.finish()
    stored = list(ledger.iter_lines(saved["id"]))
    assert [(x["line_no"], x["debit"], x["credit"], x["well_id"]) for x in stored] == [
        (x["line_no"], x["debit"], x["credit"], x["well_id"]) for x in lines
    ]
    debits = sum((x["debit"] for x in lines), Decimal(0))
    assert debits == Decimal("1.25") + Decimal("3.25") + Decimal("5.25") + Decimal("7.25")
    assert Decimal(saved["total_debit"]) == debits == Decimal(saved["total_credit"])
    assert saved["content_hash"] == content_hash(lines) == content_hash(stored)
    store.close()


def _cover_read_back(db: Path, key: bytes, batch_id: str) -> str:
    """A batch's cover as chain.py defines it, from the file: HMAC-SHA256 over the batch's ref
    and each of its lines' id and digest, in id order, with the count."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "select id, mac from journal_lines where batch_id = ? order by id", (batch_id,)
    ).fetchall()
    conn.close()
    h = hmac.new(key, f"journal_lines@{batch_id}".encode(), hashlib.sha256)
    for line_id, mac in rows:
        h.update(f";{line_id}:{mac}".encode())
    return f"{len(rows)}:{h.hexdigest()[:32]}"


@pytest.mark.sqlite_only("reads and meddles with the file through sqlite3, beside the store")
@pytest.mark.parametrize("meddled", [False, True])
def test_a_drafted_batchs_cover_is_its_lines_as_they_stand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, meddled: bool
) -> None:
    """The writer digests the lines it writes for the drafted event's cover (no read-back of a
    300,000-line batch). Written in chunks with another run's batch between them, the cover is
    the lines read back; and when the batch is changed before it is drafted (a line removed
    here), the cover is of the lines as they then stand, and the trail verifies."""
    from bot.close.ledger import BatchWriter, Ledger
    from bot.store import Store

    key = "k" * 40
    monkeypatch.setenv(chain.KEY_ENV, key)
    monkeypatch.setattr(BatchWriter, "CHUNK", 3)
    store = Store(tmp_path / "cover.db")
    ledger = Ledger(store)
    runs = [
        store.runs.create(period=p, mode="cli", started_by="U1", model="m")
        for p in ("2026-10", "2026-11")
    ]

    def line(n: int) -> dict[str, Any]:
        amount = Decimal(f"{n}.10")
        return {
            "entry_no": 1, "line_no": n, "entry": "JIB", "account": "6210" if n % 2 else "2110",
            "account_name": None, "debit": amount if n % 2 else Decimal("0.00"),
            "credit": Decimal("0.00") if n % 2 else amount, "well_id": None, "memo": f"line {n}",
            "source": "document", "ref": f"jib.csv:{n}",
        }  # fmt: skip

    ours = ledger.open_batch(runs[0].id, period="2026-10")
    theirs = ledger.open_batch(runs[1].id, period="2026-11")
    for n in range(1, 13, 3):  # their chunks between ours: the batch's ids are not contiguous
        ours.add([line(n), line(n + 1), line(n + 2)])
        theirs.add([line(n), line(n + 1), line(n + 2)])
    if meddled:
        conn = sqlite3.connect(store.path)
        conn.execute(
            "delete from journal_lines where batch_id = ? and line_no = 5", (ours.batch_id,)
        )
        conn.commit()
        conn.close()
    saved = ours.finish()
    event = store.audit.events(runs[0].id, kind="journal_drafted")[-1]
    covers = json.loads(
        sqlite3.connect(store.path)
        .execute("select covers from audit_events where id = ?", (event.id,))
        .fetchone()[0]
    )
    expected = _cover_read_back(store.path, key.encode(), saved["id"])
    assert covers[f"journal_lines@{saved['id']}"] == expected
    assert expected.startswith("11:" if meddled else "12:")
    verdict = store.audit.verdict(runs[0].id)
    assert verdict.ok and verdict.rows == 3, verdict
    store.close()


def test_the_totals_remembered_as_a_batch_is_written_are_its_lines_sums(tmp_path: Path) -> None:
    """The summary and flux read a drafted batch's totals by account from what its builder
    summed as it wrote; they are the sums of the stored lines, to the cent, in the same form
    as SQLite's sum in cents gives them."""
    from bot.close.books.batches import _account_totals
    from tests.close_helpers import close_run

    run = close_run(None, tmp_path / "totals.db")
    batch = run.batch()
    remembered = _account_totals[run.store][batch["id"]]
    by_lines: dict[str, list[Decimal]] = {}
    for line in run.lines():
        sums = by_lines.setdefault(line["account"], [Decimal(0), Decimal(0)])
        sums[0] += line["debit"]
        sums[1] += line["credit"]
    assert [(r["account"], r["debit"], r["credit"]) for r in remembered] == [
        (a, d, c) for a, (d, c) in sorted(by_lines.items())
    ]
    summed = run.ledger._sum_accounts(batch["id"])  # what SQLite gives, read afresh
    assert [(r["account"], str(r["debit"]), str(r["credit"])) for r in remembered] == [
        (r["account"], str(r["debit"]), str(r["credit"])) for r in summed
    ]
    assert run.ledger.account_totals(batch["id"]) == summed


def test_a_summarized_lines_ref_names_each_source_line() -> None:
    """A summed line's ref says which lines it sums: their numbers in one file, the rest of
    each ref when they share only the file, each ref whole when they share nothing."""
    from bot.close.batch import _refs

    assert _refs(["jib.csv:2"]) == "jib.csv:2"
    assert _refs(["jib.csv:2", "jib.csv:6"]) == "jib.csv:2,6"
    many = [f"jib.csv:{n}" for n in range(2, 19)]
    assert _refs(many) == "jib.csv:2,3,…,18 (17 lines)"
    products = ["production.csv:W-1:oil:2026-09", "production.csv:W-1:gas:2026-08"]
    assert _refs(products) == "production.csv:W-1:oil:2026-09,W-1:gas:2026-08"
    assert _refs(["jib_history LOE", "jib_history Overhead"]) == (
        "jib_history LOE, jib_history Overhead"
    )


def test_last_months_accrued_receivable_reads_the_same_per_well_or_per_product() -> None:
    """The next close reads each product's accrued receivable from last month's posted batch:
    from its own 1210 line as an earlier release posted it (one per product), or, now that the
    receivable is one line per well, as the product's revenue less its severance."""
    from bot.close import data as close_data
    from bot.close.checks import prior_revenue_accruals

    def line(account: str, debit: str, credit: str, product: str, ref: str = "") -> dict[str, Any]:
        memo = f"accrue Baker 1H {product} 2026-09: 100 × (70.00 − 1.00) × 0.10000000"
        return {
            "batch_id": "JE-1", "source": "accrual", "account": account, "well_id": "W-1",
            "debit": Decimal(debit), "credit": Decimal(credit),
            "memo": memo + (" severance" if account == "6110" else ""),
            "ref": ref or f"production.csv:W-1:{product}:2026-09",
        }  # fmt: skip

    sides = [
        line("6110", "100.00", "0", "oil"), line("4010", "0", "1000.00", "oil"),
        line("6110", "50.00", "0", "gas"), line("4020", "0", "500.00", "gas"),
    ]  # fmt: skip
    per_product = [line("1210", "900.00", "0", "oil"), line("1210", "450.00", "0", "gas"), *sides]
    per_well = [
        {
            **line("1210", "1350.00", "0", "oil"),
            "memo": "Baker 1H: accrued receivable (2 lines)",
            "ref": "production.csv:W-1:oil:2026-09,W-1:gas:2026-09",
        },
        *sides,
    ]
    data = close_data.load("2026-10")

    def read(lines: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[Decimal, ...]]:
        return {
            (a["product"], a["month"]): (a["revenue"], a["severance"], a["receivable"])
            for a in prior_revenue_accruals(data, lines)
        }

    expected = {
        ("oil", "2026-09"): (Decimal("1000.00"), Decimal("100.00"), Decimal("900.00")),
        ("gas", "2026-09"): (Decimal("500.00"), Decimal("50.00"), Decimal("450.00")),
    }
    assert read(per_product) == expected
    assert read(per_well) == expected

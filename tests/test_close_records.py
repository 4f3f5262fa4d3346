"""The close's records (bot/close/records.py) and the decision log's rows are TypedDicts, checked
by mypy only: here their keys are held to the tables' columns, so a column added, renamed or
dropped shows in the type too."""

from __future__ import annotations

import csv
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import get_type_hints

from bot.close.ledger import Ledger
from bot.close.records import (
    AccountTotal,
    BatchRow,
    DoiRecord,
    ExceptionDetails,
    ExceptionRow,
    JournalLine,
    OpenItemRow,
    StoredJournalLine,
)
from bot.core.decision_log import DECISION_COLUMNS, DecisionRow, decision_rows
from bot.store import Store
from tests.close_helpers import choose_label, close_run
from tests.period_kit import edit, write_period
from tests.test_close_books import generated_month


def _columns(store: Store, table: str) -> set[str]:
    return {row["name"] for row in store.query(f"pragma table_info({table})")}


def test_records_have_their_tables_columns(store: Store) -> None:
    Ledger(store)  # the close's migrations
    assert set(ExceptionRow.__annotations__) == _columns(store, "exceptions") | {"extra"}
    assert set(BatchRow.__annotations__) == _columns(store, "journal_batches")
    assert set(JournalLine.__annotations__) == _columns(store, "journal_lines")
    assert set(StoredJournalLine.__annotations__) == _columns(store, "journal_lines")
    assert set(DoiRecord.__annotations__) == _columns(store, "doi_rows")
    assert set(OpenItemRow.__annotations__) == _columns(store, "open_items")


def test_optional_keys_are_the_ones_a_record_may_lack() -> None:
    assert ExceptionDetails.__optional_keys__ == frozenset({"group", "legacy"})
    for record in (ExceptionRow, BatchRow, JournalLine, DoiRecord, OpenItemRow, AccountTotal):
        assert not record.__optional_keys__, record
        assert get_type_hints(record)  # every annotation resolves


def test_decision_rows_have_the_decision_logs_columns() -> None:
    assert set(DecisionRow.__annotations__) == set(DECISION_COLUMNS)
    assert len(DECISION_COLUMNS) == len(DecisionRow.__annotations__)


# -- issue 29: records that say only what happened ------------------------------------------------


def test_a_line_held_for_its_bad_decimal_is_not_asked_again_as_line_math(
    tmp_path: Path, db_path: Path
) -> None:
    """jib.csv line 12 bills W-B's compressor at decimal 12 (typed for 0.25) and a net of $500.00
    (2,000.00 × 0.25): intake holds it in suspense for its decimal; line math (2,000 × 12 =
    24,000 ≠ 500) finds the same line and is settled by that decision — never asked, never
    "Book the computed amount (Dr 6210 $23,500.00)" logged with nothing booked."""
    folder = generated_month(tmp_path) / "2026-10"
    text = (folder / "jib.csv").read_text()
    (folder / "jib.csv").write_text(text.replace("12.00000000,24000.00", "12.00000000,500.00"))
    run = close_run(folder.parent, db_path)
    held = run.exception("decimal_range:jib:12")
    assert held["resolution"] == "suspense"
    math = run.exception("line_math:12")
    assert math["resolution"] == "settled" and math["extra"]["settled_by"] == "decimal_range:jib:12"
    assert "[ref line_math:12]" not in run.questions_text()  # never asked
    # the line books once, as received, held in 1395: 500.00 (its own figures, not 24,000)
    booked = {
        (x["account"], x["debit"], x["credit"])
        for x in run.lines()
        if x["ref"] == "jib.csv:12" and x["source"] != "document"
    }
    assert booked == {
        ("1395", Decimal("500.00"), Decimal("0.00")),
        ("6210", Decimal("0.00"), Decimal("500.00")),
    }


def test_accepting_a_lower_stub_nri_asks_the_overpaid_checks_and_keeps_the_doi_identity(
    tmp_path: Path, db_path: Path
) -> None:
    """Alpha 1H's August stub pays NRI 0.35 where the DOI says 0.40 (WI 0.50, royalty 0.20);
    accepting it from 2026-07-01 promises "the checks paid at the old NRI since then are one
    question next": the July check paid at 0.40 was overpaid, so that question comes and books
    what it says; the new DOI row keeps NRI = WI × (1 − royalty − ORRI); the decision log
    carries what each option would have booked."""
    folder = write_period(tmp_path / "data")
    edit(
        folder,
        "revenue.csv",
        "3220.00,0.00,0.40000000,26712.00",
        "3220.00,0.00,0.35000000,23373.00",  # (70,000 − 3,220) × 0.35
    )
    run = close_run(
        folder.parent,
        db_path,
        choose=choose_label(**{"wi_nri:W-A": "Accept operator's decimal, update DOI"}),
        rationale="the division order changed",
    )
    assert run.exception("doi_effective:W-A")["resolution"] == "2026-07-01"
    # the July check (revenue_history.csv) paid at 0.40: worked from the file at 0.35
    with open(folder / "revenue_history.csv", newline="", encoding="utf-8") as f:
        july = next(r for r in csv.DictReader(f) if r["well_id"] == "W-A")
    due = (
        (Decimal(july["gross_value"]) - Decimal(july["gross_taxes"])) * Decimal("0.35")
    ).quantize(Decimal("0.01"), ROUND_HALF_UP)
    overpaid = Decimal(july["owner_net_value"]) - due
    assert overpaid == Decimal("3291.30")
    over = run.exception("stub_overpaid:W-A")
    assert over["resolution"] == "book" and Decimal(over["details"]["facts"]["total"]) == overpaid
    assert "[ref stub_overpaid:W-A]" in run.questions_text()  # the promised question, asked
    booked = [x for x in run.lines() if x["memo"].endswith("overpaid at the old NRI, owed back")]
    assert {(x["account"], x["debit"], x["credit"]) for x in booked} == {
        ("4090", overpaid, Decimal("0.00")),
        ("2310", Decimal("0.00"), overpaid),
    }
    # the new DOI row: NRI = WI × (1 − royalty − ORRI), worked here
    (row,) = [r["row"] for r in run.ledger.doi_rows(run_id=run.run_id)]
    wi, nri = Decimal(row["wi"]), Decimal(row["nri"])
    royalty, orri = Decimal(row["royalty"]), Decimal(row["orri"])
    assert (wi, nri) == (Decimal("0.5"), Decimal("0.35"))
    assert abs(wi * (1 - royalty - orri) - nri) <= Decimal("0.000001")
    effective_q = next(
        q.question for a in run.asks for q in a.questions if "[ref doi_effective:W-A]" in q.question
    )
    assert "royalty 0.20000000 → 0.30000000" in effective_q  # the change explained, and asked
    # the decision log: every option with what it would have booked
    rows = decision_rows(run.store, run.run_id)
    logged = next(r for r in rows if "stub_overpaid:W-A" in r["exception"])
    assert "Book the overpayment as owed back: Dr 4090" in logged["option_books"]
    assert f"${overpaid:,}" in logged["option_books"]
    assert "Accept as paid (logged): " in logged["option_books"]


def test_a_prior_period_true_up_is_not_a_revenue_split_flux_alarm(
    tmp_path: Path, db_path: Path
) -> None:
    """Alpha 1H's May oil comes as a 100 bbl true-up (sale month older than the accrual window:
    4090). Against April's full 1,000 bbl check in the history the volume/price split of that
    true-up would be a $24,000 "movement" — a false alarm: a true-up is not a month's sales."""
    folder = generated_month(tmp_path) / "2026-10"
    with open(folder / "revenue_history.csv", "a", encoding="utf-8") as f:
        # April: (68,000.00 − 3,128.00) × 0.40 = 25,948.80
        f.write(
            "CHK-00,Acme Marketing,AC-1,W-A,2026-04,oil,1000,68.00,68000.00,3128.00,0.00,0.40000000,25948.80\n"
        )
    run = close_run(folder.parent, db_path)
    refs = {e["details"]["ref"] for e in run.exceptions()}
    assert "flux_item:W-A:oil" not in refs
    # no well × product split item at all (the 4090 account's own movement is reconciled there)
    assert not [
        e
        for e in run.exceptions()
        if e["kind"] == "flux_item" and e["details"]["facts"]["item"].get("well_id")
    ]

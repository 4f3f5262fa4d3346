"""Files in operators' layouts → the period's rows in the database, checked whole."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path

from bot.close import data as close_data
from bot.close.imports.intake import Imports, load_period
from bot.close.imports.sheet import read_sheets
from bot.store import Store
from tests.cli_run import LOGIN, closebot, run_id_of
from tests.import_files import FOREIGN_JIB, jib_xlsx, sample_rows, write_period


def test_xlsx_title_rows_skipped_header_found_values_as_excel_stores_them() -> None:
    sheets = read_sheets("Permian JIB.xlsx", jib_xlsx())
    sheet = sheets[0]
    assert sheet.name == "JIB Detail"
    assert sheet.header == FOREIGN_JIB
    assert sheet.header_row == 3
    assert sheet.skipped_titles == ["Joint Interest Billing — owner statement"]
    first = sheet.rows[0][1]
    assert first[2] == "2026-09-01"  # a date cell, not its display
    assert first[9] == "0.275"  # the double Excel stores, shortest form
    assert len(sheet.rows) == len(sample_rows("jib.csv"))
    assert [n for n, _ in sheet.totals] == [4 + len(sheet.rows)]


def test_foreign_headers_are_asked_then_confirmed_then_remembered(store: Store) -> None:
    imports = Imports(store)
    got = imports.receive(
        filename="Permian JIB.xlsx",
        raw=jib_xlsx(),
        dropped_by="UALICE",
        origin="test",
        period="2026-10",
    )
    assert got.status == "pending" and got.ask is not None
    assert got.ask.needs == ["mapping"] and got.ask.kind == "jib.csv"
    assert got.ask.mapping["owner_net_amount"] == "Your Share"
    assert got.ask.mapping["owner_decimal"] == "Your Decimal"
    assert got.ask.mapping["gross_amount"] == "Gross Amt"
    assert imports.active("2026-10") == []  # nothing used before the person confirms

    done = imports.confirm(got.id, by="UALICE")
    assert done.status == "active" and done.converted is not None
    # the rows read are the sample's: an independent read of the CSV it was made from
    expected = sample_rows("jib.csv")
    assert done.converted.rows == len(expected)
    by_operator: dict[str, Decimal] = {}
    for r in expected:
        by_operator[r["operator"]] = by_operator.get(r["operator"], Decimal(0)) + Decimal(
            r["owner_net_amount"]
        )
    assert done.converted.totals == by_operator
    loaded = load_period(store, "2026-10", None)
    assert [(j.invoice_no, j.owner_net_amount, j.service_month) for j in loaded.jib] == [
        (r["invoice_no"], Decimal(r["owner_net_amount"]), r["service_month"]) for r in expected
    ]
    assert loaded.hashes["jib.csv"] == imports.active("2026-10")[0]["sha256"]

    # next month's file from the same operators, same layout: maps itself
    november = [{**r, "service_month": "2026-10"} for r in expected]
    nxt = imports.receive(
        filename="Permian JIB Nov.xlsx",
        raw=jib_xlsx(november),
        dropped_by="UBEN",
        origin="test",
        period="2026-11",
    )
    assert nxt.status == "active", nxt
    assert "UALICE confirmed" in nxt.mapped


def test_a_bad_file_is_reported_whole_and_nothing_is_used(store: Store) -> None:
    rows = sample_rows("jib.csv")
    rows[1] = {**rows[1], "gross_amount": "12,00.00x"}
    rows[4] = {**rows[4], "service_month": "2026-13"}
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    body = text.getvalue() + "Total,,,,,,,,,,1.00\n"
    imports = Imports(store)
    got = imports.receive(
        filename="jib.csv", raw=body.encode(), dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert got.status == "refused"
    where = {(p.line, p.column) for p in got.problems}
    assert (3, "gross_amount") in where  # line 3 of the file: the second row
    assert (6, "service_month") in where
    total_line = len(rows) + 2
    assert (total_line, "owner_net_amount") in where
    assert all(p.file == "jib.csv" for p in got.problems)
    assert imports.active("2026-10") == []
    # the loader still reads the folder's own jib.csv: the bad file changed nothing
    assert load_period(store, "2026-10", None).jib == close_data.load("2026-10").jib


def test_a_replaced_file_supersedes_the_first_with_an_audit_event(store: Store) -> None:
    imports = Imports(store)
    first = (close_data.SAMPLE_DIR / "2026-10" / "revenue.csv").read_bytes()
    a = imports.receive(
        filename="revenue.csv", raw=first, dropped_by="UALICE", origin="test", period="2026-10"
    )
    assert a.status == "active"
    second = first.replace(b"CHK-884120", b"CHK-884121")
    b = imports.receive(
        filename="revenue.csv", raw=second, dropped_by="UBEN", origin="test", period="2026-10"
    )
    assert b.status == "active" and b.superseded and b.superseded["id"] == a.id
    assert imports.file(a.id)["status"] == "superseded"
    assert imports.file(a.id)["superseded_by"] == b.id
    assert [f["id"] for f in imports.active("2026-10")] == [b.id]
    events = store.query("select * from audit_events where kind = 'file_superseded'")
    assert len(events) == 1 and events[0]["actor"] == "UBEN"
    assert str(a.id) in events[0]["detail"] and str(b.id) in events[0]["detail"]
    assert {r.check_no for r in load_period(store, "2026-10", None).revenue} >= {"CHK-884121"}
    # the same file again changes nothing
    again = imports.receive(
        filename="revenue.csv", raw=second, dropped_by="UBEN", origin="test", period="2026-10"
    )
    assert again.status == "duplicate"
    assert [f["id"] for f in imports.active("2026-10")] == [b.id]


def test_kind_and_period_that_cannot_be_told_are_asked(store: Store) -> None:
    raw = (close_data.SAMPLE_DIR / "2026-10" / "revenue.csv").read_bytes()
    got = Imports(store).receive(
        filename="statement.csv", raw=raw, dropped_by="UALICE", origin="test"
    )
    assert got.status == "pending" and got.ask is not None
    assert "kind" in got.ask.needs and "period" in got.ask.needs
    assert set(got.ask.kinds[:2]) == {"revenue.csv", "revenue_history.csv"}
    done = Imports(store).confirm(got.id, by="UALICE", kind="revenue.csv", period="2026-10")
    assert done.status == "active" and done.kind == "revenue.csv"


def test_data_import_at_the_terminal_then_a_close_on_those_files(tmp_path: Path) -> None:
    folder = write_period(tmp_path / "mine")
    (folder / "jib.csv").unlink()
    (folder / "Permian JIB Oct 2026.xlsx").write_bytes(jib_xlsx())
    data = tmp_path / "empty"
    data.mkdir()
    env = {"CLOSEBOT_DATA": str(data)}
    first = closebot("data", "import", str(folder), "--period", "2026-12", env=env)
    assert first.returncode == 2, first.stdout + first.stderr
    assert "Permian JIB Oct 2026.xlsx: not imported yet" in first.stdout
    assert 'owner_net_amount = "Your Share"' in first.stdout  # the proposal, as a --map section
    assert "give --yes" in first.stdout
    second = closebot("data", "import", str(folder), "--period", "2026-12", "--yes", env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "(jib.csv) for 2026-12" in second.stdout
    run = closebot("run", "2026-12", "--auto", env=env)
    assert "Decision log: closebot audit" in run.stdout, run.stdout + run.stderr
    run_id = run_id_of(run.stdout)
    log = closebot("audit", run_id, "--csv", env=env)
    assert f"Permian JIB Oct 2026.xlsx, dropped by {LOGIN}" in log.stdout  # the OS login
    assert "owner_net_amount←Your Share" in log.stdout

"""Issue 6: the v2 data format, checked whole — every problem named, nothing imported."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from bot.close import data as close_data
from bot.close.data import DataProblems, parse_amount
from bot.store import Store
from tests.cli_run import closebot
from tests.period_kit import edit, write_period


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("1510", "1510"),
        ("1,510.00", "1510.00"),
        ("$1,510.00", "1510.00"),
        ("(4,200.00)", "-4200.00"),
        ("-4200.00", "-4200.00"),
        ("$0.50", "0.50"),
    ],
)
def test_amounts_as_accounting_exports_write_them(raw: str, value: str) -> None:
    assert parse_amount(raw) == Decimal(value)


@pytest.mark.parametrize(
    "raw", ["4.8E+999999", "1e3", "12,34.00", "1.510,00", "NaN", "Infinity", "$", "--5", "1 510"]
)
def test_anything_else_is_not_an_amount(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_amount(raw)


def test_quoted_and_dollar_amounts_load(tmp_path: Path) -> None:
    folder = write_period(tmp_path)
    edit(folder, "jib.csv", "10000.00,0.50000000,5000.00", '"$10,000.00",0.50000000,"5,000.00"')
    edit(
        folder,
        "tb_activity.csv",
        "4010,Oil Revenue,0.00,44000.00",
        '4010,Oil Revenue,0.00,"(-44,000.00)"',
    )
    data = close_data.load("2026-10", tmp_path)
    assert data.jib[0].gross_amount == Decimal("10000.00") and data.jib[
        0
    ].owner_net_amount == Decimal("5000.00")


def test_lines_without_quotes_are_read_as_the_csv_module_reads_them() -> None:
    """Plain lines are split on their commas, not parsed by csv.reader; every record reads as
    csv.reader gives it: quoted commas, a quoted cell over two lines (the records after it keep
    their numbers), CRLF and lone CR endings, blank lines, a NUL, spaces around a cell, a
    dollar amount, a row with a comma too many (named by its line), no newline at the end."""
    import csv
    import io

    head = "operator,invoice_no,service_month,property_no,well_id,afe_no,cost_category,description,gross_amount,owner_decimal,owner_net_amount"
    row = "Op A,INV-{n},2026-09,P-1,W-1,,LOE,{d},{g},0.50000000,{o}"
    text = "\ufeff" + "\r\n".join(
        [
            head,
            row.format(n=1, d="Pumper", g="100.00", o="50.00"),
            row.format(n=2, d='"Rods, pump"', g="200.00", o="100.00"),
            row.format(n=3, d='"Pump\nrepair"', g="300.00", o="150.00"),
            "",
            row.format(n=4, d="Chem\x00icals", g="400.00", o="200.00"),
            row.format(n=5, d="Water, hauling", g="500.00", o="250.00"),  # one comma too many
            row.format(n=6, d=" Salt water ", g='"$1,200.00"', o="600.00") + "\r",
            row.format(n=7, d="Last", g="700.00", o="350.00"),
        ]
    )
    problems: list[close_data.Problem] = []
    rows = close_data.read_kind(
        "jib.csv", io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8-sig", newline=""),
        problems,
    )  # fmt: skip
    # what csv.reader makes of the same text, numbered as records from the header's 1
    records = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline="")))
    expected = [
        (n, r[1], r[7].strip(), Decimal(r[8].replace("$", "").replace(",", "")))
        for n, r in enumerate(records[1:], start=2)
        if len(r) == 11
    ]
    assert [(r.line, r.invoice_no, r.description, r.gross_amount) for r in rows] == expected
    assert [r[2] for r in expected] == [
        "Pumper", "Rods, pump", "Pump\nrepair", "Chem\x00icals", "Salt water", "Last"
    ]  # fmt: skip
    assert [(p.line, p.expected) for p in problems] == [
        (7, "11 fields, found 12 (an unquoted comma in an amount?)")
    ]


def test_problems_in_three_files_are_all_named_and_nothing_is_imported(tmp_path: Path) -> None:
    folder = write_period(tmp_path)
    # an unquoted thousands separator shifts the columns of a JIB line
    edit(folder, "jib.csv", "8000.00,0.25000000,2000.00", "15,604.88,0.25000000,3901.22")
    edit(folder, "revenue.csv", "2026-08,oil,500", "2026-08,water,500")
    edit(folder, "revenue.csv", "3220.00,0.00", "4.8E+999999,0.00")
    edit(folder, "doi.csv", "2020-01-01,2018-01", "2020-13-01,2018-01")
    with pytest.raises(DataProblems) as caught:
        close_data.load("2026-10", tmp_path)
    where = {(p.file, p.line, p.column) for p in caught.value.problems}
    assert where == {
        ("jib.csv", 4, ""),
        ("revenue.csv", 3, "product"),
        ("revenue.csv", 2, "gross_taxes"),
        ("doi.csv", 3, "effective_from"),
    }
    text = str(caught.value)
    assert "jib.csv line 4" in text and "11 fields, found 12" in text and "unquoted comma" in text
    assert "'water': expected a product" in text and "'4.8E+999999'" in text
    assert "nothing was imported" in text


def test_data_check_reports_every_problem_and_exits_2_and_run_creates_nothing(
    tmp_path: Path,
) -> None:
    folder = write_period(tmp_path / "data")
    edit(folder, "jib.csv", "W-A,,LOE,Lease", "W-A,,Capital,Lease")
    (folder / "afe.csv").unlink()
    (folder / "prices.csv").write_bytes(
        b"month,product,benchmark_price,differential\n2026-09,oil,72.00,2.00\n2026-09,g\xe4s,3.00,0.20\n"
    )
    checked = closebot("data", "check", str(tmp_path / "data"))
    assert checked.returncode == 2
    out = checked.stdout
    assert "2026-10: 3 problem(s); nothing would be imported" in out
    assert "jib.csv line 2, column cost_category: 'Capital': expected a cost category" in out
    assert "afe.csv: expected the file (it is missing)" in out
    assert "prices.csv line 3: 'e4': expected UTF-8 text" in out
    db = tmp_path / "closebot.db"
    ran = closebot("run", "2026-10", "--auto", "--data", str(tmp_path / "data"), "--db", str(db))
    assert ran.returncode == 2 and "3 problems" in ran.stderr and "Traceback" not in ran.stderr
    assert Store(db).runs.recent() == []


def test_data_check_one_period_and_a_clean_folder(tmp_path: Path) -> None:
    write_period(tmp_path)
    ok = closebot("data", "check", str(tmp_path), "2026-10")
    assert ok.returncode == 0 and "2026-10: ok (11 files)" in ok.stdout
    bad = closebot("data", "check", str(tmp_path), "2026-13")
    assert bad.returncode == 2 and "not an accounting period" in bad.stderr


def test_data_sample_writes_the_shipped_periods_which_check_clean(tmp_path: Path) -> None:
    target = tmp_path / "sample"
    wrote = closebot("data", "sample", str(target))
    assert wrote.returncode == 0, wrote.stderr
    assert sorted(p.name for p in target.iterdir() if p.is_dir()) == close_data.available_periods()
    assert (target / "account_map.csv").is_file()  # the entries' GL import files need it
    checked = closebot("data", "check", str(target))
    assert checked.returncode == 0, checked.stdout
    again = closebot("data", "sample", str(target))
    assert again.returncode == 2 and "already exists" in again.stderr


def test_an_accrual_of_an_unknown_product_or_category_is_refused(tmp_path: Path) -> None:
    folder = write_period(tmp_path)
    edit(folder, "accruals.csv", "revenue,W-A,oil,2026-08", "revenue,W-A,water,2026-08")
    edit(folder, "accruals.csv", "loe,W-A,LOE,2026-09", "loe,W-A,Capital,2026-09")
    with pytest.raises(DataProblems) as caught:
        close_data.load("2026-10", tmp_path)
    assert {(p.file, p.line, p.value) for p in caught.value.problems} == {
        ("accruals.csv", 2, "Capital"),
        ("accruals.csv", 3, "water"),
    }

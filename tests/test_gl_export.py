"""Journal import files for QuickBooks Online, Xero and NetSuite: the documented columns,
one entry per batch, balanced — checked here by reading the files back independently."""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from bot.close import exports
from bot.close.data import SAMPLE_DIR
from tests.cli_run import closebot, run_id_of

# What each system's import documents (README, "Entries your ledger imports", cites them).
DOCUMENTED = {
    "qbo": [
        "Journal No.",
        "Journal Date",
        "Account Name",
        "Debits",
        "Credits",
        "Description",
        "Name",
    ],
    "xero": ["Narration", "Date", "Description", "AccountCode", "TaxRate", "Amount"],
    "netsuite": ["External ID", "Date", "Memo", "Account", "Debit", "Credit", "Line Memo", "Name"],
    "csv": [
        "journal_no",
        "date",
        "gl_account",
        "gl_name",
        "debit",
        "credit",
        "description",
        "closebot_account",
        "well_id",
        "source",
        "ref",
    ],
}
DATE_FORMAT = {
    "qbo": r"10/31/2026",
    "xero": r"31/10/2026",
    "netsuite": r"10/31/2026",
    "csv": r"2026-10-31",
}


def _gl_map() -> dict[str, tuple[str, str]]:
    rows = csv.DictReader(io.StringIO((SAMPLE_DIR / "account_map.csv").read_text()))
    return {r["account"]: (r["gl_account"], r["gl_name"]) for r in rows}


@pytest.fixture(scope="module")
def closed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    db = tmp_path_factory.mktemp("gl") / "closebot.db"
    env = {"CLOSEBOT_DB": str(db), "CLOSEBOT_USER": "alice"}
    run = closebot("run", "2026-10", "--auto", env=env)
    assert "Decision log" in run.stdout, run.stdout + run.stderr
    return run_id_of(run.stdout), env


def _money(cell: str) -> Decimal:
    return Decimal(cell) if cell else Decimal(0)


@pytest.mark.parametrize("fmt", ["qbo", "xero", "netsuite", "csv"])
def test_import_file_has_the_documented_columns_and_balances(
    fmt: str, closed_run: tuple[str, dict[str, str]]
) -> None:
    run_id, env = closed_run
    native = closebot("entries", run_id, "--csv", env=env)
    ours = list(csv.DictReader(io.StringIO(native.stdout)))
    got = closebot("entries", run_id, "--format", fmt, env=env)
    assert got.returncode == 0, got.stderr
    rows = list(csv.reader(io.StringIO(got.stdout)))
    assert rows[0] == DOCUMENTED[fmt]
    body = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    assert len(body) == len(ours)
    gl = _gl_map()
    by_gl: dict[str, Decimal] = defaultdict(Decimal)
    expected: dict[str, Decimal] = defaultdict(Decimal)
    for line in ours:
        number, name = gl[line["account"]]
        key = {"qbo": name, "xero": number, "netsuite": f"{number} {name}", "csv": number}[fmt]
        expected[key] += Decimal(line["debit"]) - Decimal(line["credit"])
    for r in body:
        if fmt == "qbo":
            assert r["Journal Date"] == DATE_FORMAT[fmt]
            by_gl[r["Account Name"]] += _money(r["Debits"]) - _money(r["Credits"])
            number = r["Journal No."]
        elif fmt == "xero":
            assert r["Date"] == DATE_FORMAT[fmt] and r["TaxRate"]
            by_gl[r["AccountCode"]] += Decimal(r["Amount"])
            number = r["Narration"]
        elif fmt == "netsuite":
            assert r["Date"] == DATE_FORMAT[fmt]
            by_gl[r["Account"]] += _money(r["Debit"]) - _money(r["Credit"])
            number = r["External ID"]
        else:
            assert r["date"] == DATE_FORMAT[fmt]
            by_gl[r["gl_account"]] += _money(r["debit"]) - _money(r["credit"])
            number = r["journal_no"]
        assert number == (body[0].get("Narration") or number)  # one entry per batch
    numbers = {
        r.get("Journal No.") or r.get("Narration") or r.get("External ID") or r.get("journal_no")
        for r in body
    }
    assert len(numbers) == 1  # one entry number (or narration) for the whole batch
    assert sum(by_gl.values()) == 0  # balanced
    assert {k: v for k, v in by_gl.items() if v} == {k: v for k, v in expected.items() if v}
    every = got.stdout
    assert re.search(r"documents: jib\.csv sha256 [0-9a-f]{12}", every)  # the memo names them


@pytest.mark.parametrize("fmt", exports.names())
def test_every_registered_format_writes_the_whole_batch_with_its_memo(
    fmt: str, closed_run: tuple[str, dict[str, str]]
) -> None:
    """What holds for any format the registry lists (a new one's own test checks its layout)."""
    run_id, env = closed_run
    ours = list(csv.DictReader(io.StringIO(closebot("entries", run_id, "--csv", env=env).stdout)))
    got = closebot("entries", run_id, "--format", fmt, env=env)
    assert got.returncode == 0, got.stderr
    rows = list(csv.reader(io.StringIO(got.stdout)))
    assert len(rows) == len(ours) + 1 and len({len(r) for r in rows}) == 1
    assert re.search(r"documents: jib\.csv sha256 [0-9a-f]{12}", got.stdout)


def test_the_cli_offers_the_registered_formats() -> None:
    got = closebot("entries", "x", "--format", "nope")
    assert got.returncode == 2
    assert "choose from " + ", ".join(f"'{n}'" for n in exports.names()) in got.stderr
    assert {"qbo", "xero", "netsuite"} <= {f.id for f in exports.formats() if f.attached}
    assert not exports.format_named("csv").attached  # Slack attaches closebot's own journal CSV


def test_an_unmapped_account_is_named_and_nothing_is_written(
    closed_run: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    run_id, env = closed_run
    partial = tmp_path / "account_map.csv"
    lines = (SAMPLE_DIR / "account_map.csv").read_text().splitlines()
    partial.write_text("\n".join(x for x in lines if not x.startswith("2110,")) + "\n")
    got = closebot("entries", run_id, "--format", "qbo", "--map", str(partial), env=env)
    assert got.returncode == 2
    assert got.stdout == ""
    assert "2110 AP - JIB" in got.stderr
    folder = tmp_path / "data"
    closebot("data", "sample", str(folder), env=env)
    partial.replace(folder / "account_map.csv")
    check = closebot("data", "check", str(folder), env=env)
    assert check.returncode == 2
    assert "account_map.csv: 1 closebot account(s) with no GL account: 2110" in check.stdout

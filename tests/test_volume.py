"""Generated months (bench/genmonth.py): a clean month asks nothing, a planted month asks
exactly what was planted, at two sizes; summarized entries balance and sum to their detail;
every tool result stays under 4 KB. Correctness only: timings belong to `make bench`."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from bench.genmonth import generate
from bot.store import Store
from tests.cli_run import closebot, run_id_of

NOT_EXCEPTIONS = ("signoff",)  # the sign-off question is asked of every close


def close(tmp_path: Path, jib_lines: int, *, clean: bool, seed: int = 11) -> tuple[str, Path, Path]:
    """Generate a month and close it with --auto; (run id, data folder, database)."""
    data = tmp_path / f"data-{jib_lines}-{'clean' if clean else 'planted'}"
    generate(data, jib_lines, seed=seed, clean=clean)
    db = data / "closebot.db"
    ran = closebot("run", "2026-10", "--auto", "--data", str(data), "--db", str(db))
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    return run_id_of(ran.stdout), data, db


def asked(db: Path, run_id: str) -> set[str]:
    """The refs of the exceptions the run raised (each one is asked)."""
    rows = Store(db).query("select kind, details from exceptions where run_id = ?", (run_id,))
    return {json.loads(r["details"])["ref"] for r in rows if r["kind"] not in NOT_EXCEPTIONS}


@pytest.mark.parametrize("jib_lines", [400, 2000])
def test_a_clean_month_asks_nothing_and_a_planted_month_asks_exactly_the_planted(
    tmp_path: Path, jib_lines: int
) -> None:
    run_id, _, db = close(tmp_path, jib_lines, clean=True)
    assert asked(db, run_id) == set()
    run_id, data, db = close(tmp_path, jib_lines, clean=False)
    planted = json.loads((data / "planted.json").read_text())["planted"]
    assert len(planted) == 5
    assert asked(db, run_id) == {p["ref"] for p in planted}


def _csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_summarized_entries_balance_and_sum_to_their_detail(tmp_path: Path) -> None:
    run_id, data, db = close(tmp_path, 2000, clean=False)
    entries = closebot("entries", run_id, "--csv", "--db", str(db))
    detail = closebot("entries", run_id, "--detail", "--data", str(data), "--db", str(db))
    assert entries.returncode == 0 and detail.returncode == 0, detail.stderr
    lines, rows = _csv(entries.stdout), _csv(detail.stdout)
    assert len(rows) > 2 * len(lines)  # summarized: many source lines per entry line
    # every entry balances
    per_entry: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for line in lines:
        per_entry[line["entry_no"]][0] += Decimal(line["debit"])
        per_entry[line["entry_no"]][1] += Decimal(line["credit"])
    assert all(dr == cr for dr, cr in per_entry.values())
    # every entry line is the sum of its detail, and no detail row is left over
    sums: dict[tuple[str, str], list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for row in rows:
        sums[(row["entry_no"], row["line_no"])][0] += Decimal(row["debit"])
        sums[(row["entry_no"], row["line_no"])][1] += Decimal(row["credit"])
    assert set(sums) == {(x["entry_no"], x["line_no"]) for x in lines}
    for x in lines:
        assert sums[(x["entry_no"], x["line_no"])] == [Decimal(x["debit"]), Decimal(x["credit"])]
    # a JIB's entry has one line per well × account and side
    jib = [x for x in lines if x["entry"].startswith("JIB ")]
    keys = [(x["entry_no"], x["account"], x["well_id"], bool(Decimal(x["debit"]))) for x in jib]
    assert jib and len(keys) == len(set(keys))
    # each JIB detail row is its source line's owner net, read from jib.csv independently
    with (data / "2026-10" / "jib.csv").open(newline="") as f:
        net = {n: Decimal(r["owner_net_amount"]) for n, r in enumerate(csv.DictReader(f), 2)}
    jib_entries = {x["entry_no"] for x in jib}
    jib_rows = [
        r
        for r in rows
        if r["entry_no"] in jib_entries
        and r["ref"].startswith("jib.csv:")
        and r["ref"][8:].isdigit()
    ]
    assert len(jib_rows) >= 1900
    for r in jib_rows:
        assert Decimal(r["debit"]) + Decimal(r["credit"]) == net[int(r["ref"][8:])], r


def test_every_tool_result_stays_under_4_kb(tmp_path: Path) -> None:
    run_id, _, db = close(tmp_path, 6000, clean=False)
    results = Store(db).query(
        "select name, length(cast(result as blob)) as size from tool_calls where run_id = ?",
        (run_id,),
    )
    assert len(results) >= 10
    big = [(r["name"], r["size"]) for r in results if r["size"] >= 4096]
    assert big == []


def test_a_long_read_says_how_far_it_is_file_by_file_and_one_within_the_interval_says_nothing(
    tmp_path: Path,
) -> None:
    from bot.close import data as close_data
    from bot.close.data.loading import _load

    generate(tmp_path, 400, seed=3)
    said: list[str] = []
    every_file = close_data.ReadProgress(said.append, "2026-10", every=0.0)
    data = _load("2026-10", tmp_path / "2026-10", progress=every_file)
    assert len(said) == 12  # one line per file read, then the whole count
    counts = dict(data.counts)
    for name, n in counts.items():
        assert f"{name} {n:,}" in said[-1]
    assert said[0] == f"Reading 2026-10: doi.csv {counts['doi.csv']:,} rows so far…"
    quiet: list[str] = []
    within = close_data.ReadProgress(quiet.append, "2026-10", every=3600.0)
    _load("2026-10", tmp_path / "2026-10", progress=within)
    assert quiet == []


def test_history_written_as_accounting_exports_write_it_reads_as_the_plain_form(
    tmp_path: Path,
) -> None:
    from bot.close.data.loading import _load
    from tests.period_kit import edit, write_period

    plain = _load("2026-10", write_period(tmp_path / "plain"))
    folder = write_period(tmp_path / "exported")
    edit(folder, "jib_history.csv", "2026-08,W-A,LOE,9500.00", '2026-08,W-A,loe," $9,500.00 "')
    edit(folder, "revenue_history.csv", "2026-07,oil,1000,69.00", "2026-07, Oil ,1000,$69.00")
    exported = _load("2026-10", folder)
    assert exported.history.loe_gross == plain.history.loe_gross
    assert exported.history.loe_gross[("W-A", "LOE")]["2026-08"] == Decimal("9500.00")
    assert exported.history.sales == plain.history.sales
    assert exported.history.checked == plain.history.checked
    assert exported.history.last_jib_decimal == plain.history.last_jib_decimal

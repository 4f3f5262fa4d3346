"""Xero's 300-line import file: one accrual or reversal entry over 300 lines is split at its
wells into balanced files (issue 29: "entry 1 (Reversal …) has 351 lines" gave no file)."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from decimal import Decimal

import pytest

from bot.close.data import SAMPLE_DIR
from bot.close.exports import batch as exports_batch

PRODUCTS = (("4010", Decimal("1234.56")), ("4020", Decimal("78.90")), ("4030", Decimal("12.34")))


def _reversal(wells: int) -> list[dict[str, object]]:
    """A reversal of last month's revenue accrual: per well, Dr each product's revenue and
    Cr the well's receivable (1210) — 3 products + 1 receivable = 4 lines a well."""
    lines: list[dict[str, object]] = []
    title = "Reversal of September 2026 revenue accrual (accruals.csv)"
    for w in range(1, wells + 1):
        well = f"W-TX-{w:03d}"
        amounts = [(acct, base + Decimal(w) / 100) for acct, base in PRODUCTS]
        for acct, amount in amounts:
            lines.append(
                {"entry_no": 1, "entry": title, "account": acct, "debit": amount,
                 "credit": Decimal(0), "memo": f"reverse {acct}", "well_id": well}
            )  # fmt: skip
        lines.append(
            {"entry_no": 1, "entry": title, "account": "1210", "debit": Decimal(0),
             "credit": sum((a for _, a in amounts), Decimal(0)), "memo": "receivable",
             "well_id": well}
        )  # fmt: skip
    return lines


def test_an_entry_over_300_lines_is_split_at_its_wells_into_balanced_files() -> None:
    lines = _reversal(88)  # 352 lines in one entry, as the 351
    lines += [  # and a small entry after it
        {"entry_no": 2, "entry": "JIB INV-1 · Acme · service 2026-09", "account": "6210",
         "debit": Decimal("10.00"), "credit": Decimal(0), "memo": "", "well_id": "W-TX-001"},
        {"entry_no": 2, "entry": "JIB INV-1 · Acme · service 2026-09", "account": "2110",
         "debit": Decimal(0), "credit": Decimal("10.00"), "memo": "", "well_id": ""},
    ]  # fmt: skip
    account_map = exports_batch.read_account_map(SAMPLE_DIR / "account_map.csv")
    export = exports_batch.build_export(
        {"id": "JE-2026-10-x-1"}, lines, period="2026-10", documents="", account_map=account_map
    )
    files = export.files("xero")
    assert len(files) == 2
    code = {a: g.number for a, g in account_map.items()}
    total: dict[str, Decimal] = defaultdict(Decimal)
    for _, content in files:
        rows = list(csv.DictReader(io.StringIO(content)))
        assert 0 < len(rows) <= 300
        assert sum(Decimal(r["Amount"]) for r in rows) == 0  # each file balanced
        assert len({(r["Narration"], r["Date"]) for r in rows}) == 1  # one journal a file
        for r in rows:
            total[r["AccountCode"]] += Decimal(r["Amount"])
    assert sum(len(list(csv.DictReader(io.StringIO(c)))) for _, c in files) == len(lines)
    # the whole batch, account by account, as the lines say (an independent sum)
    want: dict[str, Decimal] = defaultdict(Decimal)
    for li in lines:
        want[code[str(li["account"])]] += Decimal(str(li["debit"])) - Decimal(str(li["credit"]))
    assert dict(total) == dict(want)
    # no well's reversal lines split across two files, and each well's balance in its file
    split = exports_batch.split_by_entry(lines, 300)
    assert len(split) == len(files)
    seen: set[str] = set()
    for part in split:
        per_well: dict[str, Decimal] = defaultdict(Decimal)
        for li in part:
            if li["entry_no"] == 1:
                per_well[str(li["well_id"])] += Decimal(str(li["debit"])) - Decimal(
                    str(li["credit"])
                )
        assert all(v == 0 for v in per_well.values())
        assert seen.isdisjoint(per_well)
        seen |= set(per_well)
    assert len(seen) == 88


def test_an_entry_whose_wells_do_not_balance_one_by_one_is_still_refused() -> None:
    """A JIB entry books one payable for all its wells: no balanced split at wells exists."""
    account_map = exports_batch.read_account_map(SAMPLE_DIR / "account_map.csv")
    lines: list[dict[str, object]] = [
        {"entry_no": 1, "entry": "JIB INV-9 · Acme · service 2026-09", "account": "6210",
         "debit": Decimal("1.00"), "credit": Decimal(0), "memo": "", "well_id": f"W-{n}"}
        for n in range(301)
    ]  # fmt: skip
    lines.append(
        {"entry_no": 1, "entry": "JIB INV-9 · Acme · service 2026-09", "account": "2110",
         "debit": Decimal(0), "credit": Decimal("301.00"), "memo": "", "well_id": ""}
    )  # fmt: skip
    export = exports_batch.build_export(
        {"id": "JE-1"}, lines, period="2026-10", documents="", account_map=account_map
    )
    with pytest.raises(exports_batch.DataError, match=r"entry 1 .* 302 lines.*at its wells"):
        export.files("xero")

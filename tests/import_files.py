"""Operator files as people send them, made from the sample: foreign headers, XLSX with a
merged title and a total row, dates as Excel stores them."""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal
from pathlib import Path

from openpyxl import Workbook

from bot.close.data import SAMPLE_DIR

FOREIGN_JIB = [
    "Operator Name",
    "Invoice #",
    "Svc Month",
    "Property #",
    "Well",
    "AFE #",
    "Cost Type",
    "Description",
    "Gross Amt",
    "Your Decimal",
    "Your Share",
]


def sample_rows(name: str, period: str = "2026-10") -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((SAMPLE_DIR / period / name).read_text())))


def jib_xlsx(
    rows: list[dict[str, str]] | None = None, *, total: Decimal | None = None, title: str = ""
) -> bytes:
    """The sample's JIB as an operator's workbook: a merged title, foreign headers, months
    as dates, amounts as numbers, a total row (the true sum unless `total` is given)."""
    rows = rows if rows is not None else sample_rows("jib.csv")
    wb = Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "JIB Detail"
    ws.append([title or "Joint Interest Billing — owner statement"])
    ws.merge_cells("A1:K1")
    ws.append([])
    ws.append(FOREIGN_JIB)
    for r in rows:
        year, month = (int(x) for x in r["service_month"].split("-"))
        ws.append(
            [
                r["operator"],
                r["invoice_no"],
                date(year, month, 1),
                r["property_no"],
                r["well_id"] or None,
                r["afe_no"] or None,
                r["cost_category"],
                r["description"],
                float(r["gross_amount"]),
                float(r["owner_decimal"]),
                float(r["owner_net_amount"]),
            ]
        )
    summed = sum((Decimal(r["owner_net_amount"]) for r in rows), Decimal(0))
    ws.append(["Total", *([None] * 9), float(total if total is not None else summed)])
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def write_period(folder: Path, period: str = "2026-10") -> Path:
    """The sample period's eleven CSV files in `folder` (as a person would have them)."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in (SAMPLE_DIR / period).iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    return folder

"""A month as its operators send it (issue 29), made from the sample's canonical files.

The sample's 2026-10 JIB and check detail, split per operator and payor, each written in its
own layout (what a team receives): title and invoice blocks above the header, no operator or
invoice column (said once in the title), well NAMES instead of ids, percent and currency
strings in CSV, month names and dates, operators' category words, a total row.
"""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal
from pathlib import Path

from openpyxl import Workbook

from bot.close.data import SAMPLE_DIR
from tests.import_files import sample_rows

OPERATOR_ORDER = [  # the canonical file's order (the union reads files in import order)
    "Permian Ridge Operating LLC",
    "Caprock Energy Partners",
    "Red Fork Resources Inc.",
    "Anadarko Basin Operating Co.",
    "Bakken Prairie Energy",
    "Williston Crest Operating",
]
PAYOR_ORDER = ["Permian Ridge Crude Purchasing", "Red River Midstream", "Bakken Prairie Marketing"]
CATEGORY_WORDS = {"LOE": "Lease Operating Expense", "Overhead": "COPAS Overhead"}


def well_names(period: str = "2026-10") -> dict[str, str]:
    return {r["well_id"]: r["well_name"] for r in sample_rows("doi.csv", period)}


def _pct(decimal: str) -> str:
    """0.27500000 → '27.5%' (as a spreadsheet exported to CSV writes a percent cell)."""
    return f"{(Decimal(decimal) * 100).normalize():f}%"


def _usd(amount: str) -> str:
    value = Decimal(amount)
    text = f"${abs(value):,.2f}"
    return f"({text})" if value < 0 else text


def _month_name(month: str) -> str:
    year, mon = month.split("-")
    return f"{date(int(year), int(mon), 1):%b %Y}"


def _csv(rows: list[list[str]], delimiter: str = ",") -> bytes:
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def _xlsx(rows: list[list[object]], merged: tuple[str, ...] = ()) -> bytes:
    wb = Workbook()
    ws = wb.active
    assert ws is not None
    for r in rows:
        ws.append(r)
    for cells in merged:
        ws.merge_cells(cells)
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def _sum(rows: list[dict[str, str]], column: str) -> Decimal:
    return sum((Decimal(r[column]) for r in rows), Decimal(0))


def operator_jibs(period: str = "2026-10") -> dict[str, bytes]:
    """Each operator's JIB in its own layout, by the file name it came under."""
    names = well_names(period)
    by_op: dict[str, list[dict[str, str]]] = {}
    for r in sample_rows("jib.csv", period):
        by_op.setdefault(r["operator"], []).append(r)
    assert list(by_op) == OPERATOR_ORDER
    files: dict[str, bytes] = {}

    # Permian Ridge: XLSX, the operator and invoice block above the table, no operator,
    # invoice or month column, well names, an "Invoice Total"; the name's month is not the
    # period (the content says September service, so October's close)
    rows = by_op["Permian Ridge Operating LLC"]
    first = rows[0]
    sheet: list[list[object]] = [
        ["PERMIAN RIDGE OPERATING LLC"],
        ["Joint Interest Billing Statement"],
        ["Invoice No:", first["invoice_no"], None, "Invoice Date:", date(2026, 10, 12)],
        ["Owner:", "Acme Minerals LP", None, "Service Month:", _month_name(first["service_month"])],
        [],
        [
            "Property #",
            "Well Name",
            "Cost Type",
            "Description",
            "Gross Amt",
            "Your Decimal",
            "Your Share",
        ],
    ]
    for r in rows:
        sheet.append(
            [
                r["property_no"],
                names.get(r["well_id"], r["well_id"]) or None,
                r["cost_category"],
                r["description"],
                float(r["gross_amount"]),
                float(r["owner_decimal"]),
                float(r["owner_net_amount"]),
            ]
        )
    sheet.append(
        ["Invoice Total", None, None, None, None, None, float(_sum(rows, "owner_net_amount"))]
    )
    files["Permian Ridge JIB Nov-2026.xlsx"] = _xlsx(sheet, ("A1:G1",))

    # Caprock: CSV with percent and currency strings, months as MM/YYYY, a "Total" row
    rows = by_op["Caprock Energy Partners"]
    table = [
        [
            "Operator",
            "Invoice",
            "Svc Month",
            "Lease No",
            "Well",
            "Category",
            "Desc",
            "Gross ($)",
            "Decimal",
            "Net ($)",
        ]
    ]
    for r in rows:
        year, mon = r["service_month"].split("-")
        table.append(
            [
                r["operator"],
                r["invoice_no"],
                f"{mon}/{year}",
                r["property_no"],
                r["well_id"],
                r["cost_category"],
                r["description"],
                _usd(r["gross_amount"]),
                _pct(r["owner_decimal"]),
                _usd(r["owner_net_amount"]),
            ]
        )
    table.append(
        [
            "Total",
            "",
            "",
            "",
            "",
            "",
            "",
            _usd(str(_sum(rows, "gross_amount"))),
            "",
            _usd(str(_sum(rows, "owner_net_amount"))),
        ]
    )
    files["CEP JIB 0926-044.csv"] = _csv(table)

    # Red Fork: CSV whose title says the operator and the invoice ("Key: value"), no operator
    # or invoice column, well names, percent strings, category words, an "Invoice Total"
    rows = by_op["Red Fork Resources Inc."]
    table = [
        [f"Operator: {rows[0]['operator']}"],
        [f"Invoice #: {rows[0]['invoice_no']}"],
        [],
        [
            "Svc Month",
            "Property",
            "Well Name",
            "Cost Code",
            "Description",
            "Gross",
            "Owner %",
            "Net",
        ],
    ]
    for r in rows:
        table.append(
            [
                _month_name(r["service_month"]),
                r["property_no"],
                names[r["well_id"]],
                CATEGORY_WORDS.get(r["cost_category"], r["cost_category"]),
                r["description"],
                r["gross_amount"],
                _pct(r["owner_decimal"]),
                r["owner_net_amount"],
            ]
        )
    table.append(
        [
            "Invoice Total",
            "",
            "",
            "",
            "",
            str(_sum(rows, "gross_amount")),
            "",
            str(_sum(rows, "owner_net_amount")),
        ]
    )
    files["RFR_2026-09-311.csv"] = _csv(table)

    # Anadarko: XLSX, its own headers ("Acct Code", "8/8 Amount", "WI Decimal"), service
    # dates, a "Grand Total"
    rows = by_op["Anadarko Basin Operating Co."]
    sheet = [
        ["Anadarko Basin Operating Co. — Owner JIB Detail"],
        [],
        [
            "Operator Name",
            "Invoice #",
            "Service Date",
            "Prop #",
            "Well",
            "AFE #",
            "Acct Code",
            "Line Description",
            "8/8 Amount",
            "WI Decimal",
            "Net Amount",
        ],
    ]
    for r in rows:
        year, mon = (int(x) for x in r["service_month"].split("-"))
        sheet.append(
            [
                r["operator"],
                r["invoice_no"],
                date(year, mon, 1),
                r["property_no"],
                r["well_id"],
                r["afe_no"] or None,
                r["cost_category"],
                r["description"],
                float(r["gross_amount"]),
                float(r["owner_decimal"]),
                float(r["owner_net_amount"]),
            ]
        )
    sheet.append(
        [
            "Grand Total",
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            float(_sum(rows, "gross_amount")),
            None,
            float(_sum(rows, "owner_net_amount")),
        ]
    )
    files["ABO Owner JIB 77120.xlsx"] = _xlsx(sheet, ("A1:K1",))

    # Bakken Prairie: semicolon CSV, property numbers only (no well column)
    rows = by_op["Bakken Prairie Energy"]
    table = [
        [
            "Operator Company",
            "Billing No",
            "Activity Month",
            "Cost Center",
            "Expense Type",
            "Memo",
            "Total Gross",
            "Interest",
            "Owner Amount",
        ]
    ]
    for r in rows:
        table.append(
            [
                r["operator"],
                r["invoice_no"],
                r["service_month"],
                r["property_no"],
                r["cost_category"],
                r["description"],
                r["gross_amount"],
                r["owner_decimal"],
                r["owner_net_amount"],
            ]
        )
    files["bakken-prairie-jib.csv"] = _csv(table, delimiter=";")

    # Williston Crest: XLSX, two title rows, lease (well) names, category words
    rows = by_op["Williston Crest Operating"]
    sheet = [
        ["Williston Crest Operating"],
        ["JIB detail for non-operators"],
        [
            "Company",
            "JIB Number",
            "Acctg Month",
            "Property ID",
            "Lease Name",
            "Category",
            "Detail",
            "Gross Cost",
            "Owner Dec",
            "Your Net",
        ],
    ]
    for r in rows:
        sheet.append(
            [
                r["operator"],
                r["invoice_no"],
                _month_name(r["service_month"]),
                r["property_no"],
                names[r["well_id"]],
                CATEGORY_WORDS.get(r["cost_category"], r["cost_category"]),
                r["description"],
                float(r["gross_amount"]),
                float(r["owner_decimal"]),
                float(r["owner_net_amount"]),
            ]
        )
    sheet.append(
        [
            "Total",
            None,
            None,
            None,
            None,
            None,
            None,
            float(_sum(rows, "gross_amount")),
            None,
            float(_sum(rows, "owner_net_amount")),
        ]
    )
    files["WCO JIB Sept.xlsx"] = _xlsx(sheet, ("A1:J1",))
    return files


def payor_checks(period: str = "2026-10") -> dict[str, bytes]:
    """Each payor's check detail in its own layout."""
    names = well_names(period)
    by_payor: dict[str, list[dict[str, str]]] = {}
    for r in sample_rows("revenue.csv", period):
        by_payor.setdefault(r["payor"], []).append(r)
    assert list(by_payor) == PAYOR_ORDER
    files: dict[str, bytes] = {}

    # Permian Ridge Crude Purchasing: CSV, currency and percent strings, names, a check total
    rows = by_payor["Permian Ridge Crude Purchasing"]
    table = [
        [
            "Check #",
            "Purchaser",
            "Property",
            "Well Name",
            "Prod Month",
            "Commodity",
            "Volume",
            "Price",
            "Gross Value",
            "Severance",
            "Deducts",
            "Decimal %",
            "Owner Net",
        ]
    ]
    for r in rows:
        table.append(
            [
                r["check_no"],
                r["payor"],
                r["property_no"],
                names.get(r["well_id"], ""),
                _month_name(r["sale_month"]),
                r["product"].capitalize(),
                f"{Decimal(r['gross_volume']):,}",
                _usd(r["price"]),
                _usd(r["gross_value"]),
                _usd(r["gross_taxes"]),
                _usd(r["gross_deductions"]),
                _pct(r["owner_decimal"]),
                _usd(r["owner_net_value"]),
            ]
        )
    table.append(
        [
            "Check Total",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            _usd(str(_sum(rows, "owner_net_value"))),
        ]
    )
    files["PRCP check detail.csv"] = _csv(table)

    # Red River Midstream: XLSX whose title block says the remitter and the check
    rows = by_payor["Red River Midstream"]
    sheet: list[list[object]] = [
        ["Remitter:", rows[0]["payor"]],
        ["Check No:", rows[0]["check_no"]],
        [],
        [
            "Property",
            "Well",
            "Sale Month",
            "Product",
            "Gross Vol",
            "Unit Price",
            "Value",
            "Taxes",
            "Deductions",
            "Owner Dec",
            "Net Value",
        ],
    ]
    for r in rows:
        year, mon = (int(x) for x in r["sale_month"].split("-"))
        sheet.append(
            [
                r["property_no"],
                r["well_id"] or None,
                date(year, mon, 1),
                r["product"],
                float(r["gross_volume"]),
                float(r["price"]),
                float(r["gross_value"]),
                float(r["gross_taxes"]),
                float(r["gross_deductions"]),
                float(r["owner_decimal"]),
                float(r["owner_net_value"]),
            ]
        )
    files["Red River remittance.xlsx"] = _xlsx(sheet)

    # Bakken Prairie Marketing: closebot's own columns (a CDEX export), as they are
    rows = by_payor["Bakken Prairie Marketing"]
    table = [list(rows[0])] + [list(r.values()) for r in rows]
    files["BPM_CHK-556031.csv"] = _csv(table)
    return files


def operators_month(folder: Path, period: str = "2026-10") -> list[Path]:
    """The month as the team receives it, in `folder`: the DOI and reference files as
    closebot's CSV, every operator's JIB and every payor's check in their own layouts.
    The paths in the canonical order (DOI first, then JIBs and checks as jib.csv and
    revenue.csv list them), which a close of the union reads line for line as the sample."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in ("doi.csv",):
        (folder / name).write_bytes((SAMPLE_DIR / period / name).read_bytes())
        paths.append(folder / name)
    for name, raw in [*operator_jibs(period).items(), *payor_checks(period).items()]:
        (folder / name).write_bytes(raw)
        paths.append(folder / name)
    for f in sorted((SAMPLE_DIR / period).iterdir()):
        if f.name not in ("doi.csv", "jib.csv", "revenue.csv"):
            (folder / f.name).write_bytes(f.read_bytes())
            paths.append(folder / f.name)
    return paths

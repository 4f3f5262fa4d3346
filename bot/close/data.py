"""Close data for one accounting period: DOI master, JIB lines, revenue stubs, prior TB.

A data directory holds one folder per period (`2026-10/`) with four CSV files; the
package ships a synthetic sample for 2026-10. Every amount is a Decimal.
"""

from __future__ import annotations

import csv
import dataclasses
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import TypeVar

from bot.errors import DataError

SAMPLE_DIR = Path(__file__).parent / "sample"
PERIOD_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

CENT = Decimal("0.01")
T = TypeVar("T")


def check_period(period: str) -> str:
    """Return `period` if it is YYYY-MM, else raise DataError saying so."""
    if not PERIOD_RE.match(period or ""):
        raise DataError(
            f"{period!r} is not an accounting period; write it as YYYY-MM, e.g. 2026-10"
        )
    return period


def period_label(period: str) -> str:
    """'2026-10' → 'October 2026'."""
    year, month = check_period(period).split("-")
    return f"{MONTHS[int(month) - 1]} {year}"


@dataclass(frozen=True)
class Well:
    well_id: str
    well_name: str
    state: str
    operator: str
    operator_property_no: str
    wi: Decimal
    nri: Decimal
    royalty: Decimal
    orri: Decimal
    effective_date: str


@dataclass(frozen=True)
class JibLine:
    operator: str
    invoice_no: str
    service_month: str
    well_id: str
    afe_no: str
    cost_category: str
    description: str
    gross_amount: Decimal
    owner_decimal: Decimal
    owner_net_amount: Decimal


@dataclass(frozen=True)
class RevenueLine:
    check_no: str
    payor: str
    well_id: str
    sale_month: str
    product: str
    gross_volume: Decimal
    price: Decimal
    gross_value: Decimal
    gross_taxes: Decimal
    gross_deductions: Decimal
    owner_decimal: Decimal
    owner_net_value: Decimal


@dataclass(frozen=True)
class TbLine:
    account: str
    account_name: str
    debit: Decimal
    credit: Decimal


@dataclass(frozen=True)
class CloseData:
    period: str
    wells: dict[str, Well]
    jib: list[JibLine]
    revenue: list[RevenueLine]
    prior_tb: list[TbLine]


def available_periods(data_dir: Path | None = None) -> list[str]:
    """Periods that have a folder of data, oldest first."""
    root = data_dir or SAMPLE_DIR
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and PERIOD_RE.match(p.name))


def latest_period(data_dir: Path | None = None) -> str:
    periods = available_periods(data_dir)
    if not periods:
        raise DataError(
            f"no close data in {data_dir or SAMPLE_DIR}: expected folders named YYYY-MM"
        )
    return periods[-1]


def _read(path: Path, row_type: type[T], decimals: set[str]) -> list[T]:
    if not path.is_file():
        raise DataError(f"missing {path.name} in {path.parent}")
    fields = [f.name for f in dataclasses.fields(row_type)]  # type: ignore[arg-type]
    out = []
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = [c for c in fields if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path.name}: missing column(s) {', '.join(missing)}")
        for line_no, row in enumerate(reader, start=2):
            values: dict[str, object] = {}
            for name in fields:
                raw = (row.get(name) or "").strip()
                if name in decimals:
                    values[name] = _decimal(raw, where=f"{path.name} line {line_no}: {name}")
                else:
                    values[name] = raw
            out.append(row_type(**values))
    return out


def _decimal(raw: str, *, where: str) -> Decimal:
    try:
        value = Decimal(raw.replace(",", ""))
    except InvalidOperation:
        raise DataError(f"{where} {raw!r} is not a number") from None
    if not value.is_finite():
        raise DataError(f"{where} {raw!r} is not a number")
    return value


def load(period: str, data_dir: Path | None = None) -> CloseData:
    """Load and check one period's data; DataError names the file, line and column."""
    check_period(period)
    root = data_dir or SAMPLE_DIR
    folder = root / period
    if not folder.is_dir():
        have = available_periods(data_dir)
        listing = ", ".join(have) if have else "none"
        where = f" in {data_dir}" if data_dir else ""
        raise DataError(f"no close data for {period}{where}; periods with data: {listing}")
    wells: list[Well] = _read(folder / "doi.csv", Well, {"wi", "nri", "royalty", "orri"})
    jib: list[JibLine] = _read(
        folder / "jib.csv", JibLine, {"gross_amount", "owner_decimal", "owner_net_amount"}
    )
    revenue: list[RevenueLine] = _read(
        folder / "revenue.csv",
        RevenueLine,
        {
            "gross_volume",
            "price",
            "gross_value",
            "gross_taxes",
            "gross_deductions",
            "owner_decimal",
            "owner_net_value",
        },
    )
    prior_tb: list[TbLine] = _read(folder / "prior_tb.csv", TbLine, {"debit", "credit"})
    by_id = {w.well_id: w for w in wells}
    if len(by_id) != len(wells):
        raise DataError(f"doi.csv for {period}: a well_id appears twice")
    for name, rows in (("jib.csv", jib), ("revenue.csv", revenue)):
        unknown = sorted({r.well_id for r in rows} - set(by_id))
        if unknown:
            raise DataError(
                f"{name} for {period}: well(s) {', '.join(unknown)} are not in the DOI master"
            )
    return CloseData(period=period, wells=by_id, jib=jib, revenue=revenue, prior_tb=prior_tb)


def cents(value: Decimal) -> Decimal:
    """Round half up to the cent, as the books do."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)

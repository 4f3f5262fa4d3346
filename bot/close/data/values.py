"""The values the close reads and computes with: periods and months (YYYY-MM), money to
the cent, products and cost categories, and where the shipped sample is."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache
from pathlib import Path

from bot.core.errors import DataError

SAMPLE_DIR = Path(__file__).parent.parent / "sample"
PERIOD_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
DATE_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")
AMOUNT_RE = re.compile(r"^(-)?\$?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?$")
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
ZERO = Decimal("0.00")

PRODUCTS = {"oil": "oil", "condensate": "oil", "gas": "gas", "ngl": "ngl"}
CATEGORIES = {
    "loe": "LOE",
    "workover": "Workover",
    "overhead": "Overhead",
    "idc": "IDC",
    "icc": "ICC",
    "tdc": "TDC",
    "tcc": "TCC",
    "lwe": "LWE",
    "l&we": "LWE",
}
ACCRUAL_KINDS = ("revenue", "loe")


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


@lru_cache(maxsize=4096)
def add_months(month: str, n: int) -> str:
    """'2026-10' + -1 → '2026-09'."""
    year, mon = (int(x) for x in month.split("-"))
    index = year * 12 + mon - 1 + n
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


@lru_cache(maxsize=4096)
def months_between(start: str, end: str) -> int:
    """Whole months from `start` to `end` (both YYYY-MM): '2024-06' → '2026-08' is 26."""
    y1, m1 = (int(x) for x in start.split("-"))
    y2, m2 = (int(x) for x in end.split("-"))
    return (y2 * 12 + m2) - (y1 * 12 + m1)


def cents(value: Decimal) -> Decimal:
    """Round half up to the cent, as the books do."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def parse_amount(raw: str) -> Decimal:
    """What accounting exports write: 1510, 1,510.00, $1,510.00, (4,200.00), -4200."""
    text = raw.strip()
    negative = False
    if text.startswith("(") and text.endswith(")"):
        negative, text = True, text[1:-1].strip()
    match = AMOUNT_RE.match(text)
    if not match:
        raise ValueError(raw)
    value = Decimal(text.replace("$", "").replace(",", ""))
    return -value if negative else value

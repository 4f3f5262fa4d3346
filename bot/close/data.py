"""Close data for one accounting period, in the v2 format of CLOSE.md, checked whole.

A data directory holds one folder per period (`2026-10/`) with eleven CSV files. Loading
reads every file and collects every problem — file, line, column, the value and what was
expected — before anything is used: one bad value refuses the whole period, and nothing
is imported. Semantic doubts (line math, duplicates, unknown wells) are not load errors:
the close's steps ask a person about them.
"""

from __future__ import annotations

import csv
import hashlib
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from bot.errors import DataError

SAMPLE_DIR = Path(__file__).parent / "sample"
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


def add_months(month: str, n: int) -> str:
    """'2026-10' + -1 → '2026-09'."""
    year, mon = (int(x) for x in month.split("-"))
    index = year * 12 + mon - 1 + n
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


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


# -- the rows ------------------------------------------------------------------


@dataclass(frozen=True)
class DoiRow:
    well_id: str
    well_name: str
    state: str
    operator: str
    operator_property_no: str
    wi: Decimal
    nri: Decimal
    royalty: Decimal
    orri: Decimal
    effective_from: str
    first_prod_month: str
    line: int = 0
    source: str = "doi.csv"


@dataclass(frozen=True)
class JibLine:
    operator: str
    invoice_no: str
    service_month: str
    property_no: str
    well_id: str
    afe_no: str
    cost_category: str
    description: str
    gross_amount: Decimal
    owner_decimal: Decimal
    owner_net_amount: Decimal
    line: int = 0

    @property
    def ref(self) -> str:
        return f"jib.csv:{self.line}"


@dataclass(frozen=True)
class RevenueLine:
    check_no: str
    payor: str
    property_no: str
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
    line: int = 0
    file: str = "revenue.csv"

    @property
    def ref(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class JibHistoryLine:
    operator: str
    invoice_no: str
    service_month: str
    well_id: str
    cost_category: str
    gross_amount: Decimal
    owner_decimal: Decimal
    owner_net_amount: Decimal
    line: int = 0


@dataclass(frozen=True)
class ProductionRow:
    well_id: str
    month: str
    product: str
    volume: Decimal
    line: int = 0


@dataclass(frozen=True)
class PriceRow:
    month: str
    product: str
    benchmark_price: Decimal
    differential: Decimal
    line: int = 0


@dataclass(frozen=True)
class AfeRow:
    afe_no: str
    well_id: str
    description: str
    approved_gross: Decimal
    billed_to_date_gross: Decimal
    line: int = 0


@dataclass(frozen=True)
class JoaRow:
    operator: str
    well_id: str
    overhead_producing: Decimal
    overhead_drilling: Decimal
    effective_from: str
    line: int = 0


@dataclass(frozen=True)
class AccrualRow:
    kind: str
    well_id: str
    product_or_category: str
    month: str
    amount: Decimal
    line: int = 0


@dataclass(frozen=True)
class TbRow:
    month: str
    account: str
    account_name: str
    debit: Decimal
    credit: Decimal
    line: int = 0


# -- the files -----------------------------------------------------------------

Parser = Callable[[str], Any]


def _text(raw: str) -> str:
    return raw


def _required(raw: str) -> str:
    if not raw:
        raise ValueError("a value")
    return raw


def _month(raw: str) -> str:
    if not PERIOD_RE.match(raw):
        raise ValueError("a month as YYYY-MM")
    return raw


def _optional_month(raw: str) -> str:
    return _month(raw) if raw else ""


def _date(raw: str) -> str:
    if not DATE_RE.match(raw):
        raise ValueError("a date as YYYY-MM-DD")
    return raw


def _money(raw: str) -> Decimal:
    try:
        value = parse_amount(raw)
    except (ValueError, InvalidOperation):
        raise ValueError("an amount such as 1510.00, $1,510.00 or (4,200.00)") from None
    if value != cents(value):
        raise ValueError("an amount in whole cents")
    return value


def _number(raw: str) -> Decimal:
    try:
        return parse_amount(raw)
    except (ValueError, InvalidOperation):
        raise ValueError("a number") from None


def _decimal_share(raw: str) -> Decimal:
    value = _number(raw)
    if value.as_tuple().exponent < -8:  # type: ignore[operator]
        raise ValueError("a decimal with at most 8 places")
    return value


def _product(raw: str) -> str:
    try:
        return PRODUCTS[raw.strip().casefold()]
    except KeyError:
        raise ValueError("a product: oil, gas, ngl (or condensate)") from None


def _category(raw: str) -> str:
    try:
        return CATEGORIES[raw.strip().casefold()]
    except KeyError:
        raise ValueError(
            "a cost category: LOE, Workover, Overhead, IDC, ICC, TDC, TCC or LWE"
        ) from None


def _accrual_kind(raw: str) -> str:
    value = raw.strip().casefold()
    if value not in ACCRUAL_KINDS:
        raise ValueError("revenue or loe")
    return value


def _account(raw: str) -> str:
    if not raw.isdigit():
        raise ValueError("an account number")
    return raw


@dataclass(frozen=True)
class FileSpec:
    name: str
    row_type: type
    columns: dict[str, Parser]
    required: bool = True


_REVENUE_COLUMNS: dict[str, Parser] = {
    "check_no": _required,
    "payor": _required,
    "property_no": _text,
    "well_id": _text,  # blank: mapped through the DOI's operator_property_no
    "sale_month": _month,
    "product": _product,
    "gross_volume": _number,
    "price": _number,
    "gross_value": _money,
    "gross_taxes": _money,
    "gross_deductions": _money,
    "owner_decimal": _decimal_share,
    "owner_net_value": _money,
}

FILES: tuple[FileSpec, ...] = (
    FileSpec(
        "doi.csv",
        DoiRow,
        {
            "well_id": _required,
            "well_name": _required,
            "state": _required,
            "operator": _required,
            "operator_property_no": _text,
            "wi": _decimal_share,
            "nri": _decimal_share,
            "royalty": _decimal_share,
            "orri": _decimal_share,
            "effective_from": _date,
            "first_prod_month": _optional_month,
        },
    ),
    FileSpec(
        "jib.csv",
        JibLine,
        {
            "operator": _required,
            "invoice_no": _required,
            "service_month": _month,
            "property_no": _text,
            "well_id": _text,
            "afe_no": _text,
            "cost_category": _category,
            "description": _text,
            "gross_amount": _money,
            "owner_decimal": _decimal_share,
            "owner_net_amount": _money,
        },
    ),
    FileSpec("revenue.csv", RevenueLine, _REVENUE_COLUMNS),
    FileSpec(
        "jib_history.csv",
        JibHistoryLine,
        {
            "operator": _required,
            "invoice_no": _required,
            "service_month": _month,
            "well_id": _required,
            "cost_category": _category,
            "gross_amount": _money,
            "owner_decimal": _decimal_share,
            "owner_net_amount": _money,
        },
    ),
    FileSpec("revenue_history.csv", RevenueLine, _REVENUE_COLUMNS),
    FileSpec(
        "production.csv",
        ProductionRow,
        {"well_id": _required, "month": _month, "product": _product, "volume": _number},
    ),
    FileSpec(
        "prices.csv",
        PriceRow,
        {
            "month": _month,
            "product": _product,
            "benchmark_price": _number,
            "differential": _number,
        },
    ),
    FileSpec(
        "afe.csv",
        AfeRow,
        {
            "afe_no": _required,
            "well_id": _required,
            "description": _text,
            "approved_gross": _money,
            "billed_to_date_gross": _money,
        },
    ),
    FileSpec(
        "joa.csv",
        JoaRow,
        {
            "operator": _required,
            "well_id": _required,
            "overhead_producing": _money,
            "overhead_drilling": _money,
            "effective_from": _date,
        },
    ),
    FileSpec(
        "accruals.csv",
        AccrualRow,
        {
            "kind": _accrual_kind,
            "well_id": _required,
            "product_or_category": _required,
            "month": _month,
            "amount": _money,
        },
    ),
    FileSpec(
        "tb_activity.csv",
        TbRow,
        {
            "month": _month,
            "account": _account,
            "account_name": _text,
            "debit": _money,
            "credit": _money,
        },
    ),
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong in one file: where, the value, and what was expected."""

    file: str
    line: int
    column: str
    value: str
    expected: str

    def __str__(self) -> str:
        where = f"{self.file} line {self.line}" if self.line else self.file
        if self.column:
            where += f", column {self.column}"
        shown = f"{self.value!r}: " if self.value else ""
        return f"{where}: {shown}expected {self.expected}"


class DataProblems(DataError):
    """A period's files were refused whole; every problem is listed."""

    def __init__(self, folder: Path, problems: list[Problem]) -> None:
        self.folder = folder
        self.problems = problems
        head = f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in {folder}; nothing was imported"
        lines = [f"  - {p}" for p in problems[:50]]
        if len(problems) > 50:
            lines.append(f"  … and {len(problems) - 50} more")
        super().__init__(head + ":\n" + "\n".join(lines))


@dataclass
class CloseData:
    """One period's documents and reference data, as read (nothing derived yet)."""

    period: str
    doi: list[DoiRow]
    jib: list[JibLine]
    revenue: list[RevenueLine]
    jib_history: list[JibHistoryLine]
    revenue_history: list[RevenueLine]
    production: list[ProductionRow]
    prices: list[PriceRow]
    afe: list[AfeRow]
    joa: list[JoaRow]
    accruals: list[AccrualRow]
    tb_activity: list[TbRow]
    hashes: dict[str, str] = field(default_factory=dict)

    @property
    def service_month(self) -> str:
        """The JIB service month this close books (the month before the period)."""
        return add_months(self.period, -1)


@dataclass(frozen=True)
class FileSource:
    """One kind's rows from elsewhere than the period's folder (a file dropped in Slack or
    imported at a terminal, kept in the database): CSV in closebot's layout for that kind,
    and the SHA-256 of the file as it was received (the evidence)."""

    content: bytes
    digest: str


def _read_file(
    folder: Path, spec: FileSpec, problems: list[Problem], source: FileSource | None = None
) -> tuple[list[Any], str]:
    if source is not None:
        raw, digest = source.content, source.digest
    else:
        path = folder / spec.name
        if not path.is_file():
            problems.append(Problem(spec.name, 0, "", "", "the file (it is missing)"))
            return [], ""
        raw = path.read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        problems.append(
            Problem(spec.name, line, "", raw[e.start : e.start + 1].hex(), "UTF-8 text")
        )
        return [], digest
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None:
        problems.append(Problem(spec.name, 1, "", "", "a header row"))
        return [], digest
    header = [h.strip() for h in header]
    missing = [c for c in spec.columns if c not in header]
    if missing:
        problems.append(
            Problem(spec.name, 1, ", ".join(missing), "", "these column(s) in the header")
        )
        return [], digest
    index = {name: header.index(name) for name in spec.columns}
    rows = []
    for line_no, cells in enumerate(reader, start=2):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            problems.append(
                Problem(
                    spec.name,
                    line_no,
                    "",
                    ",".join(cells)[:80],
                    f"{len(header)} fields, found {len(cells)} (an unquoted comma in an amount?)",
                )
            )
            continue
        values: dict[str, Any] = {}
        ok = True
        for name, parse in spec.columns.items():
            raw_value = cells[index[name]].strip()
            try:
                values[name] = parse(raw_value)
            except ValueError as e:
                problems.append(Problem(spec.name, line_no, name, raw_value, str(e)))
                ok = False
        if ok:
            rows.append(spec.row_type(**values, line=line_no))
    return rows, digest


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


def require_period(period: str, data_dir: Path | None = None) -> Path:
    """The period's folder; DataError naming the periods that do have data."""
    check_period(period)
    folder = (data_dir or SAMPLE_DIR) / period
    if not folder.is_dir():
        have = available_periods(data_dir)
        listing = ", ".join(have) if have else "none"
        where = f" in {data_dir}" if data_dir else ""
        raise DataError(f"no close data for {period}{where}; periods with data: {listing}")
    return folder


def _cross_checks(data: CloseData, problems: list[Problem]) -> None:
    """What must hold across rows for the data to be usable at all."""
    seen: dict[tuple[str, str], int] = {}
    for row in data.doi:
        key = (row.well_id, row.effective_from)
        if key in seen:
            problems.append(
                Problem(
                    "doi.csv",
                    row.line,
                    "effective_from",
                    row.effective_from,
                    f"one row per well and date; line {seen[key]} has the same",
                )
            )
        seen[key] = row.line
    for a in data.accruals:
        named = a.product_or_category.casefold()
        if a.kind == "revenue" and named not in PRODUCTS:
            problems.append(
                Problem(
                    "accruals.csv",
                    a.line,
                    "product_or_category",
                    a.product_or_category,
                    "a product: oil, gas, ngl (or condensate)",
                )
            )
        elif a.kind == "loe" and CATEGORIES.get(named) not in ("LOE", "Overhead", "Workover"):
            problems.append(
                Problem(
                    "accruals.csv",
                    a.line,
                    "product_or_category",
                    a.product_or_category,
                    "an LOE category: LOE, Overhead or Workover",
                )
            )
    for tb in data.tb_activity:
        if tb.debit and tb.credit:
            problems.append(
                Problem(
                    "tb_activity.csv",
                    tb.line,
                    "credit",
                    str(tb.credit),
                    "debit or credit, not both",
                )
            )


def load(
    period: str, data_dir: Path | None = None, imported: Mapping[str, FileSource] | None = None
) -> CloseData:
    """Read and check one period's files whole; DataProblems lists every problem. A kind in
    `imported` is read from there instead of the period's folder (which may then not exist)."""
    if imported:
        check_period(period)
        folder = (data_dir or SAMPLE_DIR) / period
    else:
        folder = require_period(period, data_dir)
    problems: list[Problem] = []
    read: dict[str, list[Any]] = {}
    hashes: dict[str, str] = {}
    for spec in FILES:
        rows, digest = _read_file(folder, spec, problems, (imported or {}).get(spec.name))
        read[spec.name] = rows
        if digest:
            hashes[spec.name] = digest
    data = CloseData(
        period=period,
        doi=read["doi.csv"],
        jib=read["jib.csv"],
        revenue=read["revenue.csv"],
        jib_history=read["jib_history.csv"],
        revenue_history=[
            RevenueLine(**{**r.__dict__, "file": "revenue_history.csv"})
            for r in read["revenue_history.csv"]
        ],
        production=read["production.csv"],
        prices=read["prices.csv"],
        afe=read["afe.csv"],
        joa=read["joa.csv"],
        accruals=read["accruals.csv"],
        tb_activity=read["tb_activity.csv"],
        hashes=hashes,
    )
    by_property = {r.operator_property_no: r.well_id for r in data.doi if r.operator_property_no}
    history = []
    for r in data.revenue_history:
        if not r.well_id:
            if r.property_no not in by_property:
                problems.append(
                    Problem(
                        "revenue_history.csv",
                        r.line,
                        "well_id",
                        r.property_no,
                        "a well_id, or a property_no in the DOI",
                    )
                )
                continue
            r = replace(r, well_id=by_property[r.property_no])
        history.append(r)
    data.revenue_history = history
    _cross_checks(data, problems)
    if problems:
        raise DataProblems(folder, problems)
    return data


def check(data_dir: Path, period: str | None = None) -> dict[str, list[Problem]]:
    """Problems per period folder (an empty list: the period is clean)."""
    periods = [period] if period else available_periods(data_dir)
    if not periods:
        raise DataError(f"no period folders (YYYY-MM) in {data_dir}")
    out: dict[str, list[Problem]] = {}
    for p in periods:
        try:
            load(p, data_dir)
            out[p] = []
        except DataProblems as e:
            out[p] = e.problems
    return out


def write_sample(target: Path) -> list[str]:
    """Copy the shipped sample periods into `target`; the periods written."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for p in available_periods(SAMPLE_DIR):
        dest = target / p
        if dest.exists():
            raise DataError(f"{dest} already exists; choose an empty folder")
        shutil.copytree(SAMPLE_DIR / p, dest)
        written.append(p)
    account_map = SAMPLE_DIR / "account_map.csv"
    if account_map.is_file() and not (target / account_map.name).exists():
        shutil.copyfile(account_map, target / account_map.name)
    return written

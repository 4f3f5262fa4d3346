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
import io
import itertools
import operator
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from bot.core import gc_pause as bulk
from bot.core.errors import DataError

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


# -- the rows ------------------------------------------------------------------


@dataclass(slots=True)
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


@dataclass(slots=True)
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


@dataclass(slots=True)
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


@dataclass(slots=True)
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


@dataclass(slots=True)
class ProductionRow:
    well_id: str
    month: str
    product: str
    volume: Decimal
    line: int = 0


@dataclass(slots=True)
class PriceRow:
    month: str
    product: str
    benchmark_price: Decimal
    differential: Decimal
    line: int = 0


@dataclass(slots=True)
class AfeRow:
    afe_no: str
    well_id: str
    description: str
    approved_gross: Decimal
    billed_to_date_gross: Decimal
    line: int = 0


@dataclass(slots=True)
class JoaRow:
    operator: str
    well_id: str
    overhead_producing: Decimal
    overhead_drilling: Decimal
    effective_from: str
    line: int = 0


@dataclass(slots=True)
class AccrualRow:
    kind: str
    well_id: str
    product_or_category: str
    month: str
    amount: Decimal
    line: int = 0


@dataclass(slots=True)
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
    return sys.intern(raw)  # names, wells and invoices repeat: one string each


def _required(raw: str) -> str:
    if not raw:
        raise ValueError("a value")
    return sys.intern(raw)


@lru_cache(maxsize=4096)
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


PLAIN_MONEY = re.compile(r"-?[0-9]+\.[0-9][0-9]")
PLAIN_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def _money(raw: str) -> Decimal:
    if PLAIN_MONEY.fullmatch(raw):  # what most exports write: no separators, two places
        return Decimal(raw)
    try:
        value = parse_amount(raw)
    except (ValueError, InvalidOperation):
        raise ValueError("an amount such as 1510.00, $1,510.00 or (4,200.00)") from None
    if value != cents(value):
        raise ValueError("an amount in whole cents")
    return value


@lru_cache(maxsize=1 << 14)
def _number(raw: str) -> Decimal:
    if PLAIN_NUMBER.fullmatch(raw):
        return Decimal(raw)
    try:
        return parse_amount(raw)
    except (ValueError, InvalidOperation):
        raise ValueError("a number") from None


@lru_cache(maxsize=1 << 14)
def _decimal_share(raw: str) -> Decimal:
    value = _number(raw)
    if value.as_tuple().exponent < -8:  # type: ignore[operator]
        raise ValueError("a decimal with at most 8 places")
    return value


@lru_cache(maxsize=1 << 14)
def _product(raw: str) -> str:
    try:
        return PRODUCTS[raw.strip().casefold()]
    except KeyError:
        raise ValueError("a product: oil, gas, ngl (or condensate)") from None


@lru_cache(maxsize=1 << 14)
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


@dataclass(frozen=True, slots=True)
class FileSpec:
    name: str
    row_type: type
    columns: dict[str, Parser]
    attr: str = ""  # CloseData's attribute for the rows
    extra: tuple[Any, ...] = ()  # after the line number, e.g. the file of a RevenueLine


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
        attr="doi",
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
        attr="jib",
    ),
    FileSpec("revenue.csv", RevenueLine, _REVENUE_COLUMNS, attr="revenue"),
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
    FileSpec(
        "revenue_history.csv",
        RevenueLine,
        _REVENUE_COLUMNS,
        extra=("revenue_history.csv",),
    ),
    FileSpec(
        "production.csv",
        ProductionRow,
        {"well_id": _required, "month": _month, "product": _product, "volume": _number},
        attr="production",
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
        attr="prices",
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
        attr="afe",
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
        attr="joa",
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
        attr="accruals",
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
        attr="tb_activity",
    ),
)

SPECS = {spec.name: spec for spec in FILES}

_TEXT = r"(?:[^\s\x1f](?:[^\x1f]*[^\s\x1f])?)?"
_MONTH = r"[0-9]{4}-(?:0[1-9]|1[0-2])"
# each parser's plain form (no spaces around, no separators, canonical names) and what turns
# such a cell into the parser's value without the parser's checks (the pattern made them)
PLAIN: dict[Parser, tuple[str, Callable[[str], Any]]] = {
    _text: (_TEXT, sys.intern),
    _required: (r"[^\s\x1f](?:[^\x1f]*[^\s\x1f])?", sys.intern),
    _month: (_MONTH, sys.intern),
    _optional_month: (f"(?:{_MONTH})?", sys.intern),
    _date: (_MONTH + r"-(?:0[1-9]|[12][0-9]|3[01])", sys.intern),
    _money: (r"-?[0-9]+\.[0-9][0-9]", Decimal),
    _number: (r"-?[0-9]+(?:\.[0-9]+)?", _number),
    _decimal_share: (r"-?[0-9]+(?:\.[0-9]{1,8})?", _decimal_share),
    _product: (r"oil|gas|ngl", sys.intern),
    _category: (r"LOE|Workover|Overhead|IDC|ICC|TDC|TCC|LWE", sys.intern),
    _accrual_kind: (r"revenue|loe", sys.intern),
    _account: (r"[0-9]+", sys.intern),
}
HISTORY_FILES = ("jib_history.csv", "revenue_history.csv")


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True)
class FileSource:
    """One kind's rows from elsewhere than the period's folder (a file dropped in Slack or
    imported at a terminal, kept in the database): CSV in closebot's layout for that kind,
    and the SHA-256 of the file as it was received (the evidence)."""

    content: bytes
    digest: str

    def stream(self) -> TextIO:
        return io.TextIOWrapper(io.BytesIO(self.content), encoding="utf-8-sig", newline="")


@dataclass
class History:
    """What the close needs from the 24 months of history, gathered while the history files
    stream past (their rows are not kept: at volume they are most of the data).

    Each index answers one check's question in one lookup; `lines()` re-reads a file for the
    few wells a decision needs line by line (catch-ups, the last actual check).
    """

    folder: Path | None = None
    hashes: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    sources: dict[str, FileSource] = field(default_factory=dict)  # imported history files
    # (operator, well, service month, category, gross) → the first history line with it,
    # kept only for keys this month's JIB also bills (the duplicate check)
    jib_keys: dict[tuple[str, str, str, str, Decimal], JibHistoryLine] = field(default_factory=dict)
    # (well, category) → service month → gross, LOE and overhead of the trailing months
    loe_gross: dict[tuple[str, str], dict[str, Decimal]] = field(default_factory=dict)
    # well → (service month, decimal) of its latest history line
    last_jib_decimal: dict[str, tuple[str, Decimal]] = field(default_factory=dict)
    operators_by_month: dict[str, set[str]] = field(default_factory=dict)
    payors_by_month: dict[str, set[str]] = field(default_factory=dict)
    # (well, product, sale month) with a check, for the months the accrual window covers
    checked: set[tuple[str, str, str]] = field(default_factory=set)
    paid_wells: set[str] = field(default_factory=set)
    # (well, product, sale month) → [volume, value, Σ price × volume] for the months before
    # this month's sale months (the flux split)
    sales: dict[tuple[str, str, str], list[Decimal]] = field(default_factory=dict)
    last_sale_month: dict[str, str] = field(default_factory=dict)

    def lines(self, name: str, well_id: str) -> list[Any]:
        """One well's lines of a history file, re-read (the file must not have changed)."""
        if self.folder is None:
            return []
        spec = SPECS[name]
        problems: list[Problem] = []
        by_property = self.property_map if name == "revenue_history.csv" else {}
        out = []
        if name in self.sources:  # kept in the database, as imported: it cannot change
            for row in _typed(spec, self.sources[name].stream(), problems):
                well = row.well_id or by_property.get(row.property_no, "")
                if well == well_id:
                    out.append(row if row.well_id else replace(row, well_id=well))
            return out
        path = self.folder / name
        with path.open("rb") as raw:
            hashing = _Hashing(raw)
            for row in _typed(spec, _text_stream(hashing), problems):
                well = row.well_id or by_property.get(row.property_no, "")
                if well == well_id:
                    out.append(row if row.well_id else replace(row, well_id=well))
            hashing.drain()
        if hashing.hexdigest() != self.hashes.get(name):
            raise DataError(
                f"{path} changed since this close read it; start a new close for the new data"
            )
        return out

    property_map: dict[str, str] = field(default_factory=dict)


@dataclass
class CloseData:
    """One period's documents and reference data, as read (nothing derived yet). The history
    files are not held: `history` has what the checks need from them."""

    period: str
    doi: list[DoiRow]
    jib: list[JibLine]
    revenue: list[RevenueLine]
    production: list[ProductionRow]
    prices: list[PriceRow]
    afe: list[AfeRow]
    joa: list[JoaRow]
    accruals: list[AccrualRow]
    tb_activity: list[TbRow]
    history: History = field(default_factory=History)
    hashes: dict[str, str] = field(default_factory=dict)

    @property
    def service_month(self) -> str:
        """The JIB service month this close books (the month before the period)."""
        return add_months(self.period, -1)

    @property
    def counts(self) -> dict[str, int]:
        """Rows read per file."""
        own = {
            spec.name: len(getattr(self, spec.attr))
            for spec in FILES
            if spec.attr and spec.name not in HISTORY_FILES
        }
        return {**own, **self.history.counts}


class _Hashing(io.RawIOBase):
    """A binary file read through SHA-256: the digest of exactly the bytes parsed."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.raw.readinto(buffer)  # type: ignore[attr-defined]
        if n:
            self.sha.update(memoryview(buffer)[:n])
        return n or 0

    def drain(self) -> None:
        while chunk := self.raw.read(1 << 20):
            self.sha.update(chunk)

    def hexdigest(self) -> str:
        return self.sha.hexdigest()


def _text_stream(raw: io.RawIOBase) -> TextIO:
    return io.TextIOWrapper(io.BufferedReader(raw, 1 << 16), encoding="utf-8-sig", newline="")


def _rows(
    spec: FileSpec, stream: TextIO, problems: list[Problem], *, partial: bool = False
) -> Iterator[tuple[Sequence[Any], int]]:
    """Each good row's parsed values (in `spec.columns` order) and line number, streamed;
    every problem collected, bad rows skipped."""
    lines = iter(stream)
    header = next(csv.reader(lines), None)
    if header is None:
        problems.append(Problem(spec.name, 1, "", "", "a header row"))
        return
    header = [h.strip() for h in header]
    missing = [c for c in spec.columns if c not in header]
    if missing:
        problems.append(
            Problem(spec.name, 1, ", ".join(missing), "", "these column(s) in the header")
        )
        return
    plan = [(header.index(name), name, parse) for name, parse in spec.columns.items()]
    fast = [(index, parse) for index, _, parse in plan]
    width = len(header)
    # A row whose every cell is already in its plain form (what exports mostly write) is
    # checked by one regular expression and converted by C calls; any other row takes the
    # cell-by-cell path, which accepts the other forms and names every problem.
    plain = {name: parse for name, parse in spec.columns.items()}
    row_re = re.compile(
        "\x1f".join(f"(?:{PLAIN[plain[h]][0]})" if h in plain else "[^\x1f]*" for h in header)
    )
    # the same check on a line's own text, for a line without quotes: its cells are what
    # splitting it on its commas gives (as csv.reader would), and none can hold a comma
    line_re = re.compile(row_re.pattern.replace("\x1f", ",").replace("\\x1f", ","))
    convert = [(index, PLAIN[parse][1]) for index, parse in fast]
    # partial: each row as its cells' text in column order, converted by whoever uses it
    # (the history indexes convert the few values they keep)
    texts = operator.itemgetter(*[index for index, _ in fast])
    for line_no, line in enumerate(lines, start=2):
        if '"' in line:  # quoted cells, perhaps over several lines: csv.reader reads them
            cells = next(csv.reader(itertools.chain((line,), lines)))
        else:
            text = line.rstrip("\r\n")
            cells = text.split(",")
            if line_re.fullmatch(text):
                if partial:
                    yield texts(cells), line_no
                else:
                    yield [conv(cells[index]) for index, conv in convert], line_no
                continue
        if len(cells) != width:
            if not any(c.strip() for c in cells):
                continue
            problems.append(
                Problem(
                    spec.name,
                    line_no,
                    "",
                    ",".join(cells)[:80],
                    f"{width} fields, found {len(cells)} (an unquoted comma in an amount?)",
                )
            )
            continue
        if row_re.fullmatch("\x1f".join(cells)):
            if partial:
                yield texts(cells), line_no
            else:
                yield [conv(cells[index]) for index, conv in convert], line_no
            continue
        if not cells[0].strip() and not any(c.strip() for c in cells):
            continue
        try:
            values = [parse(cells[index].strip()) for index, parse in fast]
        except ValueError:
            for index, name, parse in plan:  # again, cell by cell, to name every problem
                raw_value = cells[index].strip()
                try:
                    parse(raw_value)
                except ValueError as e:
                    problems.append(Problem(spec.name, line_no, name, raw_value, str(e)))
            continue
        if partial:  # the values in their plain text, as a plain row would give them
            yield tuple(v if isinstance(v, str) else str(v) for v in values), line_no
        else:
            yield values, line_no


def _typed(spec: FileSpec, stream: TextIO, problems: list[Problem]) -> Iterator[Any]:
    make, extra = spec.row_type, spec.extra
    for values, line_no in _rows(spec, stream, problems):
        yield make(*values, line_no, *extra)


def read_kind(name: str, stream: TextIO, problems: list[Problem]) -> list[Any]:
    """The typed rows of one file of kind `name` (`jib.csv`, `doi.csv`, …) from a text stream:
    the loader's one entry point for rows, whatever brought the file (a folder, an upload).
    Problems (file, line, column, value, what was expected) are appended to `problems`."""
    return list(_typed(SPECS[name], stream, problems))


def _read_file(
    folder: Path,
    spec: FileSpec,
    problems: list[Problem],
    sink: Callable[[Sequence[Any], int], None] | None,
    source: FileSource | None = None,
) -> tuple[list[Any], str, int]:
    """One file streamed once: its rows (or each row to `sink`), its SHA-256 and row count.
    A `source` (an imported file's rows) is read instead of the folder's file."""
    if source is not None:
        if sink is None:
            typed = list(_typed(spec, source.stream(), problems))
            return typed, source.digest, len(typed)
        fed = 0
        for values, line_no in _rows(spec, source.stream(), problems, partial=True):
            fed += 1
            sink(values, line_no)
        return [], source.digest, fed
    path = folder / spec.name
    if not path.is_file():
        problems.append(Problem(spec.name, 0, "", "", "the file (it is missing)"))
        return [], "", 0
    rows: list[Any] = []
    count = 0
    with path.open("rb") as raw:
        hashing = _Hashing(raw)
        try:
            if sink is None:
                rows = list(_typed(spec, _text_stream(hashing), problems))
                count = len(rows)
            else:  # history: values to the index, no row objects
                for values, line_no in _rows(spec, _text_stream(hashing), problems, partial=True):
                    count += 1
                    sink(values, line_no)
        except UnicodeDecodeError:
            data = path.read_bytes()
            try:
                data.decode("utf-8-sig")
            except UnicodeDecodeError as e:
                line = data[: e.start].count(b"\n") + 1
                problems.append(
                    Problem(spec.name, line, "", data[e.start : e.start + 1].hex(), "UTF-8 text")
                )
            return [], hashlib.sha256(data).hexdigest(), 0
        hashing.drain()
    return rows, hashing.hexdigest(), count


def available_periods(data_dir: Path | None = None) -> list[str]:
    """Periods that have a folder of data, oldest first."""
    root = data_dir or SAMPLE_DIR
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and PERIOD_RE.match(p.name))


def has_folder(period: str, data_dir: Path | None = None) -> bool:
    """Whether `period` has a folder of data (as available_periods would list it)."""
    return bool(PERIOD_RE.match(period)) and ((data_dir or SAMPLE_DIR) / period).is_dir()


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


class _HistoryReader:
    """Feeds the history files' rows into `History`, keeping only what the checks ask."""

    def __init__(self, period: str, data: CloseData, history: History) -> None:
        self.h = history
        self.trailing = {add_months(period, -k) for k in (1, 2, 3)}
        self.window = {add_months(period, -k) for k in range(1, 5)}
        self.billed = {
            (j.operator, j.service_month, j.cost_category, j.gross_amount) for j in data.jib
        }
        self.billed_months = {
            (operator, month, category) for operator, month, category, _ in self.billed
        }
        self.before_sales = {add_months(r.sale_month, -1) for r in data.revenue}
        self.last_decimal: dict[str, tuple[str, str]] = {}
        self.loe_seen: set[tuple[str, str, str, str, Decimal]] = set()
        self.problems: list[Problem] = []

    def jib(self, values: Sequence[str], line: int) -> None:
        """One jib_history line as text; only what an index keeps is converted."""
        operator, invoice, month, well, category, gross_text, decimal, net = values
        index = self.h
        if (operator, month, category) in self.billed_months:
            gross = Decimal(gross_text)
            if (operator, month, category, gross) in self.billed:
                key = (operator, well, month, category, gross)
                # the last line with the key, as a dict of them all would keep
                index.jib_keys[key] = JibHistoryLine(
                    operator, invoice, month, well, category, gross, Decimal(decimal),
                    Decimal(net), line,
                )  # fmt: skip
        if month in self.trailing and category in ("LOE", "Overhead"):
            gross = Decimal(gross_text)
            seen = (operator, well, month, category, gross)
            if seen not in self.loe_seen:  # a line billed twice counts once in the LOE average
                self.loe_seen.add(seen)
                months = index.loe_gross.setdefault((sys.intern(well), sys.intern(category)), {})
                months[month] = months.get(month, ZERO) + gross
        last = self.last_decimal.get(well)
        if last is None or month > last[0]:
            self.last_decimal[well] = (month, decimal)
        if month in self.window:
            index.operators_by_month.setdefault(month, set()).add(operator)

    def revenue(self, values: Sequence[str], line: int) -> None:
        """One revenue_history line as text; only what an index keeps is converted."""
        _, payor, property_no, well, month, product, volume, price, value = values[:9]
        index = self.h
        if not well:
            mapped = index.property_map.get(property_no)
            if mapped is None:
                self.problems.append(
                    Problem(
                        "revenue_history.csv",
                        line,
                        "well_id",
                        property_no,
                        "a well_id, or a property_no in the DOI",
                    )
                )
                return
            well = mapped
        intern = sys.intern  # what the indexes keep shares the period's own strings
        if month > index.last_sale_month.get(well, ""):
            index.last_sale_month[intern(well)] = intern(month)
        if month in self.window:
            index.checked.add((intern(well), intern(product), intern(month)))
            index.payors_by_month.setdefault(month, set()).add(payor)
        if month in self.before_sales:
            key = (intern(well), intern(product), intern(month))
            sums = index.sales.setdefault(key, [ZERO, ZERO, ZERO])
            sums[0] += Decimal(volume)
            sums[1] += Decimal(value)
            sums[2] += Decimal(price) * Decimal(volume)

    def finish(self) -> None:
        self.h.paid_wells = set(self.h.last_sale_month)
        self.h.last_jib_decimal = {
            sys.intern(well): (sys.intern(month), _decimal_share(decimal))
            for well, (month, decimal) in self.last_decimal.items()
        }


_last_load: list[tuple[tuple[Any, ...], CloseData]] = []


def _stamp(folder: Path) -> tuple[Any, ...]:
    """What identifies the files as read: each one's path, size and modification time."""
    out: list[Any] = [str(folder.resolve())]
    for spec in FILES:
        try:
            st = (folder / spec.name).stat()
            out.append((spec.name, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((spec.name, None))
    return tuple(out)


Progress = Callable[[str], None]


class ReadProgress:
    """Tells `say` what has been read so far (file by file, with row counts) while a period
    takes long to read: the first line after `every` seconds, then at most one per `every`
    seconds, and the whole count at the end once anything was said. A quick read says nothing."""

    def __init__(self, say: Progress, period: str, *, every: float = 2.0) -> None:
        self.say, self.period, self.every = say, period, every
        self.started = self.last = time.monotonic()
        self.read: list[str] = []
        self.said = False

    def file(self, name: str, rows: int) -> None:
        self.read.append(f"{name} {rows:,}")
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last, self.said = now, True
            self.say(f"Reading {self.period}: {', '.join(self.read)} rows so far…")

    def done(self) -> None:
        if self.said:
            self.say(f"Read {self.period}: {', '.join(self.read)} rows.")


def load(
    period: str,
    data_dir: Path | None = None,
    imported: Mapping[str, FileSource] | None = None,
    *,
    progress: ReadProgress | None = None,
) -> CloseData:
    """Read and check one period's files whole, each once as a stream; DataProblems lists
    every problem. The history files are reduced to `History` as they are read.

    The last period loaded is kept while its files are unchanged (size and mtime), so the
    check before a run and the run's own intake read the files once between them.

    A kind in `imported` (files dropped in Slack or imported at a terminal, from the
    database) is read from there instead of the folder, which may then not exist."""
    if imported:
        check_period(period)
        return _read(period, (data_dir or SAMPLE_DIR) / period, imported, progress)
    folder = require_period(period, data_dir)
    stamp = _stamp(folder)
    if _last_load and _last_load[0][0] == stamp and _last_load[0][1].period == period:
        return _last_load[0][1]
    data = _read(period, folder, None, progress)
    _last_load[:] = [(stamp, data)]
    return data


def _read(
    period: str,
    folder: Path,
    imported: Mapping[str, FileSource] | None,
    progress: ReadProgress | None,
) -> CloseData:
    """`_load` as bulk work: its rows make no reference cycles and live as long as the close
    (see bot/core/gc_pause.py)."""
    with bulk.paused():
        data = _load(period, folder, imported, progress)
    bulk.long_lived()
    return data


def _load(
    period: str,
    folder: Path,
    imported: Mapping[str, FileSource] | None = None,
    progress: ReadProgress | None = None,
) -> CloseData:
    problems: list[Problem] = []
    read: dict[str, list[Any]] = {}
    hashes: dict[str, str] = {}
    history = History(folder=folder, sources=dict(imported or {}))
    data = CloseData(
        period=period,
        doi=[],
        jib=[],
        revenue=[],
        production=[],
        prices=[],
        afe=[],
        joa=[],
        accruals=[],
        tb_activity=[],
        history=history,
        hashes=hashes,
    )
    feeder: _HistoryReader | None = None
    for spec in FILES:
        sink: Callable[[Sequence[Any], int], None] | None = None
        if spec.name in HISTORY_FILES:
            if feeder is None:
                history.property_map = {
                    r.operator_property_no: r.well_id for r in data.doi if r.operator_property_no
                }
                feeder = _HistoryReader(period, data, history)
            sink = feeder.jib if spec.name == "jib_history.csv" else feeder.revenue
        rows, digest, count = _read_file(
            folder, spec, problems, sink, (imported or {}).get(spec.name)
        )
        if progress is not None:
            progress.file(spec.name, count)
        if spec.name in HISTORY_FILES:
            history.counts[spec.name] = count
        else:
            read[spec.name] = rows
            setattr(data, spec.attr, rows)
        if digest:
            hashes[spec.name] = digest
    history.hashes = hashes
    if feeder is not None:
        feeder.finish()
        problems.extend(feeder.problems)
    _cross_checks(data, problems)
    # the caches shared repeated values while reading; the rows keep the values they shared
    _number.cache_clear()
    _decimal_share.cache_clear()
    if progress is not None:
        progress.done()
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
    account_map = SAMPLE_DIR / "account_map.csv"  # the entries' GL import files need it
    if account_map.is_file() and not (target / account_map.name).exists():
        shutil.copyfile(account_map, target / account_map.name)
    return written

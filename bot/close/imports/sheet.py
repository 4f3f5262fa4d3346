"""A dropped file as a table: its header row and data rows as text, from CSV or XLSX.

Operators' exports are not tidy: a title or two above the header (merged across the
columns in Excel), blank rows, a total row at the bottom, a `;` or tab for a separator.
The header is the first row that reads like one; rows above it are skipped and said so.
XLSX cells are read as Excel stores them: numbers as the numbers they are (never the
displayed rounding), dates as ISO dates, formulas as their last computed values.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from bot.core.errors import DataError

MAX_HEADER_SEARCH = 30  # rows looked at for the header
XLSX_MAGIC = b"PK\x03\x04"
# 'Total', 'Invoice Total', 'Grand Total:', 'Subtotal', 'Total for RBO-2701-0112', 'Well Totals'
TOTAL_RE = re.compile(
    r"^\s*(?:(?:grand|invoice|sub|report|statement|check|well|property|lease|page|operator)"
    r"[\s-]*)?totals?\b.*$",
    re.IGNORECASE,
)
TOP_ROWS = 15  # the first rows offered when a person chooses the header row


@dataclass
class Sheet:
    """One table read from a file: the header, the data rows (each with its row number in the
    file, 1-based as a spreadsheet shows it), the rows that say 'Total', what was skipped."""

    name: str  # the sheet's name for XLSX, "" for CSV
    header: list[str]
    header_row: int
    rows: list[tuple[int, list[str]]]
    totals: list[tuple[int, list[str]]] = field(default_factory=list)
    skipped_titles: list[str] = field(default_factory=list)
    # what the title block above the header says: 'Operator: Red Butte' → {'Operator': 'Red Butte'}
    title_values: dict[str, str] = field(default_factory=dict)
    # the first non-empty rows (row number, their text), for choosing another header row
    top: list[tuple[int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lone-text rows below the table (footers)


def is_xlsx(filename: str, raw: bytes) -> bool:
    return raw.startswith(XLSX_MAGIC) or filename.lower().endswith((".xlsx", ".xlsm"))


def read_sheets(filename: str, raw: bytes, header_row: int | None = None) -> list[Sheet]:
    """Every table in the file (one for CSV, one per non-empty sheet for XLSX); DataError if
    the file is neither readable CSV nor XLSX. `header_row` (1-based, as a spreadsheet numbers
    rows) is the header a person chose; else the header is found."""
    if is_xlsx(filename, raw):
        return _xlsx_sheets(filename, raw, header_row)
    if filename.lower().endswith(".xls"):
        raise DataError(
            f"{filename}: the old Excel format (.xls) is not read; save it as .xlsx or CSV"
        )
    return [_csv_sheet(filename, raw, header_row)]


def _decode(filename: str, raw: bytes) -> str:
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise DataError(f"{filename}: not text (UTF-8 or Windows-1252) and not XLSX")


def _csv_sheet(filename: str, raw: bytes, header_row: int | None = None) -> Sheet:
    text = _decode(filename, raw)
    if "\x00" in text:
        raise DataError(f"{filename}: a binary file, not CSV or XLSX")
    sample = "\n".join(text.splitlines()[:MAX_HEADER_SEARCH])
    delimiter = max((",", ";", "\t", "|"), key=lambda d: sample.count(d))
    grid = [
        (n, [c.strip() for c in cells])
        for n, cells in enumerate(csv.reader(io.StringIO(text), delimiter=delimiter), start=1)
    ]
    return _table("", grid, merged_rows=set(), header_row=header_row)


def _cell(value: Any) -> str:
    """An XLSX cell as text, as Excel stores it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime):
        if value.time() == datetime.min.time():
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # the shortest text that reads back as the same double: 0.275, not 0.27500000000000002
        return format(Decimal(repr(value)).normalize(), "f")
    return str(value).strip()


def _xlsx_sheets(filename: str, raw: bytes, header_row: int | None = None) -> list[Sheet]:
    from openpyxl import load_workbook  # only a dropped workbook needs it

    try:
        book = load_workbook(io.BytesIO(raw), data_only=True, read_only=False)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as e:
        raise DataError(f"{filename}: not a readable XLSX workbook ({e})") from None
    sheets = []
    for ws in book.worksheets:
        merged_rows = {
            r.min_row
            for r in ws.merged_cells.ranges
            if r.max_col > r.min_col and r.min_row == r.max_row
        }
        grid = [
            (n, [_cell(v) for v in row])
            for n, row in enumerate(ws.iter_rows(values_only=True), start=1)
        ]
        try:
            sheets.append(_table(ws.title, grid, merged_rows, header_row))
        except DataError:
            continue  # an empty or chart-only sheet
    book.close()
    if not sheets:
        raise DataError(f"{filename}: no sheet with a header row and data")
    return sheets


def _looks_like_header(cells: list[str]) -> bool:
    filled = [c for c in cells if c]
    if len(filled) < 2:
        return False
    if any(c.endswith(":") for c in filled):
        return False  # 'Invoice No:' / 'RBO-2701-0112' / 'Invoice Date:': a block of labels
    texty = [c for c in filled if not re.fullmatch(r"[-$()\d.,%/ :]+", c)]
    return len(texty) >= max(2, (len(filled) * 2 + 2) // 3)


def _filled(cells: list[str]) -> int:
    return sum(1 for c in cells if c)


def _find_header(grid: list[tuple[int, list[str]]], merged_rows: set[int]) -> int | None:
    """The index of the header: the first row that reads like one, as wide as the table
    below it (an invoice block above a table has rows of labels and values, narrower)."""
    window = grid[: MAX_HEADER_SEARCH + 20]
    widest = max((_filled(cells) for _, cells in window), default=0)
    for index, (n, cells) in enumerate(grid[:MAX_HEADER_SEARCH]):
        if not any(cells) or n in merged_rows or not _looks_like_header(cells):
            continue
        if widest >= 4 and _filled(cells) < max(2, (widest * 3 + 4) // 5):
            continue  # narrower than the table: a title or a block of labels
        return index
    return None


def _title_values(rows: list[list[str]]) -> dict[str, str]:
    """'Operator:' 'Red Butte' (two cells) or 'Operator: Red Butte' (one) → {'Operator': …}."""
    out: dict[str, str] = {}
    for cells in rows:
        filled = [c for c in cells if c]
        for i, c in enumerate(filled):
            if c.endswith(":") and i + 1 < len(filled) and not filled[i + 1].endswith(":"):
                out.setdefault(c[:-1].strip(), filled[i + 1])
            elif ": " in c:
                key, _, value = c.partition(": ")
                if key.strip() and value.strip() and len(key) <= 40:
                    out.setdefault(key.strip(), value.strip())
    return out


def _is_total(cells: list[str]) -> bool:
    return any(TOTAL_RE.match(c) for c in [c for c in cells if c][:2])


def _table(
    name: str,
    grid: list[tuple[int, list[str]]],
    merged_rows: set[int],
    header_row: int | None = None,
) -> Sheet:
    top = [(n, " | ".join(c for c in cells if c)) for n, cells in grid if any(cells)][:TOP_ROWS]
    if header_row is not None:
        header_at = next((i for i, (n, _) in enumerate(grid) if n == header_row), None)
        if header_at is None or _filled(grid[header_at][1]) < 1:
            raise DataError(f"row {header_row} is empty or past the end: no header there")
    else:
        header_at = _find_header(grid, merged_rows)
    if header_at is None:
        raise DataError("no header row (a row naming the columns) in the first rows")
    above = [cells for _, cells in grid[:header_at] if any(cells)]
    titles = [" ".join(c for c in cells if c) for cells in above]
    n, header = grid[header_at]
    while header and not header[-1]:
        header = header[:-1]
    width = len(header)
    rows, totals, notes = [], [], []
    for row_no, cells in grid[header_at + 1 :]:
        cells = (cells + [""] * width)[:width] if len(cells) <= width else cells
        if not any(cells):
            continue
        if _is_total(cells):
            totals.append((row_no, cells))
            continue
        if width >= 4 and _filled(cells) == 1:
            notes.append(next(c for c in cells if c))  # 'Page 1 of 2', 'Remit to: …'
            continue
        rows.append((row_no, cells))
    return Sheet(
        name=name,
        header=header,
        header_row=n,
        rows=rows,
        totals=totals,
        skipped_titles=titles,
        title_values=_title_values(above),
        top=top,
        notes=notes,
    )

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


# What a workbook may expand to, checked before it is parsed (a zip of repeated XML compresses
# a thousandfold: 600,000 numeric rows fit in 416 KB, 64 MB of shared strings in 785 KB).
MAX_XLSX_BYTES = 64_000_000  # every part of the workbook, uncompressed
MAX_XLSX_PART_BYTES = 32_000_000  # any one part (a sheet, the shared strings)
MAX_XLSX_ROWS = 200_000  # rows over every sheet
MAX_XLSX_CELLS = 2_000_000  # cells over every sheet
MAX_XLSX_STRINGS = 500_000  # entries of the shared strings table
# rows, cells and shared strings as their XML tags, with or without a namespace prefix
XLSX_TAG = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(row|c|si)[\s>/]")
XLSX_COUNTED = {
    b"row": (MAX_XLSX_ROWS, "rows"),
    b"c": (MAX_XLSX_CELLS, "cells"),
    b"si": (MAX_XLSX_STRINGS, "shared strings"),
}


def _bounded_xlsx(filename: str, raw: bytes) -> None:
    """DataError unless the workbook stays within the caps, counted from the zip's own sizes
    (a part is never read past its declared size) and by streaming its sheets' XML — before
    openpyxl builds anything."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            parts = z.infolist()
            total = sum(p.file_size for p in parts)
            big = max(parts, key=lambda p: p.file_size, default=None)
            if total > MAX_XLSX_BYTES or (big and big.file_size > MAX_XLSX_PART_BYTES):
                raise DataError(
                    f"{filename}: the workbook expands to {total / 1e6:,.0f} MB "
                    f"(the limit is {MAX_XLSX_BYTES // 1_000_000} MB, "
                    f"{MAX_XLSX_PART_BYTES // 1_000_000} MB a part); nothing was read"
                )
            counts = dict.fromkeys(XLSX_COUNTED, 0)
            for part in parts:
                name = part.filename.lower()
                if not (name.startswith("xl/worksheets/") or name == "xl/sharedstrings.xml"):
                    continue
                with z.open(part) as f:
                    tail = b""
                    while chunk := f.read(1 << 20):
                        # a tag is counted in the chunk where it ends: one cut across two
                        # chunks is whole in the next, which starts with this one's tail
                        text = tail + chunk
                        cut = max(0, len(text) - 64)
                        for m in XLSX_TAG.finditer(text):
                            if m.end() > cut and len(chunk) == 1 << 20:
                                break  # read again with the next chunk
                            tag = m.group(1)
                            counts[tag] += 1
                            if counts[tag] > XLSX_COUNTED[tag][0]:
                                raise DataError(
                                    f"{filename}: more than {XLSX_COUNTED[tag][0]:,} "
                                    f"{XLSX_COUNTED[tag][1]} (the limit for a dropped workbook); "
                                    "nothing was read"
                                )
                        tail = text[cut:] if len(chunk) == 1 << 20 else b""
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as e:
        raise DataError(f"{filename}: not a readable XLSX workbook ({e})") from None


def _xlsx_sheets(filename: str, raw: bytes, header_row: int | None = None) -> list[Sheet]:
    from openpyxl import load_workbook  # only a dropped workbook needs it

    _bounded_xlsx(filename, raw)
    try:
        book = load_workbook(io.BytesIO(raw), data_only=True, read_only=False)
    except Exception as e:  # a hostile or broken file: any parser error is the file's fault
        raise DataError(f"{filename}: not a readable XLSX workbook ({e})") from None
    sheets = []
    try:
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
    except Exception as e:  # a cell openpyxl cannot make sense of
        raise DataError(f"{filename}: not a readable XLSX workbook ({e})") from None
    finally:
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

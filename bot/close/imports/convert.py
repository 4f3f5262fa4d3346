"""A table and a confirmed mapping → the rows of one kind in closebot's layout, checked whole.

Every cell is checked with the loader's own parsers (bot/close/data/), so what is refused
here is what `closebot data check` refuses; a problem names the file, its row as the
spreadsheet numbers it, the file's own column name, the value and what was expected. A
total row must agree with the rows above it. Nothing is used unless there is no problem.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bot.close.data import ZERO, Problem
from bot.close.doi_master import money
from bot.close.imports.recognize import FILE_KINDS, SOURCE_COLUMN, date_of, month_of, optional
from bot.close.imports.sheet import Sheet

MONTH_PARSERS = ("_month", "_optional_month")
SUMMED = {  # the column whose total a kind's summary shows, per operator or payor
    "jib.csv": "owner_net_amount",
    "jib_history.csv": "owner_net_amount",
    "revenue.csv": "owner_net_value",
    "revenue_history.csv": "owner_net_value",
    "accruals.csv": "amount",
    "afe.csv": "approved_gross",
}
MONTH_COLUMN = {
    "jib.csv": "service_month",
    "jib_history.csv": "service_month",
    "revenue.csv": "sale_month",
    "revenue_history.csv": "sale_month",
    "production.csv": "month",
    "prices.csv": "month",
    "accruals.csv": "month",
    "tb_activity.csv": "month",
}


@dataclass
class Converted:
    """What a file became: closebot-layout CSV, its rows, problems (none: usable), a summary."""

    kind: str
    csv_text: str
    rows: int
    problems: list[Problem]
    totals: dict[str, Decimal] = field(default_factory=dict)  # per operator or payor
    months: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """'12 rows; service months 2026-09; owner net by operator: Permian Ridge $13,200.00 …'"""
        parts = [f"{self.rows} row{'s' if self.rows != 1 else ''}"]
        if self.months:
            label = MONTH_COLUMN[self.kind].replace("_", " ")
            shown = ", ".join(self.months[:4]) + (" …" if len(self.months) > 4 else "")
            parts.append(f"{label}s {shown}")
        if self.totals:
            what = SUMMED[self.kind].replace("_", " ")
            who = SOURCE_COLUMN.get(self.kind)
            listed = "; ".join(f"{k or '-'} {money(v)}" for k, v in list(self.totals.items())[:6])
            more = f"; … {len(self.totals) - 6} more" if len(self.totals) > 6 else ""
            parts.append(f"{what}{f' by {who}' if who else ''}: {listed}{more}")
        return " · ".join(parts)


def normalise(kind: str, column: str, raw: str) -> str:
    """A cell as the loader reads it: months and dates in ISO form, whatever the export wrote."""
    parser = FILE_KINDS[kind].columns[column].__name__
    if parser in MONTH_PARSERS and raw:
        return month_of(raw) or raw
    if parser == "_date" and raw:
        return date_of(raw) or raw
    return raw


def convert(filename: str, sheet: Sheet, kind: str, mapping: dict[str, str]) -> Converted:
    """Apply `mapping` (closebot column → the file's header) to every row and check it whole."""
    spec = FILE_KINDS[kind]
    problems: list[Problem] = []
    where = f"{filename} ({sheet.name})" if sheet.name else filename
    index: dict[str, int] = {}
    for column in spec.columns:
        header = mapping.get(column, "")
        if not header:
            if not optional(kind, column):
                problems.append(
                    Problem(
                        where, sheet.header_row, column, "", "a column for this (none was mapped)"
                    )
                )
            continue
        if header not in sheet.header:
            problems.append(
                Problem(where, sheet.header_row, header, "", f"a column named so, for {column}")
            )
            continue
        index[column] = sheet.header.index(header)
    if problems:
        return Converted(kind, "", 0, problems)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(spec.columns))
    sums: dict[str, Decimal] = defaultdict(lambda: ZERO)
    column_sums: dict[str, Decimal] = defaultdict(lambda: ZERO)
    months: set[str] = set()
    count = 0
    for row_no, cells in sheet.rows:
        if len(cells) > len(sheet.header) and any(cells[len(sheet.header) :]):
            problems.append(
                Problem(
                    where,
                    row_no,
                    "",
                    ",".join(cells)[:80],
                    f"{len(sheet.header)} fields, found {len(cells)} (an unquoted comma in an amount?)",
                )
            )
            continue
        values: list[str] = []
        parsed: dict[str, Any] = {}
        ok = True
        for column, parse in spec.columns.items():
            raw = cells[index[column]].strip() if column in index else ""
            value = normalise(kind, column, raw)
            try:
                parsed[column] = parse(value)
            except ValueError as e:
                problems.append(Problem(where, row_no, mapping[column] or column, raw, str(e)))
                ok = False
            values.append(value)
        if not ok:
            continue
        count += 1
        writer.writerow(values)
        if kind in SUMMED:
            who = str(parsed.get(SOURCE_COLUMN.get(kind, ""), ""))
            sums[who] += parsed[SUMMED[kind]]
        for column, value in parsed.items():
            if isinstance(value, Decimal):
                column_sums[column] += value
        if kind in MONTH_COLUMN:
            months.add(parsed[MONTH_COLUMN[kind]])
    problems.extend(_check_totals(where, sheet, kind, index, mapping, column_sums))
    if count == 0 and not problems:
        problems.append(Problem(where, sheet.header_row + 1, "", "", "at least one row of data"))
    return Converted(
        kind,
        out.getvalue(),
        count,
        problems,
        totals=dict(sorted(sums.items())),
        months=sorted(months),
    )


def _check_totals(
    where: str,
    sheet: Sheet,
    kind: str,
    index: dict[str, int],
    mapping: dict[str, str],
    column_sums: dict[str, Decimal],
) -> list[Problem]:
    """A 'Total' row's amounts must be the sums of the rows above it."""
    problems = []
    spec = FILE_KINDS[kind]
    for row_no, cells in sheet.totals:
        for column, i in index.items():
            raw = cells[i].strip() if i < len(cells) else ""
            if not raw or column not in column_sums:
                continue
            try:
                stated = spec.columns[column](raw)
            except ValueError:
                continue  # a label, not an amount
            if isinstance(stated, Decimal) and stated != column_sums[column]:
                problems.append(
                    Problem(
                        where,
                        row_no,
                        mapping[column],
                        raw,
                        f"the sum of the rows above, {column_sums[column]:,}",
                    )
                )
    return problems

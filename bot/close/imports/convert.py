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

from bot.close.data import CENT, ZERO, Problem, parse_amount
from bot.close.doi_master import money
from bot.close.imports.mapping import column_label, columns_of, fixed_value, wells_said
from bot.close.imports.recognize import FILE_KINDS, SOURCE_COLUMN, date_of, month_of, optional
from bot.close.imports.sheet import Sheet
from bot.close.imports.wells import WellIndex

# what operators write for a cost category, beyond closebot's own names
CATEGORY_WORDS = {
    "lease operating expense": "LOE",
    "lease operating expenses": "LOE",
    "lease operating": "LOE",
    "operating expense": "LOE",
    "operating expenses": "LOE",
    "copas overhead": "Overhead",
    "admin overhead": "Overhead",
    "administrative overhead": "Overhead",
    "producing overhead": "Overhead",
    "workover expense": "Workover",
    "intangible drilling": "IDC",
    "intangible drilling costs": "IDC",
    "intangible completion": "ICC",
    "intangible completion costs": "ICC",
    "tangible drilling": "TDC",
    "tangible completion": "TCC",
    "lease and well equipment": "LWE",
    "lease & well equipment": "LWE",
}
AMOUNT_PARSERS = ("_money", "_number", "_decimal_share")
# the columns that tie a row to a well, per kind (the property number mapped through the DOI)
WELL_COLUMNS = ("well_id", "property_no")

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
    ambiguous: dict[str, list[str]] = field(default_factory=dict)  # well name → wells it may be
    untied: list[str] = field(default_factory=list)  # well values the DOI does not know
    tied: int = 0  # rows tied to a DOI well (when the kind names wells and a DOI was there)
    documents: list[tuple[str, str]] = field(default_factory=list)  # (source, invoice or check)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """'12 rows; service months 2026-09; owner net by operator: Permian Ridge $13,200.00 …'"""
        parts = [f"{self.rows} row{'s' if self.rows != 1 else ''}"]
        if self.months:
            label = column_label(MONTH_COLUMN[self.kind]).lower()
            shown = ", ".join(self.months[:4]) + (" …" if len(self.months) > 4 else "")
            parts.append(f"{label}s {shown}")
        if self.totals:
            what = column_label(SUMMED[self.kind]).lower()
            who = SOURCE_COLUMN.get(self.kind)
            listed = "; ".join(
                f"{k} {money(v)}" if k else money(v) for k, v in list(self.totals.items())[:6]
            )
            more = f"; … {len(self.totals) - 6} more" if len(self.totals) > 6 else ""
            parts.append(f"{what}{f' by {who}' if who else ''}: {listed}{more}")
        if self.untied:
            shown = ", ".join(self.untied[:4]) + (" …" if len(self.untied) > 4 else "")
            parts.append(
                f"{len(self.untied)} well value(s) not in the DOI ({shown}): the close asks"
            )
        return " · ".join(parts)


def _amount(raw: str, *, share: bool) -> str:
    """'27.50%' → '0.275' (a share), '$ 1,234.50' → '$1,234.50', '1,234.50-' → '-1,234.50'."""
    text = raw.replace(" ", "").replace("\u00a0", "")
    if text.endswith("-") and len(text) > 1:
        text = "-" + text[:-1]
    if text.startswith("$-"):
        text = "-$" + text[2:]
    if share and text.endswith("%"):
        try:
            value = Decimal(text[:-1].replace(",", "")) / 100
        except ArithmeticError:
            return raw
        return format(value.normalize(), "f")
    return text


def normalise(kind: str, column: str, raw: str) -> str:
    """A cell as the loader reads it: months and dates in ISO form, percentages as decimals,
    currency as amounts, cost categories by their names — whatever the export wrote."""
    parser = FILE_KINDS[kind].columns[column].__name__
    if not raw:
        return raw
    if parser in MONTH_PARSERS:
        return month_of(raw) or raw
    if parser == "_date":
        return date_of(raw) or raw
    if parser in AMOUNT_PARSERS:
        text = _amount(raw, share=parser == "_decimal_share")
        if parser == "_money":  # 13200 (a number cell) → 13200.00, as an export writes money
            try:
                value = parse_amount(text)
            except (ValueError, ArithmeticError):
                return text
            return f"{value:.2f}" if value == value.quantize(CENT) else text
        return text
    if parser == "_category":
        return CATEGORY_WORDS.get(" ".join(raw.casefold().split()), raw)
    return raw


def _cell(cells: list[str], index: dict[str, int], fixed: dict[str, str], column: str) -> str:
    if column in fixed:
        return fixed[column]
    return cells[index[column]].strip() if column in index and index[column] < len(cells) else ""


def tie_wells(
    kind: str, values: dict[str, str], wells: WellIndex, said: dict[str, str]
) -> tuple[str | None, list[str]]:
    """Tie one row to a DOI well: the well, or None and the wells an ambiguous name may be.
    A well column that holds a name (or a property number, or a well a person said) gets
    the well's id; an operator is written as the DOI writes it; an unknown id or property
    number is left as it is (the close asks about it)."""
    if "operator" in values and kind in ("jib.csv", "jib_history.csv"):
        values["operator"] = wells.operator_named(values["operator"])
    operator = values.get("operator", "")
    for column in WELL_COLUMNS:
        raw = values.get(column, "")
        if not raw:
            continue
        tie = wells.tie(raw, operator=operator, said=said)
        if tie.well is None:
            if tie.candidates and not wells.shaped_like_id(raw):
                return None, tie.candidates  # a name: which well is it?
            continue
        if column == "well_id" and tie.how != "id":
            values["well_id"] = tie.well
        if column == "property_no" and tie.how in ("name", "said", "id") and "well_id" in values:
            values["well_id"] = values["well_id"] or tie.well
        return tie.well, []
    return None, []


def convert(
    filename: str,
    sheet: Sheet,
    kind: str,
    mapping: dict[str, str],
    wells: WellIndex | None = None,
) -> Converted:
    """Apply `mapping` (closebot column → the file's header, or one value for the whole file)
    to every row and check it whole; with `wells` (the period's DOI), tie every row's well."""
    spec = FILE_KINDS[kind]
    problems: list[Problem] = []
    where = f"{filename} ({sheet.name})" if sheet.name else filename
    index: dict[str, int] = {}
    said = wells_said(mapping)
    mapping = columns_of(mapping)
    fixed = {c: v for c, m in mapping.items() if (v := fixed_value(m)) is not None}
    for column in spec.columns:
        header = mapping.get(column, "")
        if column in fixed:
            continue
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
    months: set[str] = set()
    documents: dict[tuple[str, str], None] = {}
    ambiguous: dict[str, list[str]] = {}
    untied: dict[str, None] = {}
    tied = 0
    named_wells = wells is not None and any(c in spec.columns for c in WELL_COLUMNS)
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
        raws = {column: _cell(cells, index, fixed, column) for column in spec.columns}
        texts = {column: normalise(kind, column, raw) for column, raw in raws.items()}
        if named_wells and wells is not None:
            well, maybe = tie_wells(kind, texts, wells, said)
            shown = texts.get("well_id") or texts.get("property_no") or ""
            if well is not None:
                tied += 1
            elif maybe:
                ambiguous.setdefault(raws.get("well_id") or raws.get("property_no") or "", maybe)
            elif shown:
                untied.setdefault(shown)
        parsed: dict[str, Any] = {}
        ok = True
        for column, parse in spec.columns.items():
            try:
                parsed[column] = parse(texts[column])
            except ValueError as e:
                label = mapping.get(column) or column
                problems.append(Problem(where, row_no, label, raws[column], str(e)))
                ok = False
        if not ok:
            continue
        count += 1
        writer.writerow([texts[column] for column in spec.columns])
        if kind in DOCUMENT:
            source, number = DOCUMENT[kind]
            documents.setdefault((str(parsed[source]), str(parsed[number])))
        if kind in SUMMED:
            who = str(parsed.get(SOURCE_COLUMN.get(kind, ""), ""))
            sums[who] += parsed[SUMMED[kind]]
        if kind in MONTH_COLUMN:
            months.add(parsed[MONTH_COLUMN[kind]])
    problems.extend(_check_totals(where, sheet, kind, index, mapping))
    if count == 0 and not problems:
        problems.append(Problem(where, sheet.header_row + 1, "", "", "at least one row of data"))
    if named_wells and count and not tied and not ambiguous and not problems:
        problems.append(_ties_nothing(where, sheet, kind, mapping, count, list(untied)))
    return Converted(
        kind,
        out.getvalue(),
        count,
        problems,
        totals=dict(sorted(sums.items())),
        months=sorted(months),
        ambiguous=ambiguous,
        untied=list(untied),
        tied=tied,
        documents=list(documents),
    )


# the columns that say which document a row is on: (its source, its number)
DOCUMENT = {
    "jib.csv": ("operator", "invoice_no"),
    "jib_history.csv": ("operator", "invoice_no"),
    "revenue.csv": ("payor", "check_no"),
    "revenue_history.csv": ("payor", "check_no"),
}


def _ties_nothing(
    where: str, sheet: Sheet, kind: str, mapping: dict[str, str], rows: int, seen: list[str]
) -> Problem:
    """The reason a file that names no DOI well is refused (it would all go to suspense)."""
    mapped = [f"{column_label(c)} ← {mapping[c]!r}" for c in WELL_COLUMNS if mapping.get(c)]
    if not mapped:
        why = "no column was mapped to a well or property"
    else:
        shown = ", ".join(repr(v) for v in seen[:3]) or "nothing"
        why = f"{' and '.join(mapped)} hold {shown}, which the DOI does not know"
    return Problem(
        where,
        sheet.header_row,
        "",
        "",
        f"a well or property the DOI knows on at least one of its {rows} rows (a well id, "
        f"an operator property number or a well name): {why}; map the column that names "
        "the wells, or import the DOI that has them",
    )


def _sums(kind: str, index: dict[str, int], rows: list[list[str]]) -> dict[str, Decimal]:
    spec = FILE_KINDS[kind]
    out: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for cells in rows:
        for column, i in index.items():
            try:
                value = spec.columns[column](normalise(kind, column, cells[i].strip()))
            except (ValueError, IndexError):
                continue
            if isinstance(value, Decimal):
                out[column] += value
    return out


def _check_totals(
    where: str, sheet: Sheet, kind: str, index: dict[str, int], mapping: dict[str, str]
) -> list[Problem]:
    """A total row's amounts must be the sums of the rows above it, or of those since the
    previous total (a subtotal per well or invoice)."""
    problems = []
    spec = FILE_KINDS[kind]
    previous = 0
    for row_no, cells in sheet.totals:
        above = [c for n, c in sheet.rows if n < row_no]
        since = [c for n, c in sheet.rows if previous < n < row_no]
        previous = row_no
        all_sums, part_sums = _sums(kind, index, above), _sums(kind, index, since)
        column_sums = all_sums
        for column, i in index.items():
            raw = cells[i].strip() if i < len(cells) else ""
            if not raw or column not in column_sums:
                continue
            try:
                stated = spec.columns[column](normalise(kind, column, raw))
            except ValueError:
                continue  # a label, not an amount
            if isinstance(stated, Decimal) and stated not in (
                all_sums[column],
                part_sums[column],
            ):
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

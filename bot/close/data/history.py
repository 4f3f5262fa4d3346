"""The 24 months of history, reduced while the files stream past to the indexes the
checks ask (History), and the reader that feeds them (_HistoryReader)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.close.data.problems import Problem
from bot.close.data.reading import FileSource, _Hashing, _text_stream, _typed
from bot.close.data.rows import JibHistoryLine
from bot.close.data.specs import SPECS, _decimal_share
from bot.close.data.values import ZERO, add_months
from bot.core.errors import DataError

if TYPE_CHECKING:
    from bot.close.data.loading import CloseData


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

"""Which kind a file is and which period it is for, from its content first: a JIB is told from
JIB history by its service months against the close's (a JIB whose service month is the
close's is a JIB, never history), and a period read from the rows beats one in the file's
name ('RBO JIB Jan-2027.xlsx' that bills December is January's JIB whatever it is called)."""

from __future__ import annotations

import re
from collections import Counter

from bot.close.data import add_months
from bot.close.imports.mapping import fixed_value
from bot.close.imports.recognize import MONTH_NAMES, Proposal, month_of
from bot.close.imports.sheet import Sheet

PAIRS = ({"jib.csv", "jib_history.csv"}, {"revenue.csv", "revenue_history.csv"})
MONTH_OF = {
    "jib.csv": "service_month",
    "jib_history.csv": "service_month",
    "revenue.csv": "sale_month",
    "revenue_history.csv": "sale_month",
}


def stem_of(filename: str) -> str:
    return re.sub(r"\.[a-z0-9]+$", "", filename.casefold())


def months_in(sheet: Sheet, proposal: Proposal, column: str) -> list[str]:
    """The months (YYYY-MM) a column holds, row by row (a whole-file value once per row)."""
    mapped = proposal.mapping.get(column, "")
    value = fixed_value(mapped)
    if value is not None:
        month = month_of(value)
        return [month] * len(sheet.rows) if month else []
    if mapped not in sheet.header:
        return []
    i = sheet.header.index(mapped)
    found = (month_of(cells[i]) for _, cells in sheet.rows if i < len(cells) and cells[i])
    return [m for m in found if m]


def _jib_or_history(
    jib: Proposal, history: Proposal, sheet: Sheet, stem: str, period: str | None
) -> Proposal | None:
    months = sorted(set(months_in(sheet, jib, "service_month")))
    if not months:
        return None
    named_history = "hist" in stem
    if period and any(m >= add_months(period, -1) for m in months):
        return None if named_history else jib  # this close's service month: a JIB
    if named_history:
        return history
    if len(months) == 1:
        return jib  # one operator's bill of one month (late, perhaps): a JIB
    return history if period else None  # months all before the close's: booked history


def _revenue_or_history(
    revenue: Proposal, history: Proposal, stem: str, period: str | None
) -> Proposal | None:
    if "hist" in stem:
        return history
    if period or any(word in stem for word in ("revenue", "stub", "check")):
        return revenue
    return None


def clear_kind(
    proposals: list[Proposal], sheet: Sheet, filename: str, period: str | None
) -> Proposal | None:
    """The kind, when the content (or the file's name for a kind alone) says it plainly;
    None when a person must say."""
    if not proposals:
        return None
    best = proposals[0]
    stem = stem_of(filename)
    by_kind = {p.kind: p for p in proposals}
    for pair in PAIRS:
        if best.kind in pair and pair <= set(by_kind):
            current, history = sorted(pair, key=lambda k: "history" in k)
            if current.startswith("jib"):
                return _jib_or_history(by_kind[current], by_kind[history], sheet, stem, period)
            return _revenue_or_history(by_kind[current], by_kind[history], stem, period)
    if len(proposals) == 1 or stem == best.kind.removesuffix(".csv"):
        return best
    second = proposals[1]
    if (best.share, best.matched) != (second.share, second.matched):
        return best
    return None


def period_of(sheet: Sheet, proposal: Proposal | None, filename: str) -> str | None:
    """The period a file is for, when nobody said: its content first (a JIB bills the month
    before its period), then a month in its name."""
    if proposal is not None and proposal.kind in MONTH_OF:
        months = months_in(sheet, proposal, MONTH_OF[proposal.kind])
        found = period_from_content(proposal.kind, months)
        if found:
            return found
    return period_from_name(filename)


def period_from_name(filename: str) -> str | None:
    """A period named in the file's name: jib_2026-10.csv, 'Oct 2026 JIB.xlsx', 202610."""
    stem = filename.rsplit(".", 1)[0]
    if m := re.search(r"(20\d\d)[-_ ]?(0[1-9]|1[0-2])(?!\d)", stem):
        return f"{m[1]}-{m[2]}"
    if m := re.search(r"([A-Za-z]{3,9})[-_ ]*(20\d\d)", stem):
        month = MONTH_NAMES.get(m[1][:3].casefold())
        if month:
            return f"{m[2]}-{month:02d}"
    return None


def period_from_content(kind: str, months: list[str]) -> str | None:
    """A JIB bills the month before the period it is booked in."""
    if kind == "jib.csv" and months:
        return add_months(Counter(months).most_common(1)[0][0], 1)
    return None

"""Severance and withholding as data (CLOSE.md v2.2): the rates table closebot ships
(`severance_rates.csv` beside this module, each row naming its statute or the state's page)
and the team's own rows (`severance_rates.csv` in the data folder), read into a `RatesTable`
that says what a state levies on a well's product in a month — or why it cannot (no row,
or a condition it has no data for), which the close asks, never a silent zero.

A row: state × product × component, a rate (`percent` of value, or `per_unit` dollars per
barrel / Mcf), the dates it is in force (`effective_from`/`effective_to`, on the sale
month), and conditions: the well's month of production (`age_from`/`age_to`, month 1 is
`first_prod_month`), its first production month (`first_prod_from`/`first_prod_to`), a
status the team gives the well (`status`: stripper, enhanced…, in `well_status.csv` beside
the rates: `well_id,status`), the oil benchmark's average over the previous calendar quarter
(`price_above`/`price_at_most`, from prices.csv), and a band of the unit price the rate
applies to (`band_from`/`band_to`: Utah's 3 % up to $13/bbl, 5 % above). The components a
state levies are summed; within a component the matching row with a status, then the most
conditions, then the latest `effective_from` (the team's over the shipped) applies. A team
row for a state × product replaces every shipped row for that state × product.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.close.data import ZERO, PriceRow, add_months, months_between

SHIPPED = Path(__file__).parent / "severance_rates.csv"
TEAM_FILE = "severance_rates.csv"  # the team's own rows, in the data folder
STATUS_FILE = "well_status.csv"  # well_id,status: the statuses the rows' `status` names
COLUMNS = (
    "state", "product", "component", "basis", "rate", "effective_from", "effective_to",
    "age_from", "age_to", "first_prod_from", "first_prod_to", "status", "price_above",
    "price_at_most", "band_from", "band_to", "source",
)  # fmt: skip
CONDITIONS = ("age", "first_prod", "status", "price")


@dataclass(frozen=True)
class Rate:
    """One row of the table."""

    state: str
    product: str
    component: str
    per_unit: bool
    rate: Decimal  # a fraction of value (0.046), or dollars per unit
    effective_from: str = ""  # YYYY-MM-DD, "" since ever
    effective_to: str = ""
    age: tuple[int | None, int | None] = (None, None)
    first_prod: tuple[str, str] = ("", "")  # YYYY-MM bounds
    status: str = ""
    price: tuple[Decimal | None, Decimal | None] = (None, None)  # above, at most
    band: tuple[Decimal | None, Decimal | None] = (None, None)
    source: str = ""
    team: bool = False
    where: str = ""  # file and line

    @property
    def conditions(self) -> int:
        return sum(
            (
                self.age != (None, None),
                self.first_prod != ("", ""),
                bool(self.status),
                self.price != (None, None),
            )
        )

    def shown(self) -> str:
        rate = f"${self.rate}/unit" if self.per_unit else f"{pct(self.rate)} %"
        return f"{self.component} {rate}"


@dataclass(frozen=True)
class Well:
    """What a row's conditions read of a well."""

    well_id: str
    state: str
    first_prod_month: str


@dataclass(frozen=True)
class Due:
    """The 8/8ths tax a state levies on a line and how it was worked out."""

    amount: Decimal
    basis: str
    rate: Decimal | None  # the total % of value, when every component is one


@dataclass(frozen=True)
class NoRate:
    """Why the table cannot say what is due: a question for a person."""

    state: str
    product: str
    reason: str


@dataclass
class RatesTable:
    """The shipped rows and the team's, and the statuses the team gave its wells."""

    rows: tuple[Rate, ...]
    statuses: dict[str, frozenset[str]] = field(default_factory=dict)
    _by_key: dict[tuple[str, str], list[Rate]] = field(init=False, repr=False)
    # the rows chosen per state, product, month, first month, statuses and prices (`due`)
    _chosen: dict[tuple[Any, ...], tuple[Any, Any]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        team = {(r.state, r.product) for r in self.rows if r.team}
        by_key: dict[tuple[str, str], list[Rate]] = {}
        for r in self.rows:
            if r.team or (r.state, r.product) not in team:
                by_key.setdefault((r.state, r.product), []).append(r)
        self._by_key = by_key
        self._chosen = {}

    def covers(self, state: str, product: str) -> bool:
        return (state, product) in self._by_key

    def states(self) -> list[str]:
        return sorted({s for s, _ in self._by_key})

    def due(
        self,
        well: Well,
        product: str,
        sale_month: str,
        value: Decimal,
        volume: Decimal,
        prices: Iterable[PriceRow] = (),
    ) -> Due | NoRate:
        """What the state levies on 8/8ths `value` (`volume` units) sold in `sale_month`. The
        rows that apply are chosen once per state, product, month, first production month and
        statuses (a month at volume has 200,000 lines of a few hundred such)."""
        statuses = self.statuses.get(well.well_id, frozenset())
        key = (well.state, product, sale_month, well.first_prod_month, statuses, id(prices))
        hit = self._chosen.get(key)
        if hit is None or hit[0] is not prices:
            hit = self._chosen[key] = (prices, self._choose(well, product, sale_month, prices))
        chosen = hit[1]
        if isinstance(chosen, NoRate):
            return chosen
        rows, basis, percent = chosen
        if percent is not None:  # every component a % of value: their sum, exact in Decimal
            return Due(value * percent, basis, percent)
        return Due(sum((_amount(r, value, volume) for r in rows), ZERO), basis, percent)

    def _choose(
        self, well: Well, product: str, sale_month: str, prices: Iterable[PriceRow]
    ) -> tuple[list[Rate], str, Decimal | None] | NoRate:
        rows = self._by_key.get((well.state, product))
        if not rows:
            return NoRate(
                well.state,
                product,
                f"the severance rates table has no row for {well.state or 'a blank state'} "
                f"{product} (add one to {TEAM_FILE} in the data folder)",
            )
        day = f"{sale_month}-01"
        statuses = self.statuses.get(well.well_id, frozenset())
        by_component: dict[str, list[Rate]] = {}
        for r in rows:
            if (r.effective_from and r.effective_from > day) or (
                r.effective_to and r.effective_to < day
            ):
                continue
            by_component.setdefault(r.component, []).append(r)
        if not by_component:
            return NoRate(
                well.state,
                product,
                f"no row of the severance rates table for {well.state} {product} is in force "
                f"for {sale_month}",
            )
        quarter: Decimal | str | None = None
        chosen, parts = [], []
        percent: Decimal | None = ZERO
        for component, candidates in by_component.items():
            matching = []
            for r in candidates:
                ok = _matches(r, well, sale_month, statuses)
                if ok and r.price != (None, None):
                    if quarter is None:
                        quarter = _previous_quarter_oil(sale_month, prices)
                    if isinstance(quarter, str):
                        return NoRate(
                            well.state,
                            product,
                            f"{well.state} {product} {component}: {r.shown()} applies when the oil "
                            f"benchmark averaged over the previous quarter is {_price_text(r)}, "
                            f"and prices.csv has no oil benchmark for {quarter}",
                        )
                    ok = _in_price(r, quarter)
                if ok:
                    matching.append(r)
            if not matching:
                return NoRate(
                    well.state,
                    product,
                    f"no row of the severance rates table for {well.state} {product} "
                    f"{component} fits this well in {sale_month} (its conditions: "
                    + "; ".join(_conditions_text(r) for r in candidates)
                    + ")",
                )
            best = max(
                matching,
                key=lambda r: (bool(r.status), r.conditions, r.effective_from, r.team),
            )
            chosen.append(best)
            parts.append(_basis(best, well, sale_month))
            percent = percent + best.rate if percent is not None and _plain(best) else None
        return chosen, f"{well.state} {product} " + " + ".join(parts), percent


def pct(fraction: Decimal) -> str:
    """0.0375 → '3.75' (no trailing zeros, no exponent)."""
    return format((fraction * 100).normalize(), "f")


def _plain(r: Rate) -> bool:
    return not r.per_unit and r.band == (None, None)


def _matches(r: Rate, well: Well, sale_month: str, statuses: frozenset[str]) -> bool:
    if r.status and r.status not in statuses:
        return False
    if r.age != (None, None):
        if not well.first_prod_month:
            return False
        month_no = months_between(well.first_prod_month, sale_month) + 1
        low, high = r.age
        if (low is not None and month_no < low) or (high is not None and month_no > high):
            return False
    if r.first_prod != ("", ""):
        if not well.first_prod_month:
            return False
        low_m, high_m = r.first_prod
        if (low_m and well.first_prod_month < low_m) or (high_m and well.first_prod_month > high_m):
            return False
    return True


def _previous_quarter_oil(sale_month: str, prices: Iterable[PriceRow]) -> Decimal | str:
    """The oil benchmark's average over the calendar quarter before the sale month's, or the
    months missing from prices.csv."""
    year, month = (int(x) for x in sale_month.split("-"))
    first = add_months(f"{year:04d}-{(month - 1) // 3 * 3 + 1:02d}", -3)
    months = [add_months(first, k) for k in range(3)]
    oil = {p.month: p.benchmark_price for p in prices if p.product == "oil"}
    missing = [m for m in months if m not in oil]
    if missing:
        return f"{months[0]}..{months[-1]}"
    return sum((oil[m] for m in months), ZERO) / 3


def _in_price(r: Rate, average: Decimal) -> bool:
    above, at_most = r.price
    return (above is None or average > above) and (at_most is None or average <= at_most)


def _price_text(r: Rate) -> str:
    above, at_most = r.price
    return " and ".join(
        t for t in (f"over ${above}" if above is not None else "",
                    f"at most ${at_most}" if at_most is not None else "") if t
    )  # fmt: skip


def _conditions_text(r: Rate) -> str:
    parts = []
    if r.age != (None, None):
        parts.append(f"production months {r.age[0] or 1}–{r.age[1] or '…'}")
    if r.first_prod != ("", ""):
        parts.append(f"first production {r.first_prod[0] or '…'}–{r.first_prod[1] or '…'}")
    if r.status:
        parts.append(f"wells with the status {r.status!r} ({STATUS_FILE})")
    if r.price != (None, None):
        parts.append(f"previous quarter's oil benchmark {_price_text(r)}")
    return f"{r.shown()} for " + (", ".join(parts) or "every well")


def _amount(r: Rate, value: Decimal, volume: Decimal) -> Decimal:
    """One component's tax on 8/8ths `value` of `volume` units."""
    if r.per_unit:
        return volume * r.rate
    if r.band != (None, None):
        low, high = r.band[0] or ZERO, r.band[1]
        unit = value / volume if volume else ZERO
        portion = max(ZERO, (min(unit, high) if high is not None else unit) - low)
        return portion * volume * r.rate
    return value * r.rate


def _basis(r: Rate, well: Well, month: str) -> str:
    """How a component was chosen and applies, in words."""
    age = ""
    if r.age != (None, None) and well.first_prod_month:
        month_no = months_between(well.first_prod_month, month) + 1
        age = f" (month {month_no} of production, months {r.age[0] or 1}–{r.age[1] or '…'})"
    if r.per_unit:
        return f"{r.component} ${r.rate}/unit{age}"
    if r.band != (None, None):
        low, high = r.band[0] or ZERO, r.band[1]
        band = f" of the price {'above' if high is None else 'from'} ${low}" + (
            f" to ${high}" if high is not None else ""
        )
        return f"{r.component} {pct(r.rate)} %{band}{age}"
    return f"{r.component} {pct(r.rate)} %{age}"


from bot.close.rates.reading import rates_for, read_rates, shipped  # noqa: E402  (they build the table)

__all__ = [
    "SHIPPED",
    "STATUS_FILE",
    "TEAM_FILE",
    "Due",
    "NoRate",
    "Rate",
    "RatesTable",
    "Well",
    "rates_for",
    "read_rates",
    "shipped",
]

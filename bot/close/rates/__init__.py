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

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path

from bot.close.data import PRODUCTS, ZERO, PriceRow, add_months, months_between
from bot.core.errors import DataError

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

    def __post_init__(self) -> None:
        team = {(r.state, r.product) for r in self.rows if r.team}
        by_key: dict[tuple[str, str], list[Rate]] = {}
        for r in self.rows:
            if r.team or (r.state, r.product) not in team:
                by_key.setdefault((r.state, r.product), []).append(r)
        self._by_key = by_key

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
        """What the state levies on 8/8ths `value` (`volume` units) sold in `sale_month`."""
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
        total, parts = ZERO, []
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
            amount, text = _apply(best, value, volume, well, sale_month)
            total += amount
            parts.append(text)
            percent = percent + best.rate if percent is not None and _plain(best) else None
        return Due(total, f"{well.state} {product} " + " + ".join(parts), percent)


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


def _apply(r: Rate, value: Decimal, volume: Decimal, well: Well, month: str) -> tuple[Decimal, str]:
    age = ""
    if r.age != (None, None) and well.first_prod_month:
        month_no = months_between(well.first_prod_month, month) + 1
        age = f" (month {month_no} of production, months {r.age[0] or 1}–{r.age[1] or '…'})"
    if r.per_unit:
        return volume * r.rate, f"{r.component} ${r.rate}/unit{age}"
    if r.band != (None, None):
        low, high = r.band[0] or ZERO, r.band[1]
        unit = value / volume if volume else ZERO
        portion = max(ZERO, (min(unit, high) if high is not None else unit) - low)
        band = f" of the price {'above' if high is None else 'from'} ${low}" + (
            f" to ${high}" if high is not None else ""
        )
        return portion * volume * r.rate, f"{r.component} {pct(r.rate)} %{band}{age}"
    return value * r.rate, f"{r.component} {pct(r.rate)} %{age}"


# -- reading ---------------------------------------------------------------------------------


def _decimal(raw: str, what: str, problems: list[str], where: str) -> Decimal | None:
    if not raw:
        return None
    try:
        return Decimal(raw.replace("$", "").replace(",", ""))
    except InvalidOperation:
        problems.append(f"{where}, column {what}: {raw!r}: expected a number")
        return None


def _int(raw: str, what: str, problems: list[str], where: str) -> int | None:
    if not raw:
        return None
    if not raw.isdigit():
        problems.append(f"{where}, column {what}: {raw!r}: expected a whole number of months")
        return None
    return int(raw)


def read_rates(text: str, name: str, *, team: bool) -> list[Rate]:
    """The rows of one rates file; DataError listing every bad line."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in ("state", "product", "basis", "rate", "source") if c not in header]
    if missing:
        raise DataError(f"{name} line 1: expected the columns {', '.join(missing)}")
    out, problems = [], []
    for n, raw in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k}
        if not any(row.values()):
            continue
        where = f"{name} line {n}"
        product = PRODUCTS.get(row["product"].casefold())
        if product is None:
            problems.append(
                f"{where}, column product: {row['product']!r}: expected oil, gas or ngl"
            )
        if row["basis"] not in ("percent", "per_unit"):
            problems.append(
                f"{where}, column basis: {row['basis']!r}: expected percent or per_unit"
            )
        if not row["source"]:
            problems.append(f"{where}, column source: expected the statute or the state's page")
        rate = _decimal(row["rate"], "rate", problems, where)
        if rate is None and row["rate"] == "":
            problems.append(f"{where}, column rate: expected a rate")
        dates = []
        for col in ("effective_from", "effective_to"):
            v = row.get(col, "")
            if v and not (len(v) == 10 and v[4] == "-" and v[7] == "-"):
                problems.append(f"{where}, column {col}: {v!r}: expected YYYY-MM-DD")
            dates.append(v)
        months = []
        for col in ("first_prod_from", "first_prod_to"):
            v = row.get(col, "")
            if v and not (len(v) == 7 and v[4] == "-"):
                problems.append(f"{where}, column {col}: {v!r}: expected YYYY-MM")
            months.append(v)
        if rate is None or product is None or row["basis"] not in ("percent", "per_unit"):
            continue
        per_unit = row["basis"] == "per_unit"
        out.append(
            Rate(
                state=row["state"].upper(),
                product=product,
                component=row.get("component") or "severance",
                per_unit=per_unit,
                rate=rate if per_unit else rate / 100,
                effective_from=dates[0],
                effective_to=dates[1],
                age=(
                    _int(row.get("age_from", ""), "age_from", problems, where),
                    _int(row.get("age_to", ""), "age_to", problems, where),
                ),
                first_prod=(months[0], months[1]),
                status=row.get("status", "").casefold(),
                price=(
                    _decimal(row.get("price_above", ""), "price_above", problems, where),
                    _decimal(row.get("price_at_most", ""), "price_at_most", problems, where),
                ),
                band=(
                    _decimal(row.get("band_from", ""), "band_from", problems, where),
                    _decimal(row.get("band_to", ""), "band_to", problems, where),
                ),
                source=row["source"],
                team=team,
                where=where,
            )
        )
    if problems:
        raise DataError(
            f"{len(problems)} problem(s) in {name}:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    return out


def read_statuses(text: str, name: str) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for raw in csv.DictReader(io.StringIO(text)):
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k}
        if row.get("well_id") and row.get("status"):
            out.setdefault(row["well_id"], set()).add(row["status"].casefold())
    return {k: frozenset(v) for k, v in out.items()}


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"cannot read {path}: {e}") from None


@lru_cache(maxsize=8)
def _table(team: str, team_stamp: float, status: str, status_stamp: float) -> RatesTable:
    rows = read_rates(_text(SHIPPED), SHIPPED.name, team=False)
    if team:
        rows += read_rates(_text(Path(team)), team, team=True)
    statuses = read_statuses(_text(Path(status)), status) if status else {}
    return RatesTable(tuple(rows), statuses)


def rates_for(data_dir: Path | None) -> RatesTable:
    """The shipped table with the team's rows from `data_dir` (read again when they change)."""

    def found(name: str) -> tuple[str, float]:
        path = data_dir / name if data_dir else None
        if path is not None and path.is_file():
            return str(path), path.stat().st_mtime
        return "", 0.0

    return _table(*found(TEAM_FILE), *found(STATUS_FILE))


def shipped() -> RatesTable:
    return rates_for(None)

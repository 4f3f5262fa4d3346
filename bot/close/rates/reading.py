"""Reading the severance rates: the shipped table, the team's rows and the statuses it gives
its wells (bot/close/rates/__init__.py says what a row means), each file read again when it
changes; a bad file is reported whole, line and column, and nothing of it is used."""

from __future__ import annotations

import csv
import io
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path

from bot.close.data import PRODUCTS
from bot.close.rates import SHIPPED, STATUS_FILE, TEAM_FILE, Rate, RatesTable
from bot.core.errors import DataError


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

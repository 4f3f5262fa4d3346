"""What `closebot data check` says of the severance rates: the wells of a period whose state ×
product the table cannot rate (no row, no row in force, a condition without its data), each a
question the close will ask — never "ok"."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from bot.close.data import CloseData, load
from bot.close.doi_master import Master
from bot.close.rates import NoRate, RatesTable, Well, rates_for


def unrated(data: CloseData, table: RatesTable) -> list[str]:
    """Per reason, the wells of the period's production and checks the table cannot rate."""
    master = Master.of(data)
    prices = {(p.month, p.product): p for p in data.prices}
    wells: dict[str, set[str]] = {}
    lines: list[tuple[str, str, str, Decimal, Decimal]] = [
        (r.well_id or master.by_property("", r.property_no) or "", r.product, r.sale_month,
         r.gross_value, r.gross_volume)
        for r in data.revenue
    ]  # fmt: skip
    for p in data.production:
        price = prices.get((p.month, p.product))
        unit = price.benchmark_price - price.differential if price else Decimal(0)
        lines.append((p.well_id, p.product, p.month, p.volume * unit, p.volume))
    for well_id, product, month, value, volume in lines:
        row = master.in_force(well_id, month) if well_id else None
        if row is None:
            continue  # an unknown well is intake's question
        due = table.due(
            Well(row.well_id, row.state, row.first_prod_month),
            product,
            month,
            value,
            volume,
            data.prices,
        )
        if isinstance(due, NoRate):
            wells.setdefault(due.reason, set()).add(row.well_id)
    return [f"{reason} — {', '.join(sorted(w))}" for reason, w in sorted(wells.items())]


def severance_questions(period: str, data_dir: Path) -> list[str]:
    """The severance questions a close of `period` will ask (its data read as the close reads it)."""
    return unrated(load(period, data_dir), rates_for(data_dir))

"""The revenue accrual step: production without a check accrued, and the checks still missing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, NamedTuple

from bot.close.checks import (
    REVENUE_ACCOUNTS,
    Close,
    Finding,
    stub_parts,
)
from bot.close.data import (
    ZERO,
    add_months,
    cents,
    months_between,
)
from bot.close.doi_master import (
    ACCRUAL_WINDOW,
    MATERIALITY,
    dec8,
    money,
)
from bot.close.rates import NoRate
from bot.close.registry import MAX_LIST, Step, StepTools
from bot.core.tools import ToolContext

REVENUE = Step(
    "revenue",
    "Revenue accrual",
    "revenue accrual for production without a check; new, shut-in and immaterial wells, and "
    "checks still missing past the accrual window, are exceptions.",
    "Accruing revenue for production without a check.",
    after="jibs",
    loading=lambda f: [f"Accruing revenue for {f.wells}…", "Pricing volumes with no check…"],
)


class Accrual(NamedTuple):
    """One well × product × month to accrue: compact (a month at volume has 31,000 of them);
    its texts are made when asked for."""

    well_id: str
    well_name: str
    product: str
    month: str
    volume: Decimal
    benchmark: Decimal
    differential: Decimal
    nri: Decimal
    revenue: Decimal
    severance: Decimal
    account: str

    @property
    def receivable(self) -> Decimal:
        return self.revenue - self.severance

    @property
    def formula(self) -> str:
        return f"{self.volume} × ({self.benchmark} − {self.differential}) × {dec8(self.nri)}"

    def as_dict(self) -> dict[str, Any]:
        """As a decision's facts keep it."""
        return {
            "well_id": self.well_id,
            "well_name": self.well_name,
            "product": self.product,
            "month": self.month,
            "volume": str(self.volume),
            "price": str(self.benchmark - self.differential),
            "nri": dec8(self.nri),
            "revenue": self.revenue,
            "severance": self.severance,
            "receivable": self.receivable,
            "account": self.account,
            "formula": self.formula,
        }


def revenue_accrual(close: Close) -> tuple[list[Accrual], list[Finding]]:
    """Accruals per well × product × month with volumes but no check, and the findings to decide
    (new, shut-in and immaterial wells: their accruals are booked by their decision's kind)."""
    data, master = close.data, close.master
    window = {add_months(close.period, -k) for k in range(1, ACCRUAL_WINDOW + 1)}
    checked = {(r.well_id, r.product, r.sale_month) for r, _ in close.known_revenue()}
    checked |= data.history.checked
    ever_paid = data.history.paid_wells | {r.well_id for r, _ in close.known_revenue()}
    prices = {(p.month, p.product): p for p in data.prices}
    by_well_month: dict[tuple[str, str], list[Accrual]] = defaultdict(list)
    no_rate: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)  # product → why
    for p in data.production:
        if p.month not in window or (p.well_id, p.product, p.month) in checked:
            continue
        row = master.in_force(p.well_id, p.month)
        price = prices.get((p.month, p.product))
        if row is None or price is None:
            continue
        net_price = price.benchmark_price - price.differential
        value = cents(p.volume * net_price * row.nri)
        due = close.severance(row, p.product, p.month, p.volume * net_price, p.volume)
        if isinstance(due, NoRate):
            no_rate[(p.well_id, p.month)][p.product] = due.reason
            severance = ZERO
        else:
            severance = cents(due.amount * row.nri)
        by_well_month[(p.well_id, p.month)].append(
            Accrual(
                p.well_id, row.well_name, p.product, p.month, p.volume, price.benchmark_price,
                price.differential, row.nri, value, severance, REVENUE_ACCOUNTS[p.product],
            )
        )  # fmt: skip
    accruals: list[Accrual] = []
    findings: list[Finding] = []
    for (well_id, month), items in sorted(by_well_month.items()):
        total = sum((i.revenue for i in items), ZERO)
        name = master.name(well_id)
        kind = None
        if (well_id, month) in no_rate:
            findings.append(_no_rate(close, well_id, month, items, no_rate[(well_id, month)]))
            continue
        if well_id not in ever_paid:
            kind, what, rec, why = (
                "new_well",
                "has production but no check yet (a new well)",
                "accrue",
                "The operator's volumes are the only basis until the first check; accrue them so revenue lands in the month it was produced.",
            )
        elif total == ZERO:
            kind, what, rec, why = (
                "shut_in",
                "reported no volume (shut in?)",
                "skip",
                "No volume, no revenue: accruing last month's would book sales that did not happen.",
            )
        elif total < MATERIALITY:
            kind, what, rec, why = (
                "below_materiality",
                f"accrues {money(total)}, below the {money(MATERIALITY)} threshold",
                "skip",
                "Below materiality: the check will book it when it comes.",
            )
        if kind is None:
            accruals.extend(items)
            continue
        finding = Finding(
            kind="revenue_accrual",
            key=f"{well_id}:{month}",
            step=REVENUE.name,
            subject=f"{name} {month}",
            summary=f"{name} {month} {what}",
            question=(
                f"{name} ({well_id}) {month} {what}. Operator volumes: "
                + "; ".join(f"{i.product} {i.formula} = {money(i.revenue)}" for i in items)
                + f". Accrue {money(total)} on operator volumes, on the last actual check, or skip?"
            ),
            recommended=rec,
            reasoning=why,
            facts={
                "items": [{k: str(v) for k, v in i.as_dict().items()} for i in items],
                "last_actual": [
                    {k: str(v) for k, v in i.items()} for i in _last_actual(close, well_id, month)
                ],
                "total": str(total),
            },
            options=["accrue", "skip"] if kind == "new_well" else ["accrue", "last_actual", "skip"],
            well_id=well_id,
            amount=total,
        )
        findings.append(finding)  # what its decision accrues is booked by its kind
    return accruals, findings


def _no_rate(
    close: Close, well_id: str, month: str, items: list[Accrual], why: dict[str, str]
) -> Finding:
    """Production whose state × product the rates table cannot rate: its accrual is asked
    (at the rate the last check withheld, with no severance, or skipped), never booked with a
    silent zero."""
    name = close.master.name(well_id)
    total = sum((i.revenue for i in items), ZERO)
    last: dict[str, Decimal] = {}  # product → the rate its last check withheld (8/8ths)
    for r in sorted(
        close.data.history.lines("revenue_history.csv", well_id), key=lambda r: r.sale_month
    ):
        if r.product in why and r.gross_value:
            last[r.product] = r.gross_taxes / r.gross_value
    at_last = [
        i._replace(
            severance=cents(i.volume * (i.benchmark - i.differential) * last[i.product] * i.nri)
        )
        if i.product in last
        else i
        for i in items
    ]
    reasons = "; ".join(f"{p}: {w}" for p, w in sorted(why.items()))
    shown = "; ".join(
        f"{i.product} {i.formula} = {money(i.revenue)}, severance "
        + (f"at the last check's {last[i.product] * 100:.2f} % {money(a.severance)}" if i.product in last else "unknown")
        if i.product in why
        else f"{i.product} {i.formula} = {money(i.revenue)}, severance {money(i.severance)}"
        for i, a in zip(items, at_last, strict=True)
    )  # fmt: skip
    options = (["last_rate"] if set(last) == set(why) else []) + ["no_severance", "skip"]
    return Finding(
        kind="accrual_no_rate",
        key=f"{well_id}:{month}",
        step=REVENUE.name,
        subject=f"{name} {month}",
        summary=f"{name} {month}: no severance rate to accrue with ({', '.join(sorted(why))})",
        question=(
            f"{name} ({well_id}) {month}: {shown}. The severance rates table cannot rate it "
            f"({reasons}). Accrue {money(total)} with severance at the rate the last check "
            "withheld, with no severance until the state's row is added, or skip?"
        ),
        recommended=options[0],
        reasoning=(
            "The last check shows what the purchaser withholds for this well: accruing at that "
            "rate keeps the receivable near what will be paid until the state's row is added."
            if options[0] == "last_rate"
            else "No check shows what is withheld for this well yet: accrue the revenue, and add "
            "the state's row so the severance is accrued by rule (an open item)."
        ),
        facts={
            "items": [{k: str(v) for k, v in i.as_dict().items()} for i in items],
            "at_last_rate": [{k: str(v) for k, v in i.as_dict().items()} for i in at_last],
            "no_rate": why,
            "total": str(total),
        },
        options=options,
        well_id=well_id,
        amount=total,
    )


@REVENUE.check
def expected_checks(close: Close) -> Iterator[Finding]:
    """A well × product × month with production and a DOI interest expects a check within the
    accrual window: last month's accruals that no check paid and nothing accrues again this month
    are exceptions (months missing between paid months are reported: `history_gaps`)."""
    data, master = close.data, close.master
    window = {add_months(close.period, -k) for k in range(1, ACCRUAL_WINDOW + 1)}
    checked = {(r.well_id, r.product, r.sale_month) for r, _ in close.known_revenue()}
    checked |= data.history.checked  # the window's months (and the one before it) with a check
    produced = {(p.well_id, p.product, p.month) for p in data.production if p.month in window}
    accrued = {(a["well_id"], a["product"], a["month"]): a for a in close.prior_accruals}
    settled = checked | produced  # once, not per accrual (at volume the sets are large)
    for (well_id, product, month), a in sorted(accrued.items()):
        if (well_id, product, month) in settled:
            continue
        row = master.in_force(well_id, month)
        if row is None:
            continue
        yield _missing_check(close, well_id, product, month, a)


def _missing_check(
    close: Close, well_id: str, product: str, month: str, a: dict[str, Any]
) -> Finding:
    name = close.master.name(well_id)
    past = months_between(month, close.period) > ACCRUAL_WINDOW
    revenue, severance = Decimal(a["revenue"]), Decimal(a["severance"])
    item = {
        "well_id": well_id,
        "well_name": name,
        "product": product,
        "month": month,
        "revenue": str(revenue),
        "severance": str(severance),
        "receivable": str(revenue - severance),
        "account": REVENUE_ACCOUNTS[product],
        "formula": f"accrued again as last month ({a['source']})",
    }
    last = [i for i in _last_actual(close, well_id, month) if i["product"] == product]
    when = (
        f"past the {ACCRUAL_WINDOW}-month accrual window"
        if past
        else f"still within the {ACCRUAL_WINDOW}-month window"
    )
    return Finding(
        kind="missing_check",
        key=f"{well_id}:{product}:{month}",
        step=REVENUE.name,
        subject=f"{name} {product} {month}",
        summary=f"no check for {name} {product} {month}: accrued {money(revenue)} last month, reversed this month, {when}",
        question=(
            f"{name} ({well_id}) {product} production month {month} was accrued last month ({money(revenue)} revenue, "
            f"{money(severance)} severance, {a['source']}) and no check has paid it; this month's batch reverses that "
            f"accrual and nothing accrues it again ({when}). Accrue it again on operator volumes, on the last actual "
            "check, write it off (logged), or book nothing and ask the payor?"
        ),
        recommended="accrue",
        reasoning=(
            "The production happened and the DOI gives us an interest in it: until the payor explains, the revenue "
            "is still earned. Accrue it again and ask the payor for the check."
        ),
        facts={
            "well_id": well_id,
            "items": [item],
            "last_actual": [{k: str(v) for k, v in i.items()} for i in last],
            "total": str(revenue),
        },
        options=["accrue", *(["last_actual"] if last else []), "write_off", "request"],
        well_id=well_id,
        amount=revenue,
    )


def history_gaps(close: Close) -> list[str]:
    """Months missing from the checks between months that have checks, while the accrual window
    still covers them (reported, and carried as open items: ask the payor). Found once per
    resolved lines and prior accruals: several tool calls ask."""
    found: list[str] | None = close.derived.get("history_gaps")
    if found is None:
        found = close.derived["history_gaps"] = _history_gaps(close)
    return found


def _history_gaps(close: Close) -> list[str]:
    data, master = close.data, close.master
    window = {add_months(close.period, -k) for k in range(1, ACCRUAL_WINDOW + 1)}
    checked = {(r.well_id, r.product, r.sale_month) for r, _ in close.known_revenue()}
    checked |= data.history.checked  # the window's months (and the one before it) with a check
    produced = {(p.well_id, p.product, p.month) for p in data.production}
    accrued = {(a["well_id"], a["product"], a["month"]) for a in close.prior_accruals}
    expected = produced | accrued  # once, not per month looked at
    months: dict[tuple[str, str], set[str]] = defaultdict(set)
    for well_id, product, month in checked:
        months[(well_id, product)].add(month)
    out = []
    for (well_id, product), seen in sorted(months.items()):
        month, last = add_months(min(seen), 1), max(seen)
        while month < last:
            key = (well_id, product, month)
            if (
                month not in seen
                and month in window
                and key not in expected
                and master.in_force(well_id, month) is not None
            ):
                before = max(m for m in seen if m < month)
                after = min(m for m in seen if m > month)
                out.append(
                    f"no check for {master.name(well_id)} {product} {month} (checks paid {before} and {after}; "
                    "no operator volumes to accrue): ask the payor"
                )
            month = add_months(month, 1)
    return out


def _last_actual(close: Close, well_id: str, month: str) -> list[dict[str, Any]]:
    rows = close.data.history.lines("revenue_history.csv", well_id)
    if not rows:
        return []
    last = max(r.sale_month for r in rows)
    out = []
    for r in rows:
        if r.sale_month == last:
            parts = stub_parts(r, r.owner_decimal, net=r.owner_net_value)
            out.append(
                {
                    "well_id": well_id,
                    "well_name": close.master.name(well_id),
                    "product": r.product,
                    "month": month,
                    "revenue": parts["revenue"],
                    "severance": parts["taxes"],
                    "receivable": parts["revenue"] - parts["taxes"],
                    "account": REVENUE_ACCOUNTS[r.product],
                    "formula": f"last actual {r.sale_month} {r.check_no}",
                }
            )
    return out


@REVENUE.tool
def accrue_revenue(tools: StepTools, ctx: ToolContext, period: str) -> dict[str, Any]:
    """Revenue accrual: accrue revenue per well × product × production month with volumes but no check (volume × (benchmark − differential) × NRI, less severance); new wells, shut-in wells and accruals under $2,500 are exceptions.

    Args:
      period: the accounting period being closed, YYYY-MM
    """
    close, ledger = tools._close(ctx, period)
    items, findings = revenue_accrual(close)
    total = sum((i.revenue for i in items), ZERO)
    shown = [f"{i.well_name} {i.product} {i.month}: {money(i.revenue)}" for i in items[:MAX_LIST]]
    del items  # the journal builds them again: not held while the other checks run
    tools._record(ctx, ledger, findings + REVENUE.findings(close))
    return tools._step_result(
        ctx,
        ledger,
        REVENUE.name,
        revenue_accrual_total=total,
        history_gaps=history_gaps(close)[:MAX_LIST],
        accruals=shown,
    )

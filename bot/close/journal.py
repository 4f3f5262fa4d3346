"""The journal step's batch: one balanced batch — last month's reversals, this month's
documents as received, the decisions' adjusting entries, and this month's accruals.

The batch itself (Entry, Batch, its lines) is bot/close/batch.py."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any, cast

from bot.close.batch import (
    ACCOUNTS,
    LINE_ROW,
    Batch,
    Entry,
    JournalError,
    LineRow,
    totals_by_account,
)
from bot.close.checks import (
    COST_ACCOUNTS,
    REVENUE_ACCOUNTS,
    Close,
    cost_account,
    revenue_account,
    stub_parts,
)
from bot.close.data import CATEGORIES, PRODUCTS, ZERO, JibLine, RevenueLine, period_label
from bot.close.kinds import BOOKED_ON_LINE, KINDS, held_by_others, line_key
from bot.close.records import ExceptionRow, JournalLine
from bot.close.steps.jibs import loe_accrual
from bot.close.steps.revenue import revenue_accrual


def build(
    close: Close,
    exceptions: list[ExceptionRow],
    prior_accruals: Iterable[JournalLine] | None,
    *,
    keep_detail: bool = False,
    sink: Callable[[Iterable[dict[str, Any]]], None] | None = None,
    detail_sink: Callable[[list[dict[str, Any]]], None] | None = None,
    row_sink: Callable[[Iterable[LineRow]], None] | None = None,
) -> tuple[Batch, dict[str, Any]]:
    """The batch and what went into it; `prior_accruals` are last month's stored accrual lines
    (closebot closed it), or None to reverse accruals.csv.

    A JIB's or a check's lines are summarized per well × account (and side): one entry line
    with the count of its source lines in the memo. `keep_detail` keeps the source lines
    behind each entry line (`Batch.detail_rows`), for the detail CSV."""
    batch = Batch(keep_detail=keep_detail, sink=sink, detail_sink=detail_sink, row_sink=row_sink)
    info: dict[str, Any] = {}
    info["reversal_source"] = _reversals(batch, close, prior_accruals)
    _jibs(batch, close)
    _checks(batch, close)
    held = held_by_others(exceptions)
    accruals: list[tuple[ExceptionRow, list[dict[str, Any]]]] = []
    decided = [e for e in exceptions if e["status"] == "resolved" and e["resolution"]]
    # in the order decided; a reclass moves what the other decisions on its line left
    decided.sort(
        key=lambda e: (
            KINDS[e["kind"]].moves_lines(cast(str, e["resolution"]), e["details"]["facts"]),
            e.get("resolved_at") or "",
        )
    )
    on_line: dict[str, Decimal] = {}  # what the decisions so far booked, per line and account
    for exc in decided:
        kind, facts = KINDS[exc["kind"]], exc["details"]["facts"]
        extra = {**(exc["extra"] or {}), BOOKED_ON_LINE: on_line}
        lines = kind.book(
            cast(str, exc["resolution"]), facts, extra, held=held.get(exc["id"], frozenset())
        )
        for line in lines:
            if line["ref"]:
                key = line_key(line["ref"], line["account"])
                on_line[key] = on_line.get(key, ZERO) + line["debit"] - line["credit"]
        if not lines:
            continue
        if kind.option(cast(str, exc["resolution"]), facts).accrual:
            accruals.append((exc, lines))  # booked with this month's accruals, reversed next month
            continue
        label = kind.label(cast(str, exc["resolution"]), facts)
        e = batch.entry(
            f"Decision: {exc['details']['subject']} — {label} (by {exc['decided_by'] or '-'})",
            "decision",
        )
        for line in lines:
            e.add(
                line["account"],
                debit=line["debit"],
                credit=line["credit"],
                well_id=line["well_id"],
                memo=line["memo"],
                ref=line["ref"],
            )
    info["loe_accrual"] = _loe_accrual(batch, close)  # counts: the items are not kept
    info["revenue_accrual"] = _revenue_accrual(batch, close)
    for exc, lines in accruals:
        label = kind_label(exc)
        what = KINDS[exc["kind"]].accrual_entry
        e = batch.entry(
            f"{what}: {exc['details']['subject']} — {label} (by {exc['decided_by'] or '-'})",
            "accrual",
        )
        for line in lines:
            e.add(
                line["account"],
                debit=line["debit"],
                credit=line["credit"],
                well_id=line["well_id"],
                memo=line["memo"],
                ref=line["ref"],
            )
    batch.close_entry()
    return batch, info


def kind_label(exc: ExceptionRow) -> str:
    return KINDS[exc["kind"]].label(cast(str, exc["resolution"]), exc["details"]["facts"])


def _reversals(batch: Batch, close: Close, prior: Iterable[JournalLine] | None) -> str:
    label = period_label(close.data.service_month)
    if prior is not None:
        e = batch.entry(f"Reversal of {label} accruals (from closebot's posted batch)", "reversal")
        for line in prior:
            e.add(
                line["account"],
                debit=line["credit"],
                credit=line["debit"],
                well_id=line["well_id"] or "",
                memo=f"reverse: {line['memo']}",
                ref=f"batch {line['batch_id']}",
            )
        return "store"
    loe = [a for a in close.data.accruals if a.kind == "loe"]
    revenue = [a for a in close.data.accruals if a.kind == "revenue"]
    # the liability side is one line per well (its categories' or products' lines summed,
    # counted in the memo, each in the detail); the cost and revenue side one per account
    if loe:
        e = batch.entry(f"Reversal of {label} LOE accrual (accruals.csv)", "reversal")
        for a in loe:
            account = COST_ACCOUNTS[CATEGORIES[a.product_or_category.casefold()]]
            e.add(
                "2115",
                debit=a.amount,
                well_id=a.well_id,
                memo=f"reverse accrued {a.product_or_category} {a.month}",
                ref=f"accruals.csv:{a.line}",
                group=f"reverse accrued LOE {a.month}",
            )
            e.add(
                account,
                credit=a.amount,
                well_id=a.well_id,
                memo=f"reverse accrued {a.product_or_category} {a.month}",
                ref=f"accruals.csv:{a.line}",
            )
    if revenue:
        e = batch.entry(f"Reversal of {label} revenue accrual (accruals.csv)", "reversal")
        for a in revenue:
            account = REVENUE_ACCOUNTS[PRODUCTS[a.product_or_category.casefold()]]
            e.add(
                account,
                debit=a.amount,
                well_id=a.well_id,
                memo=f"reverse accrued {a.product_or_category} {a.month}",
                ref=f"accruals.csv:{a.line}",
            )
            e.add(
                "1210",
                credit=a.amount,
                well_id=a.well_id,
                memo=f"reverse accrued {a.product_or_category} {a.month}",
                ref=f"accruals.csv:{a.line}",
                group=f"reverse accrued revenue {a.month}",
            )
    return "accruals.csv"


def _jibs(batch: Batch, close: Close) -> None:
    by_invoice: dict[str, list[tuple[JibLine, str | None]]] = defaultdict(list)
    for j, well in close.jib():
        by_invoice[j.invoice_no].append((j, well))
    for invoice, lines in by_invoice.items():
        first = lines[0][0]
        e = batch.entry(
            f"JIB {invoice} · {first.operator} · service {first.service_month}", "document"
        )
        payable = ZERO
        for j, well in lines:
            memo = f"{close.master.name(well) if well else j.property_no}: {j.description}"
            account = cost_account(j) if well else "1395"
            if not well:
                memo += " (unknown property, held)"
            name = close.master.name(well) if well else "unknown properties"
            e.add(
                account,
                debit=j.owner_net_amount,
                well_id=well or "",
                memo=memo,
                ref=j.ref,
                group=f"{name}: {ACCOUNTS[account]}",
            )
            payable += j.owner_net_amount
        e.add(
            "2110",
            credit=payable,
            memo=f"{first.operator} invoice {invoice}",
            ref=f"jib.csv:{invoice}",
        )


def _checks(batch: Batch, close: Close) -> None:
    by_check: dict[str, list[tuple[RevenueLine, str | None]]] = defaultdict(list)
    for r, well in close.revenue():
        by_check[r.check_no].append((r, well))
    for check, lines in by_check.items():
        first = lines[0][0]
        months = ", ".join(sorted({r.sale_month for r, _ in lines}))
        e = batch.entry(f"Revenue check {check} · {first.payor} · sales {months}", "document")
        cash = ZERO
        for r, well in lines:
            name = close.master.name(well) if well else r.property_no
            if not well:
                e.add(
                    "2310",
                    credit=r.owner_net_value,
                    memo=f"{name}: {r.product} sales {r.sale_month} (unknown property, held)",
                    ref=r.ref,
                    group="unknown properties: held",
                )
            else:
                parts = stub_parts(r, r.owner_decimal, net=r.owner_net_value)
                memo = f"{name}: {r.product} sales {r.sale_month} {r.gross_volume} @ {r.price} × {r.owner_decimal:.8f}"
                account = revenue_account(r.product, r.sale_month, close.period)
                if account == "4090":
                    memo += " (older than the accrual window: prior-period adjustment)"
                e.add(
                    account,
                    credit=parts["revenue"],
                    well_id=well,
                    memo=memo,
                    ref=r.ref,
                    group=f"{name}: {r.product}",
                )
                e.add(
                    "6110",
                    debit=parts["taxes"],
                    well_id=well,
                    memo=f"{name}: severance on {r.product}",
                    ref=r.ref,
                    group=f"{name}: severance",
                )
                e.add(
                    "6130",
                    debit=parts["deductions"],
                    well_id=well,
                    memo=f"{name}: deductions on {r.product}",
                    ref=r.ref,
                    group=f"{name}: deductions",
                )
            cash += r.owner_net_value
        e.add(
            "1050", debit=cash, memo=f"check {check} from {first.payor}", ref=f"revenue.csv:{check}"
        )


def _loe_accrual(batch: Batch, close: Close) -> int:
    items: list[Any] = loe_accrual(close)
    if items:
        e = batch.entry(
            f"LOE accrual · service {close.period} (trailing 3-month average × WI)", "accrual"
        )
        for k, i in enumerate(items):
            items[k] = None  # each item goes once it is booked: never the items and the lines
            memo = f"accrue {i['well_name']} {i['category']} {i['month']}: avg of {', '.join(i['nets'])}"
            e.add(
                i["account"],
                debit=i["amount"],
                well_id=i["well_id"],
                memo=memo,
                ref=f"jib_history {i['category']}",
            )
            e.add(  # the liability one line per well, its categories summed
                "2115",
                credit=i["amount"],
                well_id=i["well_id"],
                memo=memo,
                ref=f"jib_history {i['category']}",
                group=f"{i['well_name']}: accrued LOE",
            )
    return len(items)


def _revenue_accrual(batch: Batch, close: Close) -> int:
    items = revenue_accrual(close)[0]
    booked = len(items)
    if items:
        months = sorted({i.month for i in items})
        e = batch.entry(
            f"Revenue accrual · production {', '.join(months)} (no check yet)", "accrual"
        )
        items.reverse()
        while items:
            i = items.pop()  # each item goes once it is booked: never the items and the lines
            memo = f"accrue {i.well_name} {i.product} {i.month}: {i.formula}"
            ref = f"production.csv:{i.well_id}:{i.product}:{i.month}"
            # the receivable one line per well (its products' and months' lines summed, each
            # in the detail); severance and revenue per product, as the next close reads them
            e.add(
                "1210",
                debit=i.receivable,
                well_id=i.well_id,
                memo=memo,
                ref=ref,
                group=f"{i.well_name}: accrued receivable",
            )
            e.add("6110", debit=i.severance, well_id=i.well_id, memo=f"{memo} severance", ref=ref)
            e.add(i.account, credit=i.revenue, well_id=i.well_id, memo=memo, ref=ref)
    return booked


__all__ = [
    "ACCOUNTS",
    "LINE_ROW",
    "Batch",
    "Entry",
    "JournalError",
    "LineRow",
    "build",
    "kind_label",
    "totals_by_account",
]

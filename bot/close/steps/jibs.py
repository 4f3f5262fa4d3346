"""The JIB reconciliation step (line math, duplicates, stale charges, AFEs, overhead) and the LOE accrual."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from bot.close import kinds
from bot.close.checks import (
    COST_ACCOUNTS,
    Close,
    Finding,
    cost_account,
)
from bot.close.data import (
    ZERO,
    DoiRow,
    JibLine,
    cents,
    months_between,
)
from bot.close.doi_master import (
    STALE_MONTHS,
    dec8,
    money,
    signed_money,
    trailing_months,
)
from bot.close.kinds.jib_lines import JibLineKind, loe_rules
from bot.close.registry import MAX_LIST, Step, StepTools
from bot.core.tools import ToolContext

JIBS = Step(
    "jibs",
    "JIB reconciliation & LOE accrual",
    "line math, duplicates, stale charges, AFE overruns, overhead vs the JOA; the LOE accrual.",
    "Reconciling the JIBs (line math, duplicates, AFEs, overhead) and computing the LOE accrual.",
    after="interests",
    loading=lambda f: [
        f"Reconciling {f.jib}…",
        "Looking for duplicates, old charges and AFE overruns…",
        "Accruing LOE…",
    ],
)


@JIBS.check
def jib_recon(close: Close) -> Iterator[Finding]:
    data, master = close.data, close.master
    known = close.known_jib()
    for j, row in known:
        computed = cents(j.gross_amount * j.owner_decimal)
        if computed != j.owner_net_amount:
            diff = j.owner_net_amount - computed
            yield _line_finding(
                "line_math",
                j,
                row,
                diff,
                f"{money(j.gross_amount)} × {dec8(j.owner_decimal)} = {money(computed)} but the line bills {money(j.owner_net_amount)} ({signed_money(diff)})",
            )
    seen: dict[tuple[str, str, str, str, Decimal], JibLine] = {}
    history = data.history.jib_keys  # only the keys this month's lines also bill
    for j, row in known:
        key = (j.operator, j.well_id, j.service_month, j.cost_category, j.gross_amount)
        first = seen.get(key)
        if first is not None:
            yield _line_finding(
                "duplicate",
                j,
                row,
                j.owner_net_amount,
                f"the same {j.cost_category} {money(j.gross_amount)} for service {j.service_month} as jib.csv line {first.line}",
            )
        elif key in history:
            h = history[key]
            yield _line_finding(
                "duplicate",
                j,
                row,
                j.owner_net_amount,
                f"already billed on {h.invoice_no} (jib_history.csv line {h.line}): {j.cost_category} {money(j.gross_amount)} for service {j.service_month}",
            )
        seen.setdefault(key, j)
    for j, row in known:
        age = months_between(j.service_month, close.period)
        if age > STALE_MONTHS:
            yield _line_finding(
                "stale_charge",
                j,
                row,
                j.owner_net_amount,
                f"service month {j.service_month} is {age} months before {close.period} (limit {STALE_MONTHS})",
            )
    by_afe: dict[str, list[tuple[JibLine, DoiRow]]] = defaultdict(list)
    for j, row in known:
        if j.afe_no:
            by_afe[j.afe_no].append((j, row))
    afes = {a.afe_no: a for a in data.afe}
    for afe_no, lines in sorted(by_afe.items()):
        afe = afes.get(afe_no)
        if afe is None:
            continue
        billed = afe.billed_to_date_gross + sum((j.gross_amount for j, _ in lines), ZERO)
        over = billed - afe.approved_gross
        if afe.approved_gross and over / afe.approved_gross > Decimal("0.10"):
            wi = lines[0][1].wi
            share = cents(over * wi)
            yield Finding(
                kind="afe_overrun",
                key=afe_no,
                step=JIBS.name,
                subject=f"{afe_no} ({master.name(afe.well_id)})",
                summary=f"billed {money(billed)} gross vs approved {money(afe.approved_gross)}: over {money(over)} ({over / afe.approved_gross * 100:+.2f} %), our share {money(share)}",
                question=(
                    f"{afe_no} {afe.description} on {master.name(afe.well_id)}: approved {money(afe.approved_gross)} gross; "
                    f"billed to date {money(afe.billed_to_date_gross)} + this month's {lines[0][0].invoice_no} "
                    f"{money(billed - afe.billed_to_date_gross)} = {money(billed)}, {money(over)} over "
                    f"({over / afe.approved_gross * 100:+.2f} %, more than 10 %). Our share at WI {dec8(wi)}: {money(share)}. "
                    "The JOA calls for a supplemental AFE above 10 %."
                ),
                recommended="protest",
                reasoning=(
                    f"The overrun is past the JOA's 10 % without a supplemental AFE: pay so the well is not in default, "
                    f"but hold our {money(share)} share as a receivable until the operator supports it."
                ),
                facts={
                    "operator": lines[0][0].operator,
                    "afe_no": afe_no,
                    "approved": str(afe.approved_gross),
                    "billed": str(billed),
                    "over": str(over),
                    "share": str(share),
                    "lines": _alloc_lines(lines, share),
                },
                well_id=afe.well_id,
                amount=share,
            )
    by_invoice: dict[str, list[tuple[JibLine, DoiRow, Decimal]]] = defaultdict(list)
    for j, row in known:
        if j.cost_category != "Overhead":
            continue
        rate = master.overhead_rate(j.well_id, j.service_month, drilling=bool(j.afe_no))
        if rate is not None and rate != j.gross_amount:
            by_invoice[j.invoice_no].append((j, row, rate))
    for invoice, items in sorted(by_invoice.items()):
        diff = sum((j.owner_net_amount - cents(rate * row.wi) for j, row, rate in items), ZERO)
        detail = "; ".join(
            f"{row.well_name} {money(j.gross_amount)} × {dec8(j.owner_decimal)} = {money(j.owner_net_amount)} vs JOA {money(rate)} × {dec8(row.wi)} = {money(cents(rate * row.wi))}"
            for j, row, rate in items
        )
        yield Finding(
            kind="overhead_rate",
            key=invoice,
            step=JIBS.name,
            subject=f"{invoice} overhead",
            summary=f"overhead billed above the JOA rate: {signed_money(diff)}",
            question=f"{invoice} ({items[0][0].operator}, service {items[0][0].service_month}) bills producing overhead above the JOA rate: {detail}. Difference {signed_money(diff)}.",
            recommended="short_pay" if diff > 0 else "pay_as_billed",
            reasoning=(
                f"The JOA fixes the overhead rate; the operator billed {money(items[0][0].gross_amount)}/month against {money(items[0][2])}. Pay the JOA rate and dispute {money(diff)}."
                if diff > 0
                else "Billed below the JOA rate: pay as billed."
            ),
            facts={
                "operator": items[0][0].operator,
                "invoice": invoice,
                "difference": str(diff),
                "lines": [
                    {
                        "ref": j.ref,
                        "account": cost_account(j),
                        "amount": str(j.owner_net_amount - cents(rate * row.wi)),
                        "well_id": j.well_id,
                        **_whole(j),
                    }
                    for j, row, rate in items
                ],
            },
            options=["pay_as_billed", "short_pay", "protest", "reclass"]
            if diff > 0
            else ["pay_as_billed", "book_computed", "reclass"],
            amount=abs(diff),
        )


def _whole(j: JibLine) -> dict[str, str]:
    """What a reclass moves: the line's whole owner net as billed, and its category."""
    return {"net": str(j.owner_net_amount), "category": j.cost_category}


def _alloc_lines(lines: list[tuple[JibLine, DoiRow]], share: Decimal) -> list[dict[str, str]]:
    """Spread `share` over the lines by gross, the rounding left on the largest line."""
    total = sum((j.gross_amount for j, _ in lines), ZERO)
    out = []
    for j, _ in lines:
        out.append(
            {
                "ref": j.ref,
                "account": cost_account(j),
                "amount": str(cents(share * j.gross_amount / total)),
                "well_id": j.well_id,
                **_whole(j),
            }
        )
    rest = share - sum((Decimal(x["amount"]) for x in out), ZERO)
    biggest = max(range(len(out)), key=lambda i: lines[i][0].gross_amount)
    out[biggest]["amount"] = str(Decimal(out[biggest]["amount"]) + rest)
    return out


def _line_finding(kind: str, j: JibLine, row: DoiRow, amount: Decimal, what: str) -> Finding:
    found = kinds.KINDS[kind]
    title = found.title if isinstance(found, JibLineKind) else kind
    over = amount > 0
    return Finding(
        kind=kind,
        key=str(j.line),
        step=JIBS.name,
        subject=f"{j.invoice_no} line {j.line}",
        summary=f"{title}: {what}",
        question=(
            f"jib.csv line {j.line}: {j.invoice_no} ({j.operator}, service {j.service_month}), {row.well_name} "
            f"{j.cost_category} '{j.description}': {what}. Amount at stake {money(amount)}."
        ),
        recommended="short_pay" if over else "pay_as_billed",
        reasoning=(
            f"Pay what the document supports and dispute {money(amount)} with the operator."
            if over
            else "The operator billed less than its own figures; pay as billed (it may rebill)."
        ),
        facts={
            "ref": j.ref,
            "operator": j.operator,
            "invoice": j.invoice_no,
            "amount": str(amount),
            "lines": [
                {
                    "ref": j.ref,
                    "account": cost_account(j),
                    "amount": str(amount),
                    "well_id": j.well_id,
                    **_whole(j),
                }
            ],
        },
        options=["pay_as_billed", "short_pay", "protest", "reclass"]
        if over
        else ["pay_as_billed", "book_computed", "reclass"],
        well_id=j.well_id,
        amount=abs(amount),
    )


def loe_accrual(close: Close) -> list[dict[str, Any]]:
    """Per well and category: the trailing 3-month average gross × the WI in force."""
    months = trailing_months(close.period)
    gross: dict[tuple[str, str], dict[str, Decimal]] = defaultdict(
        lambda: defaultdict(lambda: ZERO)
    )
    for key, by_month in close.data.history.loe_gross.items():
        for month, amount in by_month.items():
            if month in months:
                gross[key][month] += amount
    # what the JIB-line kinds' decisions do to a line's part: a reclass to capital, a duplicate
    # disputed, overhead short-paid to the JOA rate (each kind says, in bot/close/kinds/jib_lines.py)
    counts = loe_rules(kinds.KINDS.values(), close)
    for j, _ in close.known_jib():
        if j.cost_category not in ("LOE", "Overhead") or j.afe_no or j.service_month not in months:
            continue
        counted = counts(j, j.gross_amount)
        if counted is None:
            continue
        gross[(j.well_id, j.cost_category)][j.service_month] += counted
    out = []
    for (well_id, category), by_month in sorted(gross.items()):
        row = close.master.in_force(well_id, close.period)
        if row is None:
            continue
        billed = [
            m for m in months if by_month.get(m)
        ]  # a new well averages the months it was billed
        average = sum(by_month.values(), ZERO) / (len(billed) or 1)
        amount = cents(average * row.wi)
        if amount:
            out.append(
                {
                    "well_id": well_id,
                    "well_name": row.well_name,
                    "category": category,
                    "account": COST_ACCOUNTS[category],
                    "month": close.period,
                    "nets": [str(cents(by_month.get(m, ZERO) * row.wi)) for m in months],
                    "amount": amount,
                    "wi": dec8(row.wi),
                }
            )
    return out


@JIBS.tool
def reconcile_jibs(tools: StepTools, ctx: ToolContext, period: str) -> dict[str, Any]:
    """JIB reconciliation & LOE accrual: JIB line math, duplicates (within the file and against jib_history), charges over 24 months old, AFE overruns over 10 %, overhead vs the JOA rate; and the LOE accrual (trailing 3-month average × WI).

    Args:
      period: the accounting period being closed, YYYY-MM
    """
    close, ledger = tools._close(ctx, period)
    tools._record(ctx, ledger, JIBS.findings(close))
    accrual = loe_accrual(close)
    return tools._step_result(
        ctx,
        ledger,
        JIBS.name,
        loe_accrual_total=sum((a["amount"] for a in accrual), ZERO),
        loe_accrual=[  # the first few, formatted (not every well's, then cut)
            f"{a['well_name']} {a['category']}: {money(a['amount'])}" for a in accrual[:MAX_LIST]
        ],
    )

"""The severance step: what the purchaser withheld against the state × product rate."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from bot.close.checks import Close, Finding
from bot.close.data import ZERO, cents
from bot.close.doi_master import SEVERANCE_TOLERANCE, money, signed_money
from bot.close.rates import NoRate
from bot.close.registry import Step, StepTools
from bot.core.tools import ToolContext

SEVERANCE = Step(
    "severance",
    "Severance check",
    "severance vs the state × product table.",
    "Checking severance against the state rates.",
    after="revenue",
    loading=lambda f: [f"Checking severance on {f.stubs}…"],
)


@SEVERANCE.check
def severance(close: Close) -> Iterator[Finding]:
    by_well: dict[str, list[dict[str, Any]]] = defaultdict(list)
    no_rate: dict[str, list[dict[str, Any]]] = defaultdict(list)
    operators: dict[str, str] = {}
    for r, row in close.known_revenue():
        if not r.gross_value:
            continue
        due = close.severance(row, r.product, r.sale_month, r.gross_value, r.gross_volume)
        if isinstance(due, NoRate):
            operators[row.well_id] = row.operator
            no_rate[row.well_id].append(
                {
                    "ref": r.ref,
                    "check": r.check_no,
                    "product": r.product,
                    "sale_month": r.sale_month,
                    "state": row.state,
                    "charged": str(r.gross_taxes),
                    "charged_rate": f"{r.gross_taxes / r.gross_value * 100:.2f} %",
                    "reason": due.reason,
                }
            )
            continue
        expected, basis = due.amount, due.basis
        if abs(r.gross_taxes - expected) / r.gross_value <= SEVERANCE_TOLERANCE:
            continue
        over = cents((r.gross_taxes - cents(expected)) * r.owner_decimal)
        operators[row.well_id] = row.operator
        by_well[row.well_id].append(
            {
                "ref": r.ref,
                "check": r.check_no,
                "product": r.product,
                "sale_month": r.sale_month,
                "charged": str(r.gross_taxes),
                "charged_rate": f"{r.gross_taxes / r.gross_value * 100:.2f} %",
                "expected": str(cents(expected)),
                "basis": basis,
                "owner_share": str(over),
            }
        )
    for well_id, items in sorted(by_well.items()):
        total = sum((Decimal(i["owner_share"]) for i in items), ZERO)
        name = close.master.name(well_id)
        detail = "; ".join(
            f"{i['product']} charged {money(Decimal(i['charged']))} ({i['charged_rate']}) vs {money(Decimal(i['expected']))} at {i['basis']} → our share {signed_money(Decimal(i['owner_share']))}"
            for i in items
        )
        yield Finding(
            kind="severance",
            key=well_id,
            step=SEVERANCE.name,
            subject=name,
            summary=f"severance off the state rate: owner {'overcharge' if total > 0 else 'undercharge'} {money(abs(total))}",
            question=f"{name}, check {items[0]['check']} (sales {items[0]['sale_month']}): {detail}. Total {signed_money(total)}.",
            recommended="refund" if total > 0 else "accept",
            reasoning=(
                f"The state rate for this well is lower than what the purchaser withheld; claim the {money(total)} refund (Dr 1220)."
                if total > 0
                else "Withheld less than the statutory rate; the liability is the purchaser's. Accept and tell the operator."
            ),
            facts={"items": items, "total": str(total), "operator": operators[well_id]},
            options=["accept", "correct", "refund"] if total > 0 else ["accept", "correct"],
            well_id=well_id,
            amount=abs(total),
        )
    yield from _no_rate(close, no_rate, operators)


def _no_rate(
    close: Close, by_well: dict[str, list[dict[str, Any]]], operators: dict[str, str]
) -> Iterator[Finding]:
    """A well whose state × product the rates table cannot rate is asked, never passed."""
    for well_id, items in sorted(by_well.items()):
        name = close.master.name(well_id)
        reasons = sorted({i["reason"] for i in items})
        withheld = "; ".join(
            f"{i['product']} {i['sale_month']} check {i['check']} withheld {money(Decimal(i['charged']))} ({i['charged_rate']})"
            for i in items
        )
        yield Finding(
            kind="severance_no_rate",
            key=well_id,
            step=SEVERANCE.name,
            subject=name,
            summary=f"severance not checked: {'; '.join(reasons)}",
            question=(
                f"{name} ({items[0]['state']}): {withheld}. Closebot cannot check it: "
                + "; ".join(reasons)
                + ". Book it as withheld and add the state's row, or accept it as withheld?"
            ),
            recommended="add_rate",
            reasoning=(
                "Without the state's rate nobody has checked what the purchaser withheld; the "
                "stub books as withheld either way. Add the row (statute or the state's page) so "
                "the next close checks it."
            ),
            facts={"items": items, "operator": operators[well_id], "well_id": well_id},
            well_id=well_id,
        )


@SEVERANCE.tool
def check_severance(tools: StepTools, ctx: ToolContext, period: str) -> dict[str, Any]:
    """Severance check: effective severance rate per stub line vs the state × product table (the severance rates table: state × product × dates × conditions; a state or product with no row is asked); off by more than 0.25 pp is an exception.

    Args:
      period: the accounting period being closed, YYYY-MM
    """
    close, ledger = tools._close(ctx, period)
    tools._record(ctx, ledger, SEVERANCE.findings(close))
    return tools._step_result(ctx, ledger, SEVERANCE.name)

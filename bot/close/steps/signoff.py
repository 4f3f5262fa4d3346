"""The sign-off step: the open items carried forward with an owner and a due date, or the
period lock blocked; and the open items an earlier sign-off carried into this month."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from bot.close.checks import Finding
from bot.close.data import ZERO, add_months
from bot.close.ledger import Ledger
from bot.close.records import OpenItemRow
from bot.close.registry import MAX_LIST, Step, StepTools
from bot.core.names import Names
from bot.core.tools import ToolContext

SIGNOFF = Step(
    "signoff",
    "Sign-off",
    "open items carried over from last month asked about, then open items carried forward "
    "with an owner and due date, or the period lock blocked.",
    "Listing open items for sign-off.",
    after="flux",
    loading=lambda f: ["Carrying open items forward…"],
)


def carried_finding(
    previous: str, c: OpenItemRow, step: str, names: Names | None = None
) -> Finding:
    """An open item the last sign-off carried: asked about when the next close opens (settled /
    still open / write off), before its own steps; its owner by name."""
    shown = names.cached(c["owner"]) if names and c.get("owner") else c.get("owner")
    owner = f", owner {shown}" if shown else ""
    due = f", due {c['due']}" if c.get("due") else ""
    return Finding(
        kind="carried_item",
        key=str(c["id"]),
        step=step,
        subject=c["text"][:70],
        summary=f"open since {previous}{owner}{due}",
        question=f"Open item carried from {previous}{owner}{due}: {c['text']}. Is it settled, still open (carried forward again), or written off?",
        recommended="still_open",
        reasoning="Nothing in this month's documents shows it settled; keep it open until someone confirms.",
        facts={
            "item_id": c["id"],
            "text": c["text"],
            "amount": c.get("amount") or "",
            "from": previous,
            "owner": c.get("owner") or "",
            "due": c.get("due") or "",
            "held_balance": c.get("held_balance") or [],
        },
        amount=Decimal(cast(str, c["amount"])) if c.get("amount") else ZERO,
    )


@SIGNOFF.tool
def sign_off(tools: StepTools, ctx: ToolContext, period: str) -> dict[str, Any]:
    """Sign-off: every step's status and every open item (undecided exceptions, disputes, suspense, requests, unexplained flux, an unposted batch, steps not run); open items are carried forward with an owner and due date, or the period lock is blocked.

    Args:
      period: the accounting period being closed, YYYY-MM
    """
    tools._data(ctx, period)
    ledger = Ledger(ctx.store)
    previous = add_months(period, -1)
    # a run an earlier release started asks them here (this release asks them at intake)
    tools._record(
        ctx,
        ledger,
        [
            carried_finding(previous, c, SIGNOFF.name, Names(ctx.store))
            for c in ledger.carried_into(previous)
        ],
    )
    from bot.close.kinds import KINDS  # here: the sign-off kinds import this step's module

    waiting = [
        e
        for e in ledger.exceptions(ctx.run_id)
        if KINDS[e["kind"]].waits_signoff and e["status"] != "resolved"
    ]
    if not waiting:
        tools._record(ctx, ledger, tools._signoff_finding(ctx, ledger, period))
    items = tools._open_items(ctx, ledger)
    return tools._step_result(
        ctx,
        ledger,
        SIGNOFF.name,
        open_items=[i["text"] for i in items][:MAX_LIST],
        open_item_count=len(items),
    )

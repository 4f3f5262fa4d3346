"""The sign-off kind (the sign-off step): carry the open items forward, each with the owner and due date
chosen on the form, and lock the period — or block the lock. Its question is made by the
sign-off step (`ToolBase._signoff_finding`); its owner and due-date questions by
`toolbase.assignment_questions`."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from bot.close.data import add_months
from bot.close.kinds.base import Deciding, Kind, Option
from bot.close.records import OpenItem
from bot.store import QuestionRecord

MAX_ASSIGNED = 12  # the assignments a decision's result lists


class SignoffKind(Kind):
    """Deciding it stores the open items with their owners and due dates."""

    def on_decided(self, d: Deciding) -> None:
        d.extra = {**d.extra, **_sign(d)}


def _sign(d: Deciding) -> dict[str, Any]:
    """The open items stored with the owner and due date chosen on the form (per item, or
    per group of items); the recommended ones where a row was left empty. Carried forward
    or with the lock blocked, the items are the owners' work and the next close asks about
    each one still open."""
    ctx, ledger = d.ctx, d.ledger
    run = ctx.store.runs.get(ctx.run_id)
    items = d.desk.open_items(ctx, ledger)
    facts = d.facts
    groups = facts.get("groups") or []
    chosen = _assignments(d.question)
    default_owner = facts.get("owner") or run.started_by
    default_due = facts.get("due") or f"{add_months(run.period, 1)}-15"
    stored: list[OpenItem] = []
    for item in items:
        n = next((k for k, g in enumerate(groups, start=1) if item["text"] in g["items"]), 0)
        group = groups[n - 1] if n else {}
        owner = chosen.get(("owner", n)) or group.get("owner") or item.get("owner")
        due = chosen.get(("due", n)) or group.get("due") or default_due
        stored.append({**item, "owner": owner or default_owner, "due": due})
    ledger.carry_forward(ctx.run_id, period=run.period, items=stored)
    for item in stored:  # carried again: this sign-off's row is the item from now on
        if item.get("carried_id"):
            ledger.set_open_item_status(item["carried_id"], "carried", by_run=ctx.run_id)
    ctx.store.audit.record(
        run_id=ctx.run_id,
        kind="period_lock",
        actor=None,
        detail={
            "decision": d.code,
            "open_items": len(items),
            "owners": dict(Counter(str(i["owner"]) for i in stored)),
        },
    )
    return {
        "assigned": [
            {"text": i["text"], "owner": i["owner"], "due": i["due"]} for i in stored[:MAX_ASSIGNED]
        ]
    }


def _assignments(q: QuestionRecord) -> dict[tuple[str, int], str]:
    """("owner" | "due", row number) → what the person picked on the sign-off form's owner and
    due-date questions (headers "Owner N" / "Due N"); rows left empty are absent."""
    out: dict[tuple[str, int], str] = {}
    for number, item in enumerate(q.questions, start=1):
        m = re.fullmatch(r"(Owner|Due) (\d+)", str(item.get("header") or ""))
        answer = (q.answer or {}).get(str(number)) or {}
        value = answer.get("user") or answer.get("date")
        if m and isinstance(value, str) and value:
            out[(m.group(1).lower(), int(m.group(2)))] = value
    return out


SIGNOFF = SignoffKind(
    "signoff",
    "Sign-off",
    {
        "carry_forward": Option(
            "carry_forward",
            "Carry open items forward",
            "Each open item moves to next month with an owner and a due date; the period locks.",
        ),
        "block_lock": Option(
            "block_lock",
            "Block the period lock",
            "The period stays open until the items are cleared.",
        ),
    },
    allow_other=False,
    sets_off=True,
    about_open_items=True,
    signs_off=True,
)

KINDS = (SIGNOFF,)

"""The carried open item kind: an item the last sign-off carried forward, asked about when the
next close opens (settled, still open, or written off: its held balance reversed). Found by
`bot/close/toolset.py` from the ledger's carried items; once every one is decided, a run that
asks them at sign-off asks the sign-off."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from bot.close.kinds.base import Deciding, Kind, Option
from bot.close.kinds.entries import Facts, Line, line
from bot.close.steps.signoff import SIGNOFF


def _write_off(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    """Writing an open item off: the balance its decision held goes back where it came from
    (the decision's entry reversed: a disputed receivable to cost, a claim out of 4090)."""
    since = facts.get("from") or "last month"
    return [
        line(
            h["account"],
            debit=Decimal(h["credit"]),
            credit=Decimal(h["debit"]),
            memo=f"write off open item from {since}: {h['memo']}",
            ref=h["ref"],
            well_id=h["well_id"],
        )
        for h in facts.get("held_balance") or []
    ]


class CarriedItemKind(Kind):
    """Settled or written off, the item is closed for good; the last one decided at sign-off
    asks the sign-off."""

    def on_decided(self, d: Deciding) -> None:
        status = self.closes_item(d.code)
        if status:
            d.ledger.set_open_item_status(d.facts["item_id"], status, by_run=d.ctx.run_id)

    def after_recorded(self, d: Deciding) -> None:
        if d.exc["details"]["step"] == SIGNOFF.name and not any(  # an earlier release's run
            e["kind"] == self.name and e["status"] != "resolved" and e["id"] != d.exc["id"]
            for e in d.ledger.exceptions(d.ctx.run_id)
        ):
            d.spawned += d.desk.signoff_findings(d.ctx, d.ledger)


CARRIED_ITEM = CarriedItemKind(
    "carried_item",
    "Open item",
    {
        "settled": Option(
            "settled", "Settled", "Closed: it is not carried again.", closes_item="settled"
        ),
        "still_open": Option(
            "still_open",
            "Still open",
            "Carried forward again with its owner and a new due date.",
        ),
        "write_off": Option(
            "write_off",
            "Write off (logged)",
            "Closed as written off and logged; the balance it held (if any) is reversed to "
            "where it came from.",
            books=_write_off,
            accounts="the reverse of the balance the item's decision left on a holding account (1390, 1395, 1215, 1220, 1210, 2110, 2310) back to where it came from, e.g. Dr cost / Cr 1390; nothing when it held none",
            closes_item="written_off",
        ),
    },
    sets_off=True,
    about_open_items=True,
    waits_signoff=True,
    asked_first=True,
)

KINDS = (CARRIED_ITEM,)

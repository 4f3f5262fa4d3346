"""The severance kind (the severance step, `bot/close/steps/severance.py`): taxes withheld
above the state × product rate, asked per well and grouped when many are alike."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from bot.close.doi_master import money
from bot.close.kinds.base import Kind, Option
from bot.close.kinds.entries import Facts, Line, pair, well


def _severance_refund(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    return pair(
        "1220",
        "6110",
        Decimal(facts["total"]),
        f"{facts['items'][0]['check']}: severance refund claimed (state rate)",
        facts["items"][0]["ref"],
        well(facts),
    )


SEVERANCE = Kind(
    "severance",
    "Severance",
    alike=True,
    noun="wells",
    options={
        "accept": Option("accept", "Accept as withheld", "Book the taxes as withheld."),
        "correct": Option(
            "correct",
            "Ask the operator to correct",
            "Book as withheld; ask for a corrected stub (open item).",
            leaves=lambda f, e, s: (
                f"ask for a corrected stub for {s} ({money(Decimal(f['total']))})"
            ),
        ),
        "refund": Option(
            "refund",
            "Claim a refund",
            "Dr 1220 Severance Refund Receivable / Cr 6110 for our share.",
            books=_severance_refund,
            accounts="our share of the tax over the state rate Dr 1220 / Cr 6110",
            leaves=lambda f, e, s: (
                f"claim the severance refund for {s} ({money(Decimal(f['total']))})"
            ),
        ),
    },
)

KINDS = (SEVERANCE,)

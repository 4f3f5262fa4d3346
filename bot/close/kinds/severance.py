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


def _add_row(facts: Facts, extra: dict[str, Any], subject: str) -> str:
    wanted = sorted({f"{i['state']} {i['product']}" for i in facts.get("items") or ()})
    return (
        f"add the severance rate for {', '.join(wanted)} to severance_rates.csv (the statute or "
        f"the state's page as its source) and check {subject}'s withholding against it"
    )


SEVERANCE_NO_RATE = Kind(
    "severance_no_rate",
    "Severance: no rate",
    alike=True,
    noun="wells",
    options={
        "add_rate": Option(
            "add_rate",
            "Book as withheld; add the state's rate",
            "Book the taxes as withheld; an open item to add the state × product row to the "
            "rates table and check this withholding against it.",
            leaves=_add_row,
        ),
        "accept": Option(
            "accept",
            "Accept as withheld (logged)",
            "Book the taxes as withheld, unchecked; the decision log says no rate checked them.",
        ),
    },
)

KINDS = (SEVERANCE, SEVERANCE_NO_RATE)

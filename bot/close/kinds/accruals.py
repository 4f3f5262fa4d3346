"""The revenue accrual kinds (the revenue accrual step, `bot/close/steps/revenue.py`): production without a check
that the rules do not accrue on their own (a new, shut-in or immaterial well), and a check
still missing past the accrual window. Their booking options are this month's accruals,
reversed next month."""

from __future__ import annotations

from typing import Any

from bot.close.kinds.base import Kind, Option
from bot.close.kinds.entries import Booker, Facts, Line, accrual_lines, text


def _accrue_items(key: str, why: str) -> Booker:
    def books(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        return accrual_lines(facts.get(key) or [], why)

    return books


REVENUE_ACCRUAL = Kind(
    "revenue_accrual",
    "Revenue accrual",
    {
        "accrue": Option(
            "accrue",
            "Accrue on operator volumes",
            "Dr 1210 / Dr 6110 / Cr revenue at operator volumes × net price × NRI.",
            books=_accrue_items("items", "operator volumes"),
            accounts="Dr 1210 (net), Dr 6110 (severance) / Cr revenue, at operator volumes × (benchmark − differential) × NRI",
            accrual=True,
        ),
        "last_actual": Option(
            "last_actual",
            "Accrue on the last actual check",
            "Repeat the last check's owner revenue for the month.",
            books=_accrue_items("last_actual", "last actual check"),
            accounts="Dr 1210, Dr 6110 / Cr revenue, at the last check",
            accrual=True,
        ),
        "skip": Option("skip", "Skip (logged)", "No accrual; the check books it when it comes."),
    },
)
MISSING_CHECK = Kind(
    "missing_check",
    "Expected check",
    {
        "accrue": Option(
            "accrue",
            "Accrue again on operator volumes",
            "The month's accrual again (Dr 1210 / Dr 6110 / Cr revenue); the payor is asked for the check.",
            books=_accrue_items("items", "operator volumes, check still expected"),
            accounts="Dr 1210, Dr 6110 / Cr revenue, at operator volumes",
            leaves=text("ask the payor for the missing check: {subject}"),
            accrual=True,
        ),
        "last_actual": Option(
            "last_actual",
            "Accrue on the last actual check",
            "Accrue the last check's owner revenue for the month; the payor is asked for the check.",
            books=_accrue_items("last_actual", "last actual check, check still expected"),
            accounts="Dr 1210, Dr 6110 / Cr revenue, at the last check",
            leaves=text("ask the payor for the missing check: {subject}"),
            accrual=True,
        ),
        "write_off": Option(
            "write_off",
            "Write off (logged)",
            "No accrual: the reversed accrual stands and the month's revenue is written off, logged.",
        ),
        "request": Option(
            "request",
            "Ask the payor (nothing booked)",
            "Book nothing now; an open item to get the check or the stub from the payor.",
            leaves=text("ask the payor for the missing check: {subject}"),
        ),
    },
)


def _add_row(facts: Facts, extra: dict[str, Any], subject: str) -> str:
    return (
        f"add the severance rate for {subject} ({', '.join(sorted(facts.get('no_rate') or {}))}) "
        "to severance_rates.csv, with the statute or the state's page as its source"
    )


ACCRUAL_NO_RATE = Kind(
    "accrual_no_rate",
    "Revenue accrual: no severance rate",
    {
        "last_rate": Option(
            "last_rate",
            "Accrue with severance at the last check's rate",
            "Dr 1210 / Dr 6110 / Cr revenue at operator volumes, severance at the rate the last "
            "check withheld; an open item to add the state's row.",
            books=_accrue_items(
                "at_last_rate", "operator volumes, severance at the last check's rate"
            ),
            accounts="Dr 1210 (net), Dr 6110 (severance at the last check's rate) / Cr revenue, at operator volumes × (benchmark − differential) × NRI",
            leaves=_add_row,
            accrual=True,
        ),
        "no_severance": Option(
            "no_severance",
            "Accrue with no severance until the row is added",
            "Dr 1210 / Cr revenue at operator volumes, no severance (logged); an open item to add "
            "the state's row.",
            books=_accrue_items("items", "operator volumes, no severance rate"),
            accounts="Dr 1210 / Cr revenue at operator volumes × (benchmark − differential) × NRI, no severance",
            leaves=_add_row,
            accrual=True,
        ),
        "skip": Option(
            "skip",
            "Skip (logged)",
            "No accrual; the check books it when it comes. An open item to add the state's row.",
            leaves=_add_row,
        ),
    },
)

KINDS = (REVENUE_ACCRUAL, MISSING_CHECK, ACCRUAL_NO_RATE)

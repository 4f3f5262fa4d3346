"""What a decision card shows first about each question of a form (issue 30): the item, what
happened, and its figures — basis, billed, expected, difference — read from the exception (or
the group of alike ones) the question names with its [ref …] tag. A question that names none
(one the model wrote itself) has no facts: the card shows its own words."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from bot.close import groups
from bot.close.doi_master import money
from bot.close.ledger import Ledger
from bot.close.records import ExceptionRow
from bot.close.toolbase import REF_RE
from bot.core.errors import NotFoundError
from bot.store import QuestionRecord, Store

# Where each figure is among a kind's facts (kinds/*: the first key present is used).
BILLED = ("jib_billed", "billed", "charged")
EXPECTED = ("jib_at_doi", "approved", "expected")


def _amount(value: Any) -> str:
    if value in (None, ""):
        return ""
    try:
        return money(Decimal(str(value)))
    except (InvalidOperation, ValueError):
        return ""


def _first(facts: dict[str, Any], keys: tuple[str, ...]) -> str:
    return next((shown for k in keys if (shown := _amount(facts.get(k)))), "")


def _signed(value: Any) -> str:
    shown = _amount(value)
    return f"+{shown}" if shown and not shown.startswith(("-", "−")) else shown


def item_facts(exc: ExceptionRow) -> dict[str, str]:
    """One exception as a card's row: item, basis (what happened), billed, expected, difference."""
    d = exc["details"]
    facts = d.get("facts") or {}
    amount = Decimal(str(d.get("amount") or "0"))
    basis = str(d["summary"]).strip()
    if exc["kind"] == "flux_item":  # what the movement comes from, not "explain 6220 …"
        draft = str(facts.get("draft") or "").strip()
        basis = f"Comes from: {draft}" if draft else "Nothing in the documents explains it"
    return {
        "item": str(d["subject"]),
        "basis": basis,
        "billed": _first(facts, BILLED),
        "expected": _first(facts, EXPECTED),
        "difference": _signed(facts.get("jib_difference")) or (money(amount) if amount else ""),
    }


def group_facts(group: list[ExceptionRow]) -> dict[str, str]:
    """Many alike exceptions asked as one: their count and total at stake."""
    return {
        "item": f"{len(group)} {group[0]['kind'].replace('_', ' ')} {groups.noun(group[0]['kind'])}",
        "basis": groups.summary(group),
        "billed": "",
        "expected": "",
        "difference": money(groups.total(group)),
    }


def question_facts(store: Store, record: QuestionRecord) -> list[dict[str, str] | None]:
    """Per question of the form, in order: its card row, or None where it names no exception."""
    ledger = Ledger(store)
    exceptions: list[ExceptionRow] | None = None
    out: list[dict[str, str] | None] = []
    for item in record.questions:
        refs = REF_RE.findall(str(item.get("question") or ""))
        found: dict[str, str] | None = None
        for ref in refs:
            if groups.is_group(ref):
                exceptions = (
                    exceptions if exceptions is not None else ledger.exceptions(record.run_id)
                )
                if members := groups.members(exceptions, ref):
                    found = group_facts(members)
                    break
                continue
            try:
                found = item_facts(ledger.exception(f"{record.run_id}:{ref}"))
                break
            except NotFoundError:
                continue
        out.append(found)
    return out

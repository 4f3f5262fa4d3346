"""The lines a decision books, and what is read off them: balanced pairs, the document lines an
exception is about, the lines another decision settled, what a decision leaves on a holding
account, and a booking described by account for a question's option."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from bot.close.data import ZERO
from bot.close.doi_master import money

Line = dict[str, Any]
Facts = dict[str, Any]
Booker = Callable[[Facts, dict[str, Any]], list[Line]]
Opener = Callable[[Facts, dict[str, Any], str], str | None]

DOCUMENT_FILES = ("jib.csv:", "revenue.csv:")


def line(
    account: str,
    *,
    debit: Decimal = ZERO,
    credit: Decimal = ZERO,
    memo: str,
    ref: str = "",
    well_id: str = "",
) -> Line:
    return {
        "account": account,
        "debit": debit,
        "credit": credit,
        "memo": memo,
        "ref": ref,
        "well_id": well_id,
    }


def pair(
    dr: str, cr: str, amount: Decimal, memo: str, ref: str = "", well_id: str = ""
) -> list[Line]:
    if amount < 0:
        dr, cr, amount = cr, dr, -amount
    if amount == ZERO or dr == cr:
        return []
    return [
        line(dr, debit=amount, memo=memo, ref=ref, well_id=well_id),
        line(cr, credit=amount, memo=memo, ref=ref, well_id=well_id),
    ]


def nothing(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    return []


def well(facts: Facts) -> str:
    return str(facts.get("well_id") or "")


def reversed_lines(lines: list[Line]) -> list[Line]:
    return [{**x, "debit": x["credit"], "credit": x["debit"]} for x in lines]


def text(template: str) -> Opener:
    """An open item's text from a template over the subject and the facts' strings."""

    def leaves(facts: Facts, extra: dict[str, Any], subject: str) -> str:
        return template.format(
            subject=subject, **{k: v for k, v in facts.items() if isinstance(v, str)}
        )

    return leaves


def revenue_to_suspense(stub: dict[str, Any], part: str, memo: str, well_id: str) -> list[Line]:
    """Move (part of) a stub line's booking into 2310: the revenue, severance and deductions it
    carried. `part` is "whole", or "difference" (paid less what the DOI NRI gives, only when the
    stub paid more)."""
    paid, doi = stub["paid"], stub.get("at_doi") or {}
    if part == "whole":
        rev, tax, ded, net = (Decimal(paid[k]) for k in ("revenue", "taxes", "deductions", "net"))
    else:
        rev, tax, ded, net = (
            Decimal(paid[k]) - Decimal(doi[k]) for k in ("revenue", "taxes", "deductions", "net")
        )
    if net <= 0:
        return []
    out = [line(stub["account"], debit=rev, memo=memo, ref=stub["ref"], well_id=well_id)]
    if tax:
        out.append(line("6110", credit=tax, memo=memo, ref=stub["ref"], well_id=well_id))
    if ded:
        out.append(line("6130", credit=ded, memo=memo, ref=stub["ref"], well_id=well_id))
    out.append(line("2310", credit=net, memo=memo, ref=stub["ref"], well_id=well_id))
    return out


def wi_jib(side: str, how: str) -> Booker:
    """Each JIB line's difference (billed − at DOI) from its cost account to `side`."""

    def books(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        out: list[Line] = []
        for j in facts.get("jib_lines", []):
            diff = Decimal(j["billed"]) - Decimal(j["at_doi"])
            memo = f"{facts['well_name']}: {j['invoice']} {j['category']} WI difference {how}"
            out += pair(side, j["account"], diff, memo, j["ref"], well(facts))
        return out

    return books


def wi_revenue_excess(how: str) -> Booker:
    """Each stub's excess over the DOI NRI to 2310 (revenue, severance and deductions alike)."""

    def books(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        out: list[Line] = []
        for s in facts.get("stub_lines", []):
            sales = f" sales {s['sale_month']}" if s.get("sale_month") else ""
            memo = f"{facts['well_name']}: check {s['check']} {s['product']}{sales} NRI difference {how}"
            out += revenue_to_suspense(s, "difference", memo, well(facts))
        return out

    return books


def accrual_lines(items: Iterable[dict[str, Any]], why: str) -> list[Line]:
    """A revenue accrual per item: Dr 1210 receivable, Dr 6110 severance / Cr revenue."""
    out = []
    for i in items:
        memo = f"accrue {i['well_name']} {i['product']} {i['month']}: {i.get('formula') or why}"
        ref = f"production.csv:{i['well_id']}:{i['product']}:{i['month']}"
        out.append(
            line("1210", debit=Decimal(i["receivable"]), memo=memo, ref=ref, well_id=i["well_id"])
        )
        if Decimal(i["severance"]):
            out.append(
                line(
                    "6110",
                    debit=Decimal(i["severance"]),
                    memo=memo + " severance",
                    ref=ref,
                    well_id=i["well_id"],
                )
            )
        out.append(
            line(
                i["account"], credit=Decimal(i["revenue"]), memo=memo, ref=ref, well_id=i["well_id"]
            )
        )
    return out


# -- the document lines an exception is about ------------------------------------------


def without_lines(facts: Facts, held: frozenset[str]) -> Facts:
    """The facts with the document lines in `held` left out (another decision settled them)."""
    if not held:
        return facts
    if str(facts.get("ref", "")) in held:
        return {**facts, "settled": True, "lines": [], "jib_lines": [], "stub_lines": []}
    out = dict(facts)
    for key in ("lines", "jib_lines", "stub_lines"):
        if isinstance(facts.get(key), list):
            out[key] = [x for x in facts[key] if x.get("ref") not in held]
    return out


def line_refs(facts: Facts) -> set[str]:
    """The document lines (jib.csv:N, revenue.csv:N) an exception is about."""
    refs = set()
    if str(facts.get("ref", "")).startswith(DOCUMENT_FILES):
        refs.add(str(facts["ref"]))
    for key in ("lines", "jib_lines", "stub_lines"):
        for x in facts.get(key) or []:
            if isinstance(x, dict) and str(x.get("ref", "")).startswith(DOCUMENT_FILES):
                refs.add(str(x["ref"]))
    return refs


# Balance-sheet accounts where a decision leaves a balance for an open item to clear: disputed
# and claimed receivables, suspense, the catch-up payable and receivable.
HOLDING_ACCOUNTS = ("1210", "1215", "1220", "1390", "1395", "2110", "2310")


def held_balance(lines: list[Line], text: str = "") -> list[dict[str, str]]:
    """The entries of a decision's lines that leave a balance on a holding account (those of
    the accounts the open item's text names, when it names any), JSON-ready: what writing the
    item off reverses."""
    named = [a for a in HOLDING_ACCOUNTS if re.search(rf"\b{a}\b", text)]
    wanted = set(named or HOLDING_ACCOUNTS)
    entries: dict[tuple[str, str, str], list[Line]] = {}
    for x in lines:
        entries.setdefault((x["memo"], x["ref"], x["well_id"]), []).append(x)
    return [
        {
            "account": x["account"],
            "debit": str(x["debit"]),
            "credit": str(x["credit"]),
            "memo": x["memo"],
            "ref": x["ref"],
            "well_id": x["well_id"],
        }
        for entry in entries.values()
        if any(x["account"] in wanted for x in entry)
        for x in entry
    ]


# -- a booking described ------------------------------------------------------------------


def by_account(lines: list[Line]) -> list[dict[str, Any]]:
    """Debits and credits per account, debits first, in the order they appear."""
    acc: dict[str, list[Decimal]] = {}
    for x in lines:
        totals = acc.setdefault(x["account"], [ZERO, ZERO])
        totals[0] += x["debit"]
        totals[1] += x["credit"]
    return [{"account": a, "debit": d, "credit": c} for a, (d, c) in acc.items()]


def describe(lines: list[Line], names: dict[str, str] | None = None, limit: int = 0) -> str:
    """'Dr 1390 JIB Receivable - Disputed $1,200.00 / Cr 6210 Lease Operating Expense
    $1,200.00' — what an option books, per account, each side only when it has an amount
    ('' for no lines). With `limit`, the smallest accounts drop their names (never an amount,
    never a side) until the text fits."""
    if not lines:
        return ""
    totals = by_account(lines)
    named = {a["account"] for a in totals if (names or {}).get(a["account"])}

    def text() -> str:
        def account(a: dict[str, Any]) -> str:
            name = (names or {}).get(a["account"]) if a["account"] in named else None
            return f"{a['account']} {name}" if name else a["account"]

        sides = [
            ", ".join(f"{side} {account(a)} {money(a[key])}" for a in totals if a[key])
            for side, key in (("Dr", "debit"), ("Cr", "credit"))
        ]
        return " / ".join(x for x in sides if x)

    shown = text()
    smallest = sorted(totals, key=lambda a: a["debit"] + a["credit"])
    while limit and len(shown) > limit and named:
        named.discard(next(a["account"] for a in smallest if a["account"] in named))
        shown = text()
    return shown

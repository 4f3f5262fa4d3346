"""Exception kinds as data: each `Kind` owns its options, and each `Option` what it books,
what it leaves open and whether it settles the document line it is about.

Every booking is an adjusting entry on top of the documents as received, so the journal
shows the bill as billed and then the decision, each traceable. A decision that holds, maps
or replaces a document line (`holds_line`) settles every other exception on that line: they
book nothing for it (`Kind.book(..., held=...)` leaves those lines out).

Adding a kind: a `Kind` in KINDS with its options, each with its booking function (facts,
extra → balanced lines) and its follow-up (→ the open item's text, or None).
`Kind.preview` gives what an option books by account, for a question's option descriptions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bot.close.checks import REVENUE_ACCOUNTS
from bot.close.data import CENT, ZERO
from bot.close.doi_master import ACCOUNT_NAMES, money

Line = dict[str, Any]
Facts = dict[str, Any]
Booker = Callable[[Facts, dict[str, Any]], list[Line]]
Opener = Callable[[Facts, dict[str, Any], str], str | None]

DOCUMENT_FILES = ("jib.csv:", "revenue.csv:")


# -- lines ----------------------------------------------------------------------


def _line(
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


def _pair(
    dr: str, cr: str, amount: Decimal, memo: str, ref: str = "", well_id: str = ""
) -> list[Line]:
    if amount < 0:
        dr, cr, amount = cr, dr, -amount
    if amount == ZERO or dr == cr:
        return []
    return [
        _line(dr, debit=amount, memo=memo, ref=ref, well_id=well_id),
        _line(cr, credit=amount, memo=memo, ref=ref, well_id=well_id),
    ]


def _nothing(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    return []


def _well(facts: Facts) -> str:
    return str(facts.get("well_id") or "")


def _revenue_to_suspense(stub: dict[str, Any], part: str, memo: str, well_id: str) -> list[Line]:
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
    out = [_line(stub["account"], debit=rev, memo=memo, ref=stub["ref"], well_id=well_id)]
    if tax:
        out.append(_line("6110", credit=tax, memo=memo, ref=stub["ref"], well_id=well_id))
    if ded:
        out.append(_line("6130", credit=ded, memo=memo, ref=stub["ref"], well_id=well_id))
    out.append(_line("2310", credit=net, memo=memo, ref=stub["ref"], well_id=well_id))
    return out


def _accrual_lines(items: Iterable[dict[str, Any]], why: str) -> list[Line]:
    """A revenue accrual per item: Dr 1210 receivable, Dr 6110 severance / Cr revenue."""
    out = []
    for i in items:
        memo = f"accrue {i['well_name']} {i['product']} {i['month']}: {i.get('formula') or why}"
        ref = f"production.csv:{i['well_id']}:{i['product']}:{i['month']}"
        out.append(
            _line("1210", debit=Decimal(i["receivable"]), memo=memo, ref=ref, well_id=i["well_id"])
        )
        if Decimal(i["severance"]):
            out.append(
                _line(
                    "6110",
                    debit=Decimal(i["severance"]),
                    memo=memo + " severance",
                    ref=ref,
                    well_id=i["well_id"],
                )
            )
        out.append(
            _line(
                i["account"], credit=Decimal(i["revenue"]), memo=memo, ref=ref, well_id=i["well_id"]
            )
        )
    return out


# -- options and kinds ------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One answer to an exception: its label, what it means, what it books and leaves open."""

    code: str
    label: str
    meaning: str
    books: Booker = _nothing
    leaves: Opener | None = None
    holds_line: bool = False  # holds, maps or replaces the document line: settles the others on it
    override: bool = False  # never a default: a person chooses it with a typed reason
    accrual: bool = False  # its lines are this month's accruals (reversed next month)
    # the balance the documents as received leave on a holding account under this decision,
    # which it does not book itself (a line held in suspense as received): its open item's
    # write-off reverses it with what the decision books
    held: Booker | None = None


SETTLED = Option(
    "settled",
    "Settled by the decision on the same line",
    "Another decision held, mapped or replaced this document line; nothing is booked twice.",
)


@dataclass(frozen=True)
class Kind:
    """An exception kind: its header on a question and its options."""

    name: str
    header: str
    options: dict[str, Option] = field(default_factory=dict)
    # many of it, of one operator, with the same options and recommendation, are asked once
    # as a group (bot/close/groups.py); only kinds whose decision spawns no follow-up question
    alike: bool = False

    def option(self, code: str, facts: Facts) -> Option:
        if code == SETTLED.code and code not in self.options:  # a carried item's own "settled"
            return SETTLED
        try:
            return self.options[code]
        except KeyError:
            raise KeyError(f"{code!r} is not an option of {self.name}") from None

    def label(self, code: str, facts: Facts) -> str:
        return self.option(code, facts).label

    def meaning(self, code: str, facts: Facts | None = None) -> str:
        return self.option(code, facts or {}).meaning

    def holds(self, code: str, facts: Facts) -> bool:
        try:
            return self.option(code, facts).holds_line
        except KeyError:
            return False

    def book(
        self,
        code: str,
        facts: Facts,
        extra: dict[str, Any] | None = None,
        *,
        held: frozenset[str] = frozenset(),
    ) -> list[Line]:
        """The balanced adjusting lines the option books; lines another decision held are left out."""
        try:
            option = self.option(code, facts)
        except KeyError:
            return []
        return option.books(without_lines(facts, held), extra or {})

    def follow_up(self, code: str, facts: Facts, extra: dict[str, Any], subject: str) -> str | None:
        try:
            option = self.option(code, facts)
        except KeyError:
            return None
        return option.leaves(facts, extra, subject) if option.leaves else None

    def preview(self, code: str, facts: Facts) -> list[dict[str, Any]]:
        """What the option books by account: [{account, debit, credit}], for a question's form."""
        return by_account(self.book(code, facts, {}))


class UnknownPropertyKind(Kind):
    """Its options include "map:WELL" for each of the operator's wells."""

    def option(self, code: str, facts: Facts) -> Option:
        if code.startswith("map:"):
            names = dict(tuple(c) for c in facts.get("candidates", []))
            return Option(
                code,
                f"Map to {names.get(code[4:], code[4:])}",
                "Book the line as this well's; its decimals are then checked against the DOI.",
                leaves=None,
                holds_line=True,
            )
        return super().option(code, facts)


def _catch_up(facts: Facts, extra: dict[str, Any], date: str) -> list[Line]:
    lines = extra.get("catch_up") or facts.get("catch_up_by_date", {}).get(date, [])
    return [
        line
        for c in lines
        for line in _pair(
            c["debit"],
            c["credit"],
            Decimal(c["amount"]),
            c["memo"],
            c.get("ref", ""),
            _well(facts),
        )
    ]


def _catch_up_open(facts: Facts, extra: dict[str, Any], subject: str) -> str | None:
    payable = sum(
        (Decimal(c["amount"]) for c in extra.get("catch_up") or [] if c["credit"] == "2110"),
        ZERO,
    )
    if not payable:
        return None
    return f"pay the catch-up payable for {subject} ({money(payable)}, 2110) on the operator's next JIB"


class EffectiveDateKind(Kind):
    """Its options are dates (YYYY-MM-DD); each books the catch-up since that date."""

    def option(self, code: str, facts: Facts) -> Option:
        return Option(
            code,
            f"Effective {code}",
            "The new decimal applies from this date; months booked at the old one are caught up.",
            books=lambda f, e: _catch_up(f, e, code),
            leaves=_catch_up_open,
        )


class EscalateKind(Kind):
    """Its question's options are people ("to:NAME")."""

    def option(self, code: str, facts: Facts) -> Option:
        if code.startswith("to:"):
            name = (facts.get("names") or {}).get(code[3:], code[3:])  # a name, not a user id
            return Option(
                code, f"Escalate to {name}"[:75], "They own the item until it is explained."
            )
        return super().option(code, facts)


class FluxSelectKind(Kind):
    """Which flagged flux items need an explanation (runs recorded before each item was asked)."""

    def option(self, code: str, facts: Facts) -> Option:
        return Option(
            code,
            str(facts.get("labels", {}).get(code, code))[:75],
            "Needs a written explanation in the close file.",
        )


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


def held_by_others(exceptions: list[dict[str, Any]]) -> dict[str, frozenset[str]]:
    """Per exception id, the document lines another decision settled first: a decision that holds
    a line settles it for every exception decided after it, and for every exception that does
    not hold it; the first holding decision books it."""
    decided = [e for e in exceptions if e["status"] == "resolved" and e.get("resolution")]
    order = sorted(range(len(decided)), key=lambda i: (decided[i].get("resolved_at") or "", i))
    holders: list[tuple[int, str, set[str]]] = []  # (position, exception id, lines)
    for pos, i in enumerate(order):
        e = decided[i]
        if KINDS[e["kind"]].holds(e["resolution"], e["details"]["facts"]) and not e[
            "resolution"
        ].startswith("map:"):  # a mapped line is the well's: what is found on it then is booked
            holders.append((pos, e["id"], line_refs(e["details"]["facts"])))
    out: dict[str, frozenset[str]] = {}
    for pos, i in enumerate(order):
        e = decided[i]
        holds = KINDS[e["kind"]].holds(e["resolution"], e["details"]["facts"])
        held: set[str] = set()
        for hpos, hid, lines in holders:
            if hid != e["id"] and (not holds or hpos < pos):
                held |= lines
        out[e["id"]] = frozenset(held)
    return out


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
    for line in lines:
        entries.setdefault((line["memo"], line["ref"], line["well_id"]), []).append(line)
    return [
        {
            "account": line["account"],
            "debit": str(line["debit"]),
            "credit": str(line["credit"]),
            "memo": line["memo"],
            "ref": line["ref"],
            "well_id": line["well_id"],
        }
        for entry in entries.values()
        if any(line["account"] in wanted for line in entry)
        for line in entry
    ]


def _write_off(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    """Writing an open item off: the balance its decision held goes back where it came from
    (the decision's entry reversed: a disputed receivable to cost, a claim out of 4090)."""
    since = facts.get("from") or "last month"
    return [
        _line(
            h["account"],
            debit=Decimal(h["credit"]),
            credit=Decimal(h["debit"]),
            memo=f"write off open item from {since}: {h['memo']}",
            ref=h["ref"],
            well_id=h["well_id"],
        )
        for h in facts.get("held_balance") or []
    ]


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


# -- what each option books ----------------------------------------------------------


def _wi_jib(side: str, how: str) -> Booker:
    """Each JIB line's difference (billed − at DOI) from its cost account to `side`."""

    def books(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        out: list[Line] = []
        for j in facts.get("jib_lines", []):
            diff = Decimal(j["billed"]) - Decimal(j["at_doi"])
            memo = f"{facts['well_name']}: {j['invoice']} {j['category']} WI difference {how}"
            out += _pair(side, j["account"], diff, memo, j["ref"], _well(facts))
        return out

    return books


def _wi_revenue_excess(how: str) -> Booker:
    """Each stub's excess over the DOI NRI to 2310 (revenue, severance and deductions alike)."""

    def books(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        out: list[Line] = []
        for s in facts.get("stub_lines", []):
            sales = f" sales {s['sale_month']}" if s.get("sale_month") else ""
            memo = f"{facts['well_name']}: check {s['check']} {s['product']}{sales} NRI difference {how}"
            out += _revenue_to_suspense(s, "difference", memo, _well(facts))
        return out

    return books


def _wi_claim(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    out: list[Line] = []
    for s in facts.get("stub_lines", []):
        shortfall = Decimal(s["at_doi"]["net"]) - Decimal(s["paid"]["net"])
        if shortfall > 0:
            memo = f"{facts['well_name']}: check {s['check']} {s['product']} NRI difference underpayment claimed"
            out += _pair("1215", "4090", shortfall, memo, s["ref"], _well(facts))
    return out


def _wi_defer(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    return _wi_jib("1395", "held pending ownership support")(facts, extra) + _wi_revenue_excess(
        "held pending ownership support"
    )(facts, extra)


def _wi_text(template: str) -> Opener:
    def leaves(facts: Facts, extra: dict[str, Any], subject: str) -> str:
        return template.format(
            op=facts.get("operator", "the operator"),
            subject=subject,
            cost=money(abs(Decimal(facts.get("jib_difference") or "0"))),
            revenue=money(abs(Decimal(facts.get("stub_difference") or "0"))),
        )

    return leaves


def _line_kind(kind: str, side: str, how: str) -> Booker:
    """A JIB line's amount at stake from its cost account to `side` (2110 short-pay, 1390 protest)."""

    def books(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        out: list[Line] = []
        doc = facts.get("invoice") or facts.get("afe_no") or ""
        for item in facts.get("lines", []):
            memo = f"{doc} {kind.replace('_', ' ')}: {how}"
            out += _pair(
                side, item["account"], Decimal(item["amount"]), memo, item["ref"], item["well_id"]
            )
        return out

    return books


def _book_computed(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    out: list[Line] = []
    for item in facts.get("lines", []):
        out += _pair(
            item["account"],
            "2110",
            -Decimal(item["amount"]),
            f"{facts.get('invoice', '')}: booked at the computed amount",
            item["ref"],
            item["well_id"],
        )
    return out


def _dispute_text(facts: Facts, extra: dict[str, Any], subject: str) -> str:
    amount = Decimal(facts.get("amount") or facts.get("share") or facts.get("difference") or "0")
    return f"dispute {money(abs(amount))} with the operator ({subject})"


def _create(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    if facts.get("settled"):
        return []
    memo = f"{facts['ref']} booked to a new well (DOI row to add)"
    if facts["document"] == "jib":
        return _pair(facts["account"], "1395", Decimal(facts["amount"]), memo, facts["ref"])
    parts = facts.get("parts")
    if not parts:  # recorded before the stub's parts were kept
        return _pair(
            "2310",
            facts.get("revenue_account") or "4010",
            Decimal(facts["amount"]),
            memo,
            facts["ref"],
        )
    out = [_line("2310", debit=Decimal(parts["net"]), memo=memo, ref=facts["ref"])]
    if Decimal(parts["taxes"]):
        out.append(_line("6110", debit=Decimal(parts["taxes"]), memo=memo, ref=facts["ref"]))
    if Decimal(parts["deductions"]):
        out.append(_line("6130", debit=Decimal(parts["deductions"]), memo=memo, ref=facts["ref"]))
    out.append(
        _line(
            facts["revenue_account"], credit=Decimal(parts["revenue"]), memo=memo, ref=facts["ref"]
        )
    )
    return out


def _reversed(lines: list[Line]) -> list[Line]:
    return [{**line, "debit": line["credit"], "credit": line["debit"]} for line in lines]


def _decimal_hold(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    if facts.get("settled") or facts.get("unknown_well"):
        return []  # an unknown well's line is in suspense as received
    memo = f"{facts['ref']} held: decimal out of range"
    if facts["document"] == "jib":
        return _pair(
            "1395", facts["account"], Decimal(facts["amount"]), memo, facts["ref"], _well(facts)
        )
    parts = facts.get("parts")
    if not parts:
        return _pair(
            facts.get("revenue_account") or "4010",
            "2310",
            Decimal(facts["amount"]),
            memo,
            facts["ref"],
        )
    stub = {"paid": parts, "account": facts["revenue_account"], "ref": facts["ref"]}
    return _revenue_to_suspense(stub, "whole", memo, _well(facts))


def _stub_hold(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    diff = Decimal(facts["difference"])
    if facts.get("settled") or diff <= 0:
        return []
    account = facts.get("account") or REVENUE_ACCOUNTS[facts["product"]]
    return _pair(
        account,
        "2310",
        diff,
        f"{facts['ref']}: paid above the stub's own figures, held",
        facts["ref"],
    )


def _stub_claim(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    diff = Decimal(facts["difference"])
    if facts.get("settled") or diff >= 0:
        return []
    return _pair(
        "1215",
        "4090",
        -diff,
        f"{facts['ref']}: paid below the stub's own figures, claimed",
        facts["ref"],
    )


def _underpaid(debit: str, what: str, *, with_sales: bool) -> Booker:
    """Every month paid at the old NRI booked once: Dr `debit` / Cr 4090, one pair per line."""

    def book(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        out: list[Line] = []
        for item in facts.get("lines", []):
            sale = item.get("sale_month") if with_sales else None
            sales = f" sales {sale}" if sale else ""
            out += _pair(
                debit,
                "4090",
                Decimal(item["amount"]),
                f"{item['ref']}{sales}: {what}",
                item["ref"],
                _well(facts),
            )
        return out

    return book


_underpaid_claim = _underpaid("1215", "underpaid at the new NRI, claimed", with_sales=False)
_underpaid_book = _underpaid("1210", "catch-up at the new NRI", with_sales=True)


def _severance_refund(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    return _pair(
        "1220",
        "6110",
        Decimal(facts["total"]),
        f"{facts['items'][0]['check']}: severance refund claimed (state rate)",
        facts["items"][0]["ref"],
        _well(facts),
    )


def _accrue_items(key: str, why: str) -> Booker:
    def books(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        return _accrual_lines(facts.get(key) or [], why)

    return books


def _sanity_correct(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    """The well's documents at the corrected row: each JIB line's difference from the DOI WI to
    1395, each stub's excess over the computed NRI to 2310."""
    if not facts.get("well_name"):
        return []
    return _wi_jib("1395", "held until the DOI master is corrected")(
        facts, extra
    ) + _wi_revenue_excess("held until the DOI master is corrected")(facts, extra)


def _hold_well(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    out: list[Line] = []
    name = facts.get("well_name", "")
    for j in facts.get("jib_lines", []):
        memo = f"{name}: {j['invoice']} {j['category']} held until the DOI master is corrected"
        out += _pair("1395", j["account"], Decimal(j["billed"]), memo, j["ref"], _well(facts))
    for s in facts.get("stub_lines", []):
        memo = f"{name}: check {s['check']} {s['product']} sales {s['sale_month']} held until the DOI master is corrected"
        out += _revenue_to_suspense(s, "whole", memo, _well(facts))
    return out


def _text(template: str) -> Opener:
    def leaves(facts: Facts, extra: dict[str, Any], subject: str) -> str:
        return template.format(
            subject=subject, **{k: v for k, v in facts.items() if isinstance(v, str)}
        )

    return leaves


def adjustment_code(entry: dict[str, str]) -> str:
    """'accrue' for an adjustment shaped like closebot's own accruals — anything to 2115 Accrued
    LOE, or Dr 1210 against this month's revenue (4010/4020/4030) — which is booked with this
    month's accruals and reversed next month (CLOSE.md's reversing method); else 'adjust', an
    entry that stands (Dr 1210 / Cr 4090 is a catch-up receivable, not an accrual)."""
    accounts = {entry["debit"], entry["credit"]}
    if "2115" in accounts or (
        entry["debit"] == "1210" and entry["credit"] in REVENUE_ACCOUNTS.values()
    ):
        return "accrue"
    return "adjust"


def _flux_adjustment(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    """The adjusting entry the person described for a flagged flux item: Dr / Cr, balanced."""
    a = extra.get("adjustment")
    if not a:
        return []
    item = facts.get("item") or {}
    key = item.get("account") or f"{item.get('well_id', '')}:{item.get('product', '')}"
    memo = f"flux adjustment of {key}" + (f": {a['memo']}" if a.get("memo") else "")
    return _pair(a["debit"], a["credit"], Decimal(a["amount"]), memo, f"flux:{key}")


def _adjust_open(facts: Facts, extra: dict[str, Any], subject: str) -> str | None:
    if not extra.get("adjustment"):
        return f"describe the adjustment for the flux of {subject}"
    return None  # booked in the batch the posting approval covers


def _flux_open(facts: Facts, extra: dict[str, Any], subject: str) -> str | None:
    if extra.get("explanation"):
        return None
    return f"explain the flux of {subject}"


# Reclass capex↔LOE (CLOSE.md step 3): a JIB line booked to expense that belongs in capital, or
# the other way, moves whole (its owner net as billed) to the account its category maps to:
#   expense → capital: LOE 6210 → 1620 L&WE (equipment billed as LOE: a pump, a tank),
#                      Workover 6220 → 1615 ICC (a recompletion adds reserves: completion work),
#                      Overhead 6250 → 1610 IDC (drilling overhead, as under an AFE);
#   capital → expense: IDC 1610 and ICC 1615 → 6220 Workover (intangible work on a producing
#                      well), TDC/TCC/L&WE 1620 → 6210 LOE (repairs and replacements),
#                      overhead capitalised under an AFE (1610) → 6250 Operator Overhead.
CAPITAL_ACCOUNTS = ("1610", "1615", "1620")
TO_CAPITAL = {"LOE": "1620", "Workover": "1615", "Overhead": "1610"}
TO_EXPENSE = {"IDC": "6220", "ICC": "6220", "TDC": "6210", "TCC": "6210", "LWE": "6210"}
TO_EXPENSE |= {"Overhead": "6250"}


def reclass_account(account: str, category: str) -> str | None:
    """Where a line booked to `account` of `category` goes when reclassed (None: nowhere)."""
    if account in CAPITAL_ACCOUNTS:
        return TO_EXPENSE.get(category)
    return TO_CAPITAL.get(category)


def _reclass_moves(facts: Facts) -> list[tuple[dict[str, Any], str]]:
    """(line, the account it moves to) for each line of a JIB finding that can be reclassed;
    lines recorded before reclass existed (no net or category) cannot."""
    out = []
    for item in facts.get("lines", []):
        if "net" not in item or "category" not in item:
            continue
        target = reclass_account(item["account"], item["category"])
        if target:
            out.append((item, target))
    return out


BOOKED_ON_LINE = "booked_on_line"  # extra: what the other decisions booked, per line_key


def line_key(ref: str, account: str) -> str:
    """A document line on one account: where decisions on the same line meet."""
    return f"{ref}|{account}"


def moves_lines(code: str) -> bool:
    """The decision moves its lines whole to another account (reclass): it books after the
    others on the same lines, so it moves what they left."""
    return code == "reclass"


def _within_line(lines: list[Line], facts: Facts, on_line: dict[str, Decimal]) -> list[Line]:
    """A JIB finding's lines, each document line's share cut to what the decisions before it
    left of that line on its own account: two findings on one line (billed twice, and over the
    overhead rate) never take more off it than it billed — the line is decided once."""
    out: list[Line] = []
    for ref in dict.fromkeys(line["ref"] for line in lines):
        mine = [line for line in lines if line["ref"] == ref]
        item = next((x for x in facts.get("lines", []) if x.get("ref") == ref), None)
        if not ref or item is None or "net" not in item:
            out += mine
            continue
        net, own = Decimal(item["net"]), item["account"]
        left = net + on_line.get(line_key(ref, own), ZERO)
        effect = sum((x["debit"] - x["credit"] for x in mine if x["account"] == own), ZERO)
        if net * effect >= 0 or (abs(effect) <= abs(left) and left * net > 0):
            out += mine  # adds to the line, or takes no more than is left of it
            continue
        share = max(left * (1 if net > 0 else -1), ZERO) / abs(effect)
        for x in mine:
            d, c = (x["debit"] * share).quantize(CENT), (x["credit"] * share).quantize(CENT)
            if d or c:
                out.append({**x, "debit": d, "credit": c})
    return out


def _reclass(kind: str) -> Booker:
    def books(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        out: list[Line] = []
        doc = facts.get("invoice") or facts.get("afe_no") or ""
        seen: set[str] = set()
        for item, target in _reclass_moves(facts):
            if item["ref"] in seen:  # a line is moved once, whatever the finding lists
                continue
            seen.add(item["ref"])
            memo = (
                f"{doc} {kind.replace('_', ' ')}: {item['category']} reclassed "
                f"{item['account']} → {target}"
            )
            out += _pair(
                target, item["account"], Decimal(item["net"]), memo, item["ref"], item["well_id"]
            )
        return out

    return books


class JibLineKind(Kind):
    """A JIB finding (step 3): its reclass option names where the line goes, and what it takes
    off a line is never more than the other decisions on that line left of it."""

    def book(
        self,
        code: str,
        facts: Facts,
        extra: dict[str, Any] | None = None,
        *,
        held: frozenset[str] = frozenset(),
    ) -> list[Line]:
        lines = super().book(code, facts, extra, held=held)
        on_line = (extra or {}).get(BOOKED_ON_LINE)
        return _within_line(lines, facts, on_line) if on_line is not None else lines

    def option(self, code: str, facts: Facts) -> Option:
        found = super().option(code, facts)
        if code != "reclass":
            return found
        targets = sorted({t for _, t in _reclass_moves(facts)})
        sides = {"capital" if t in CAPITAL_ACCOUNTS else "expense" for t in targets}
        label = found.label
        if len(sides) == 1:
            to = sides.pop()
            for text in (
                f"Reclass to {to} ({', '.join(f'{t} {ACCOUNT_NAMES[t]}' for t in targets)})",
                f"Reclass to {to} ({', '.join(targets)})",
            ):
                if len(text) <= 75:
                    label = text
                    break
        return Option(
            code,
            label,
            found.meaning,
            books=found.books,
            leaves=found.leaves,
        )


def _line_options(kind: str) -> dict[str, Option]:
    return {
        "pay_as_billed": Option(
            "pay_as_billed", "Pay as billed", "Book and pay the line as the operator billed it."
        ),
        "short_pay": Option(
            "short_pay",
            "Short-pay and dispute",
            "Book and pay what the documents support; dispute the rest (JOA late-payment interest may apply).",
            books=_line_kind(kind, "2110", "short-paid, disputed"),
            leaves=_dispute_text,
        ),
        "protest": Option(
            "protest",
            "Pay under protest (receivable)",
            "Pay as billed; hold the disputed amount as a receivable (1390).",
            books=_line_kind(kind, "1390", "paid under protest"),
            leaves=_dispute_text,
        ),
        "book_computed": Option(
            "book_computed",
            "Book the computed amount",
            "Book what the line's own figures give; the operator may rebill.",
            books=_book_computed,
        ),
        "reclass": Option(
            "reclass",
            "Reclass capex↔LOE",
            "Move the line between expense and capital: LOE → 1620, workover → 1615, overhead → "
            "1610; IDC/ICC → 6220, equipment → 6210.",
            books=_reclass(kind),
        ),
    }


def _kinds() -> Iterable[Kind]:
    yield UnknownPropertyKind(
        "unknown_property",
        "Intake",
        {
            "create": Option(
                "create",
                "Create the well (DOI row later)",
                "Book it to cost/revenue now; a DOI row must be added.",
                books=_create,
                leaves=_text("add a DOI row for {subject}"),
                holds_line=True,
            ),
            "suspense": Option(
                "suspense",
                "Hold in suspense",
                "JIB: Dr 1395 JIB Suspense; revenue: Cr 2310 Revenue Suspense, until the operator confirms.",
                leaves=_text("identify {subject} (held in suspense)"),
                holds_line=True,
                held=lambda f, e: [
                    {**line, "memo": f"{f['ref']} held in suspense as received"}
                    for line in _reversed(_create(f, e))
                ],
            ),
        },
    )
    yield Kind(
        "doi_sanity",
        "DOI sanity",
        {
            "correct": Option(
                "correct",
                "Correct the master (computed NRI)",
                "NRI = WI × (1 − royalty − ORRI) from the row's date, in force once the batch is approved; the well's difference held in suspense until then.",
                books=_sanity_correct,
                leaves=_text(
                    "correct the DOI master for {subject}; its difference is held in suspense"
                ),
                holds_line=True,
            ),
            "hold_well": Option(
                "hold_well",
                "Hold the well's documents in suspense",
                "Its JIB lines to 1395 and its checks to 2310, whole, until the master is corrected.",
                books=_hold_well,
                leaves=_text(
                    "correct the DOI master for {subject}; its documents are held in suspense"
                ),
                holds_line=True,
            ),
            "use_doi": Option(
                "use_doi",
                "Book with the DOI as recorded",
                "Override: use the row as it stands (say why); an open item to correct the master.",
                leaves=_text("correct the DOI master for {subject}"),
                override=True,
            ),
        },
    )
    yield Kind(
        "decimal_range",
        "Intake",
        {
            "suspense": Option(
                "suspense",
                "Hold the line in suspense",
                "Move it to 1395 (JIB) or 2310 (revenue) until corrected.",
                books=_decimal_hold,
                leaves=_text("ask for a corrected document for {subject} (held in suspense)"),
                holds_line=True,
            ),
            "as_received": Option(
                "as_received", "Book as received", "Book the line as the document states."
            ),
        },
    )
    yield Kind(
        "stub_math",
        "Intake",
        {
            "as_paid": Option("as_paid", "Book as paid", "Book the check's owner net as paid."),
            "hold": Option(
                "hold",
                "Hold the excess in suspense",
                "Book what the stub's figures support; the excess to 2310.",
                books=_stub_hold,
                leaves=_text("ask the payor about {subject}"),
            ),
            "claim": Option(
                "claim",
                "Claim the shortfall",
                "Book as paid and claim the shortfall (Dr 1215 / Cr 4090).",
                books=_stub_claim,
                leaves=_text("collect the claim on {subject} from the payor"),
            ),
            "ask_payor": Option(
                "ask_payor",
                "Book, ask the payor to correct",
                "Book as paid; ask the payor for a corrected stub.",
                leaves=_text("ask the payor about {subject}"),
            ),
        },
    )
    yield Kind(
        "missing_document",
        "Intake",
        {
            "accrue": Option(
                "accrue",
                "Rely on the accrual",
                "The month's accrual covers it; nothing else booked.",
            ),
            "request": Option(
                "request",
                "Request the document",
                "Ask the operator or payor for it; an open item.",
                leaves=lambda f, e, s: (
                    f"request the missing document: {f.get('document')} from {s}"
                ),
            ),
        },
    )
    yield Kind(
        "tb_unbalanced",
        "Intake",
        {
            "skip_flux": Option(
                "skip_flux",
                "Skip flux against that month",
                "Compare nothing against an unbalanced trial balance.",
            ),
            "use_anyway": Option(
                "use_anyway", "Use it for flux anyway", "Compare against it as exported."
            ),
        },
    )
    yield Kind(
        "wi_nri",
        "WI/NRI",
        {
            "accept": Option(
                "accept",
                "Accept operator's decimal, update DOI",
                "Book as billed and paid; a new DOI row from an effective date you give, with the catch-up.",
            ),
            "protest": Option(
                "protest",
                "Pay under protest (receivable)",
                "AP at billed; the difference Dr 1390; revenue as received.",
                books=_wi_jib("1390", "paid under protest"),
                leaves=_wi_text(
                    "dispute {cost} paid under protest with {op} ({subject}); receivable in 1390"
                ),
            ),
            "short_pay": Option(
                "short_pay",
                "Book at DOI, short-pay and dispute",
                "AP and cost at DOI; revenue as received; dispute the difference (JOA late-payment interest may apply).",
                books=_wi_jib("2110", "short-paid, disputed"),
                leaves=_wi_text("dispute {cost} short-paid with {op} ({subject})"),
            ),
            "suspense": Option(
                "suspense",
                "Book billed, difference in suspense",
                "AP at billed, cost at DOI, difference Dr 1395; revenue as received.",
                books=_wi_jib("1395", "held in JIB suspense"),
                leaves=_wi_text(
                    "confirm the interest in {subject} with {op}; {cost} in 1395 JIB Suspense"
                ),
            ),
            "defer": Option(
                "defer",
                "Defer, request ownership support",
                "Cost at DOI with the JIB difference to 1395, revenue at DOI with the stub's excess to 2310; the rest of the well as usual.",
                books=_wi_defer,
                leaves=_wi_text(
                    "request ownership support for {subject} from {op}; differences held (cost {cost} in 1395, revenue {revenue} in 2310)"
                ),
            ),
            "hold_revenue": Option(
                "hold_revenue",
                "Hold the revenue excess in suspense",
                "Revenue at DOI; the excess Cr 2310 until the division order is confirmed.",
                books=_wi_revenue_excess("held in revenue suspense"),
                leaves=_wi_text(
                    "confirm the division order for {subject}; revenue excess {revenue} in 2310"
                ),
            ),
            "claim": Option(
                "claim",
                "Claim the shortfall from the payor",
                "Revenue as received; the shortfall Dr 1215 / Cr 4090.",
                books=_wi_claim,
                leaves=_wi_text("collect the underpayment claim for {subject} ({revenue})"),
            ),
        },
    )
    yield EffectiveDateKind("doi_effective", "DOI effective date")
    yield Kind(
        "stub_underpaid",
        "Underpaid",
        {
            "book": Option(
                "book",
                "Book the catch-up receivable",
                "Dr 1210 / Cr 4090 for every month paid at the old NRI; the payor owes it on its next check.",
                books=_underpaid_book,
                leaves=lambda f, e, s: (
                    f"collect the catch-up receivable for {s} ({money(Decimal(f['total']))}, 1210)"
                ),
            ),
            "claim": Option(
                "claim",
                "Claim the shortfall",
                "Revenue as received; the shortfall Dr 1215 / Cr 4090.",
                books=_underpaid_claim,
                leaves=lambda f, e, s: (
                    f"collect the underpayment claim for {s} ({money(Decimal(f['total']))}, 1215)"
                ),
            ),
            "as_paid": Option(
                "as_paid", "Accept as paid", "Book the checks as paid; nothing claimed."
            ),
        },
    )
    for name, header in (
        ("line_math", "JIB line"),
        ("duplicate", "JIB duplicate"),
        ("stale_charge", "JIB stale charge"),
        ("afe_overrun", "AFE overrun"),
        ("overhead_rate", "Overhead vs JOA"),
    ):
        yield JibLineKind(name, header, _line_options(name), alike=True)
    yield Kind(
        "revenue_accrual",
        "Revenue accrual",
        {
            "accrue": Option(
                "accrue",
                "Accrue on operator volumes",
                "Dr 1210 / Dr 6110 / Cr revenue at operator volumes × net price × NRI.",
                books=_accrue_items("items", "operator volumes"),
                accrual=True,
            ),
            "last_actual": Option(
                "last_actual",
                "Accrue on the last actual check",
                "Repeat the last check's owner revenue for the month.",
                books=_accrue_items("last_actual", "last actual check"),
                accrual=True,
            ),
            "skip": Option(
                "skip", "Skip (logged)", "No accrual; the check books it when it comes."
            ),
        },
    )
    yield Kind(
        "missing_check",
        "Expected check",
        {
            "accrue": Option(
                "accrue",
                "Accrue again on operator volumes",
                "The month's accrual again (Dr 1210 / Dr 6110 / Cr revenue); the payor is asked for the check.",
                books=_accrue_items("items", "operator volumes, check still expected"),
                leaves=_text("ask the payor for the missing check: {subject}"),
                accrual=True,
            ),
            "last_actual": Option(
                "last_actual",
                "Accrue on the last actual check",
                "Accrue the last check's owner revenue for the month; the payor is asked for the check.",
                books=_accrue_items("last_actual", "last actual check, check still expected"),
                leaves=_text("ask the payor for the missing check: {subject}"),
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
                leaves=_text("ask the payor for the missing check: {subject}"),
            ),
        },
    )
    yield Kind(
        "severance",
        "Severance",
        alike=True,
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
                leaves=lambda f, e, s: (
                    f"claim the severance refund for {s} ({money(Decimal(f['total']))})"
                ),
            ),
        },
    )
    yield FluxSelectKind("flux_select", "Flux")
    yield Kind(
        "flux_item",
        "Flux",
        {
            "explain": Option(
                "explain",
                "Explain (as drafted)",
                "Clears the item with the drafted explanation; type your own under Other.",
                leaves=_flux_open,
            ),
            "adjust": Option(
                "adjust",
                "Adjust (describe the entry)",
                "An adjusting entry you describe next (accounts and amount), booked in the batch before the posting approval.",
            ),
            "escalate": Option(
                "escalate",
                "Escalate (to whom, next)",
                "Someone else explains it; the item stays open with them as its owner.",
            ),
        },
    )
    yield Kind(
        "flux_adjust",
        "Flux adjustment",
        {
            "adjust": Option(
                "adjust",
                "Adjust",
                "The adjusting entry described, booked in the batch before its posting approval.",
                books=_flux_adjustment,
                leaves=_adjust_open,
            ),
            "accrue": Option(
                "accrue",
                "Adjust (accrual, reversed next month)",
                "The adjusting entry described, to an accrual account: booked with this month's "
                "accruals before the posting approval, and reversed next month.",
                books=_flux_adjustment,
                leaves=_adjust_open,
                accrual=True,
            ),
        },
    )
    yield EscalateKind(
        "flux_escalate",
        "Flux escalation",
        {
            "escalate": Option(
                "escalate",
                "Escalate",
                "The item stays open with this person as its owner.",
                leaves=lambda f, e, s: (
                    f"explain the flux of {s} (escalated to "
                    f"{(f.get('names') or {}).get(e.get('to'), e.get('to')) or 'the controller'})"
                ),
            )
        },
    )
    yield Kind(
        "flux_basis",
        "Flux basis",
        {
            "use_posted": Option(
                "use_posted",
                "Trust closebot's posted books",
                "Compare with closebot's posted prior month; the export is taken as stale.",
            ),
            "investigate": Option(
                "investigate",
                "Compare with posted, reconcile the export",
                "Compare with closebot's posted prior month; an open item to reconcile tb_activity.csv with it.",
                leaves=_text(
                    "reconcile tb_activity.csv with closebot's posted {month} ({subject})"
                ),
            ),
        },
    )
    yield Kind(
        "carried_item",
        "Open item",
        {
            "settled": Option("settled", "Settled", "Closed: it is not carried again."),
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
            ),
        },
    )
    yield Kind(
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
    )


KINDS: dict[str, Kind] = {k.name: k for k in _kinds()}


# -- the functions the close calls ----------------------------------------------------


def option_label(kind: str, code: str, facts: dict[str, Any]) -> str:
    return KINDS[kind].label(code, facts)


def option_meaning(kind: str, code: str, facts: dict[str, Any] | None = None) -> str:
    return KINDS[kind].meaning(code, facts)


def book(
    kind: str,
    option: str,
    facts: dict[str, Any],
    extra: dict[str, Any],
    *,
    held: frozenset[str] = frozenset(),
) -> list[Line]:
    """The adjusting lines a decision books (balanced), on top of the documents as received."""
    return KINDS[kind].book(option, facts, extra, held=held)


def follow_up(
    kind: str, option: str, facts: dict[str, Any], extra: dict[str, Any], subject: str
) -> str | None:
    """What a decision leaves open (a dispute, a request, a suspense balance), or None."""
    return KINDS[kind].follow_up(option, facts, extra, subject)


def by_account(lines: list[Line]) -> list[dict[str, Any]]:
    """Debits and credits per account, debits first, in the order they appear."""
    acc: dict[str, list[Decimal]] = {}
    for line in lines:
        totals = acc.setdefault(line["account"], [ZERO, ZERO])
        totals[0] += line["debit"]
        totals[1] += line["credit"]
    return [{"account": a, "debit": d, "credit": c} for a, (d, c) in acc.items()]


def describe(lines: list[Line], names: dict[str, str] | None = None) -> str:
    """'Dr 1390 $1,200.00 / Cr 6210 $1,200.00' — what an option books, per account; with
    `names`, 'Dr 1390 JIB Receivable - Disputed $1,200.00 / …'."""
    if not lines:
        return "books nothing"
    totals = by_account(lines)

    def account(a: dict[str, Any]) -> str:
        name = (names or {}).get(a["account"])
        return f"{a['account']} {name}" if name else a["account"]

    return (
        ", ".join(f"Dr {account(a)} {money(a['debit'])}" for a in totals if a["debit"])
        + " / "
        + ", ".join(f"Cr {account(a)} {money(a['credit'])}" for a in totals if a["credit"])
    )

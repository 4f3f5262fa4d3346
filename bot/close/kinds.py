"""Exception kinds: the options each offers, what each option books, and the follow-up it
leaves open. Every booking is an adjusting entry on top of the documents as received, so
the journal shows the bill as billed and then the decision, each traceable.

Adding a kind: an entry in KINDS (options with labels) and, if an option books, a branch
in `book()`; `follow_up()` says what stays open.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.close.checks import REVENUE_ACCOUNTS
from bot.close.data import ZERO
from bot.close.master import money

Line = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    name: str
    header: str
    options: dict[str, tuple[str, str]]  # code → (label, what it means)


_LINE_OPTIONS = {
    "pay_as_billed": ("Pay as billed", "Book and pay the line as the operator billed it."),
    "short_pay": (
        "Short-pay and dispute",
        "Book and pay what the documents support; dispute the rest (JOA late-payment interest may apply).",
    ),
    "protest": (
        "Pay under protest (receivable)",
        "Pay as billed; hold the disputed amount as a receivable (1390).",
    ),
    "book_computed": (
        "Book the computed amount",
        "Book what the line's own figures give; the operator may rebill.",
    ),
}

KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind(
            "unknown_property",
            "Intake",
            {
                "create": (
                    "Create the well (DOI row later)",
                    "Book it to cost/revenue now; a DOI row must be added.",
                ),
                "suspense": (
                    "Hold in suspense",
                    "JIB: Dr 1395 JIB Suspense; revenue: Cr 2310 Revenue Suspense, until the operator confirms.",
                ),
            },
        ),
        Kind(
            "doi_sanity",
            "Intake",
            {
                "use_doi": (
                    "Book with the DOI as recorded",
                    "Use the row as it stands; an open item to correct the master.",
                ),
                "flag": (
                    "Book, and flag the well for review",
                    "Use the row, and list the well for the controller's review.",
                ),
            },
        ),
        Kind(
            "decimal_range",
            "Intake",
            {
                "suspense": (
                    "Hold the line in suspense",
                    "Move it to 1395 (JIB) or 2310 (revenue) until corrected.",
                ),
                "as_received": ("Book as received", "Book the line as the document states."),
            },
        ),
        Kind(
            "stub_math",
            "Intake",
            {
                "as_paid": ("Book as paid", "Book the check's owner net as paid."),
                "hold": (
                    "Hold the excess in suspense",
                    "Book what the stub's figures support; the excess to 2310.",
                ),
                "claim": (
                    "Claim the shortfall",
                    "Book as paid and claim the shortfall (Dr 1215 / Cr 4090).",
                ),
                "ask_payor": (
                    "Book, ask the payor to correct",
                    "Book as paid; ask the payor for a corrected stub.",
                ),
            },
        ),
        Kind(
            "missing_document",
            "Intake",
            {
                "accrue": (
                    "Rely on the accrual",
                    "The month's accrual covers it; nothing else booked.",
                ),
                "request": (
                    "Request the document",
                    "Ask the operator or payor for it; an open item.",
                ),
            },
        ),
        Kind(
            "tb_unbalanced",
            "Intake",
            {
                "skip_flux": (
                    "Skip flux against that month",
                    "Compare nothing against an unbalanced trial balance.",
                ),
                "use_anyway": ("Use it for flux anyway", "Compare against it as exported."),
            },
        ),
        Kind(
            "wi_nri",
            "WI/NRI",
            {
                "accept": (
                    "Accept operator's decimal, update DOI",
                    "Book as billed and paid; a new DOI row from an effective date you give, with the catch-up.",
                ),
                "protest": (
                    "Pay under protest (receivable)",
                    "AP at billed; the difference Dr 1390; revenue at DOI, excess to 2310.",
                ),
                "short_pay": (
                    "Book at DOI, short-pay and dispute",
                    "AP and cost at DOI; dispute the difference (JOA late-payment interest may apply).",
                ),
                "suspense": (
                    "Book billed, difference in suspense",
                    "AP at billed, cost at DOI, difference Dr 1395; revenue as received.",
                ),
                "defer": (
                    "Defer, request ownership support",
                    "Nothing of the well recognised this month: its bill to 1395, its revenue to 2310.",
                ),
                "hold_revenue": (
                    "Hold the revenue excess in suspense",
                    "Revenue at DOI; the excess Cr 2310 until the division order is confirmed.",
                ),
                "claim": (
                    "Claim the shortfall from the payor",
                    "Revenue as received; the shortfall Dr 1215 / Cr 4090.",
                ),
            },
        ),
        Kind("doi_effective", "DOI effective date", {}),
        Kind(
            "stub_underpaid",
            "Underpaid",
            {
                "claim": (
                    "Claim the shortfall",
                    "Revenue as received; the shortfall Dr 1215 / Cr 4090.",
                ),
                "as_paid": ("Accept as paid", "Book the checks as paid; nothing claimed."),
            },
        ),
        Kind("line_math", "JIB line", _LINE_OPTIONS),
        Kind("duplicate", "JIB duplicate", _LINE_OPTIONS),
        Kind("stale_charge", "JIB stale charge", _LINE_OPTIONS),
        Kind("afe_overrun", "AFE overrun", _LINE_OPTIONS),
        Kind("overhead_rate", "Overhead vs JOA", _LINE_OPTIONS),
        Kind(
            "revenue_accrual",
            "Revenue accrual",
            {
                "accrue": (
                    "Accrue on operator volumes",
                    "Dr 1210 / Dr 6110 / Cr revenue at operator volumes × net price × NRI.",
                ),
                "last_actual": (
                    "Accrue on the last actual check",
                    "Repeat the last check's owner revenue for the month.",
                ),
                "skip": ("Skip (logged)", "No accrual; the check books it when it comes."),
            },
        ),
        Kind(
            "severance",
            "Severance",
            {
                "accept": ("Accept as withheld", "Book the taxes as withheld."),
                "correct": (
                    "Ask the operator to correct",
                    "Book as withheld; ask for a corrected stub (open item).",
                ),
                "refund": (
                    "Claim a refund",
                    "Dr 1220 Severance Refund Receivable / Cr 6110 for our share.",
                ),
            },
        ),
        Kind("flux_select", "Flux", {}),
        Kind("flux_item", "Flux explanation", {}),
        Kind(
            "signoff",
            "Sign-off",
            {
                "carry_forward": (
                    "Carry open items forward",
                    "Each open item moves to next month with an owner and a due date; the period locks.",
                ),
                "block_lock": (
                    "Block the period lock",
                    "The period stays open until the items are cleared.",
                ),
            },
        ),
    )
}


def option_label(kind: str, code: str, facts: dict[str, Any]) -> str:
    if code.startswith("map:"):
        names = dict(tuple(c) for c in facts.get("candidates", []))
        return f"Map to {names.get(code[4:], code[4:])}"
    if kind == "doi_effective":
        return f"Effective {code}"
    if kind == "flux_select":
        return str(facts.get("labels", {}).get(code, code))[:75]
    if kind == "flux_item":
        return "Explain"
    return KINDS[kind].options[code][0]


def option_meaning(kind: str, code: str) -> str:
    if code.startswith("map:"):
        return "Book the line as this well's; its decimals are then checked against the DOI."
    if kind == "doi_effective":
        return "The new decimal applies from this date; months booked at the old one are caught up."
    if kind in ("flux_select", "flux_item"):
        return "Needs a written explanation in the close file."
    return KINDS[kind].options[code][1]


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
    if amount == ZERO:
        return []
    return [
        _line(dr, debit=amount, memo=memo, ref=ref, well_id=well_id),
        _line(cr, credit=amount, memo=memo, ref=ref, well_id=well_id),
    ]


def _revenue_to_suspense(stub: dict[str, Any], part: str, memo: str, well_id: str) -> list[Line]:
    """Move (part of) a stub line's booking into 2310: the revenue, severance and deductions it carried."""
    paid, doi = stub["paid"], stub["at_doi"]
    if part == "whole":
        rev, tax, ded, net = (Decimal(paid[k]) for k in ("revenue", "taxes", "deductions", "net"))
    else:
        rev, tax, ded, net = (
            Decimal(paid[k]) - Decimal(doi[k]) for k in ("revenue", "taxes", "deductions", "net")
        )
    if net <= 0 and part != "whole":
        return []
    out = [_line(stub["account"], debit=rev, memo=memo, ref=stub["ref"], well_id=well_id)]
    if tax:
        out.append(_line("6110", credit=tax, memo=memo, ref=stub["ref"], well_id=well_id))
    if ded:
        out.append(_line("6130", credit=ded, memo=memo, ref=stub["ref"], well_id=well_id))
    out.append(_line("2310", credit=net, memo=memo, ref=stub["ref"], well_id=well_id))
    return out


def book(kind: str, option: str, facts: dict[str, Any], extra: dict[str, Any]) -> list[Line]:
    """The adjusting lines a decision books (balanced), on top of the documents as received."""
    well = str(facts.get("well_id") or "")
    if kind == "wi_nri":
        name = facts["well_name"]
        out: list[Line] = []
        for j in facts["jib_lines"]:
            diff = Decimal(j["billed"]) - Decimal(j["at_doi"])
            memo = f"{name}: {j['invoice']} {j['category']} WI difference"
            if option == "protest":
                out += _pair(
                    "1390", j["account"], diff, memo + " paid under protest", j["ref"], well
                )
            elif option == "short_pay":
                out += _pair(
                    "2110", j["account"], diff, memo + " short-paid, disputed", j["ref"], well
                )
            elif option == "suspense":
                out += _pair(
                    "1395", j["account"], diff, memo + " held in JIB suspense", j["ref"], well
                )
            elif option == "defer":
                out += _pair(
                    "1395",
                    j["account"],
                    Decimal(j["billed"]),
                    f"{name}: {j['invoice']} held pending ownership support",
                    j["ref"],
                    well,
                )
        for s in facts["stub_lines"]:
            memo = f"{name}: check {s['check']} {s['product']} NRI difference"
            if option in ("protest", "short_pay", "hold_revenue"):
                out += _revenue_to_suspense(
                    s, "difference", memo + " held in revenue suspense", well
                )
            elif option == "defer":
                out += _revenue_to_suspense(
                    s,
                    "whole",
                    f"{name}: check {s['check']} {s['product']} held pending ownership support",
                    well,
                )
            elif option == "claim":
                shortfall = Decimal(s["at_doi"]["net"]) - Decimal(s["paid"]["net"])
                if shortfall > 0:
                    out += _pair(
                        "1215", "4090", shortfall, memo + " underpayment claimed", s["ref"], well
                    )
        return out
    if kind == "doi_effective":
        lines = extra.get("catch_up") or facts.get("catch_up_by_date", {}).get(option, [])
        return [
            *(
                line
                for c in lines
                for line in _pair(
                    c["debit"], c["credit"], Decimal(c["amount"]), c["memo"], c.get("ref", ""), well
                )
            )
        ]
    if kind in ("line_math", "duplicate", "stale_charge", "afe_overrun", "overhead_rate"):
        out = []
        for item in facts["lines"]:
            amount = Decimal(item["amount"])
            memo = f"{facts.get('invoice') or facts.get('afe_no') or ''} {kind.replace('_', ' ')}"
            if option == "short_pay":
                out += _pair(
                    "2110",
                    item["account"],
                    amount,
                    memo + ": short-paid, disputed",
                    item["ref"],
                    item["well_id"],
                )
            elif option == "protest":
                out += _pair(
                    "1390",
                    item["account"],
                    amount,
                    memo + ": paid under protest",
                    item["ref"],
                    item["well_id"],
                )
            elif option == "book_computed":
                out += _pair(
                    item["account"],
                    "2110",
                    -amount,
                    memo + ": booked at the computed amount",
                    item["ref"],
                    item["well_id"],
                )
        return out
    if kind == "unknown_property" and option == "create":
        amount = Decimal(facts["amount"])
        if facts["document"] == "jib":
            return _pair(
                facts["account"],
                "1395",
                amount,
                f"{facts['ref']} booked to a new well (DOI row to add)",
                facts["ref"],
            )
        return _pair(
            "2310",
            "4010",
            amount,
            f"{facts['ref']} booked to a new well (DOI row to add)",
            facts["ref"],
        )
    if kind == "decimal_range" and option == "suspense":
        amount = Decimal(facts["amount"])
        if facts["document"] == "jib":
            return _pair(
                "1395",
                facts["account"],
                amount,
                f"{facts['ref']} held: decimal out of range",
                facts["ref"],
            )
        return _pair(
            "4010", "2310", amount, f"{facts['ref']} held: decimal out of range", facts["ref"]
        )
    if kind == "stub_math":
        diff = Decimal(facts["difference"])
        account = REVENUE_ACCOUNTS[facts["product"]]
        if option == "hold" and diff > 0:
            return _pair(
                account,
                "2310",
                diff,
                f"{facts['ref']}: paid above the stub's own figures, held",
                facts["ref"],
            )
        if option == "claim" and diff < 0:
            return _pair(
                "1215",
                "4090",
                -diff,
                f"{facts['ref']}: paid below the stub's own figures, claimed",
                facts["ref"],
            )
        return []
    if kind == "stub_underpaid" and option == "claim":
        out = []
        for item in facts["lines"]:
            out += _pair(
                "1215",
                "4090",
                Decimal(item["amount"]),
                f"{item['ref']}: underpaid at the new NRI, claimed",
                item["ref"],
                well,
            )
        return out
    if kind == "severance" and option == "refund":
        total = Decimal(facts["total"])
        return _pair(
            "1220",
            "6110",
            total,
            f"{facts['items'][0]['check']}: severance refund claimed (state rate)",
            facts["items"][0]["ref"],
            well,
        )
    return []


def follow_up(
    kind: str, option: str, facts: dict[str, Any], extra: dict[str, Any], subject: str
) -> str | None:
    """What a decision leaves open (a dispute, a request, a suspense balance), or None."""
    if kind == "wi_nri":
        op = facts["operator"]
        diff = money(Decimal(facts["jib_difference"]))
        return {
            "protest": f"dispute {diff} paid under protest with {op} ({subject}); receivable in 1390",
            "short_pay": f"dispute {diff} short-paid with {op} ({subject})",
            "suspense": f"confirm the interest in {subject} with {op}; {diff} in 1395 JIB Suspense",
            "defer": f"request ownership support for {subject} from {op}; the well's documents are held in suspense",
            "hold_revenue": f"confirm the division order for {subject}; revenue excess in 2310",
            "claim": f"collect the underpayment claim for {subject}",
        }.get(option)
    if kind in (
        "line_math",
        "duplicate",
        "stale_charge",
        "afe_overrun",
        "overhead_rate",
    ) and option in ("short_pay", "protest"):
        return f"dispute {money(abs(Decimal(facts.get('amount') or facts.get('share') or facts.get('difference') or '0')))} with the operator ({subject})"
    if kind == "unknown_property":
        return {
            "create": f"add a DOI row for {subject}",
            "suspense": f"identify {subject} (held in suspense)",
        }.get(option)
    if kind == "stub_math" and option in ("hold", "claim", "ask_payor"):
        return f"ask the payor about {subject}"
    if kind == "missing_document" and option == "request":
        return f"request the missing document: {facts.get('document')} from {subject}"
    if kind == "stub_underpaid" and option == "claim":
        return f"collect the underpayment claim for {subject} ({money(Decimal(facts['total']))})"
    if kind == "severance" and option in ("correct", "refund"):
        return f"{'claim the severance refund' if option == 'refund' else 'ask for a corrected stub'} for {subject} ({money(Decimal(facts['total']))})"
    if kind == "doi_sanity":
        return f"correct the DOI master for {subject}"
    if kind == "flux_item" and not extra.get("explanation"):
        return f"explain the flux of {subject}"
    return None


def describe(lines: list[Line]) -> str:
    """'Dr 1390 $1,200.00 / Cr 6210 $1,200.00' — what an option books, per account."""
    if not lines:
        return "books nothing"
    dr: dict[str, Decimal] = {}
    cr: dict[str, Decimal] = {}
    for line in lines:
        if line["debit"]:
            dr[line["account"]] = dr.get(line["account"], ZERO) + line["debit"]
        if line["credit"]:
            cr[line["account"]] = cr.get(line["account"], ZERO) + line["credit"]
    return (
        ", ".join(f"Dr {a} {money(v)}" for a, v in dr.items())
        + " / "
        + ", ".join(f"Cr {a} {money(v)}" for a, v in cr.items())
    )

"""The intake kinds: the documents as received (a line of an unknown well, a decimal out of
range, a stub whose own figures do not add up, a missing document, an unbalanced trial
balance) and a DOI master row that fails its own arithmetic. Their checks are in
`bot/close/steps/intake.py`."""

from __future__ import annotations

from dataclasses import fields, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from bot.close.checks import REVENUE_ACCOUNTS
from bot.close.doi_master import with_change
from bot.close.kinds.base import Deciding, Kind, Option
from bot.close.kinds.entries import (
    Facts,
    Line,
    line,
    pair,
    revenue_to_suspense,
    reversed_lines,
    text,
    well,
    wi_jib,
    wi_revenue_excess,
)
from bot.core.tools import ToolError

if TYPE_CHECKING:
    from bot.close.data import DoiRow
    from bot.close.ledger import Ledger
    from bot.store import QuestionRecord


class UnknownPropertyKind(Kind):
    """Its options include "map:WELL" for each of the operator's wells."""

    dynamic = (
        "map:WELL",
        "Map to WELL",
        "Nothing more: the line is booked as that well's (its decimals are then checked).",
        "",
    )

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
        option = super().option(code, facts)
        if code == "suspense" and facts.get("document") in ("jib", "revenue"):
            # the entry shows the one side that applies to this document (Kind.entry)
            return replace(option, meaning="Held in suspense until the operator confirms.")
        return option


def _create(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    if facts.get("settled"):
        return []
    memo = f"{facts['ref']} booked to a new well (DOI row to add)"
    if facts["document"] == "jib":
        return pair(facts["account"], "1395", Decimal(facts["amount"]), memo, facts["ref"])
    parts = facts.get("parts")
    if not parts:  # recorded before the stub's parts were kept
        return pair(
            "2310",
            facts.get("revenue_account") or "4010",
            Decimal(facts["amount"]),
            memo,
            facts["ref"],
        )
    out = [line("2310", debit=Decimal(parts["net"]), memo=memo, ref=facts["ref"])]
    if Decimal(parts["taxes"]):
        out.append(line("6110", debit=Decimal(parts["taxes"]), memo=memo, ref=facts["ref"]))
    if Decimal(parts["deductions"]):
        out.append(line("6130", debit=Decimal(parts["deductions"]), memo=memo, ref=facts["ref"]))
    out.append(
        line(
            facts["revenue_account"], credit=Decimal(parts["revenue"]), memo=memo, ref=facts["ref"]
        )
    )
    return out


def _decimal_hold(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    if facts.get("settled") or facts.get("unknown_well"):
        return []  # an unknown well's line is in suspense as received
    memo = f"{facts['ref']} held: decimal out of range"
    if facts["document"] == "jib":
        return pair(
            "1395", facts["account"], Decimal(facts["amount"]), memo, facts["ref"], well(facts)
        )
    parts = facts.get("parts")
    if not parts:
        return pair(
            facts.get("revenue_account") or "4010",
            "2310",
            Decimal(facts["amount"]),
            memo,
            facts["ref"],
        )
    stub = {"paid": parts, "account": facts["revenue_account"], "ref": facts["ref"]}
    return revenue_to_suspense(stub, "whole", memo, well(facts))


def _stub_hold(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    diff = Decimal(facts["difference"])
    if facts.get("settled") or diff <= 0:
        return []
    account = facts.get("account") or REVENUE_ACCOUNTS[facts["product"]]
    return pair(
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
    return pair(
        "1215",
        "4090",
        -diff,
        f"{facts['ref']}: paid below the stub's own figures, claimed",
        facts["ref"],
    )


def _sanity_correct(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    """The well's documents at the corrected row: each JIB line's difference from the DOI WI to
    1395, each stub's excess over the computed NRI to 2310."""
    if not facts.get("well_name"):
        return []
    return wi_jib("1395", "held until the DOI master is corrected")(
        facts, extra
    ) + wi_revenue_excess("held until the DOI master is corrected")(facts, extra)


def _hold_well(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    out: list[Line] = []
    name = facts.get("well_name", "")
    for j in facts.get("jib_lines", []):
        memo = f"{name}: {j['invoice']} {j['category']} held until the DOI master is corrected"
        out += pair("1395", j["account"], Decimal(j["billed"]), memo, j["ref"], well(facts))
    for s in facts.get("stub_lines", []):
        memo = f"{name}: check {s['check']} {s['product']} sales {s['sale_month']} held until the DOI master is corrected"
        out += revenue_to_suspense(s, "whole", memo, well(facts))
    return out


def propose_doi(
    ledger: Ledger, run_id: str, well_id: str, new: DoiRow, effective: str, q: QuestionRecord
) -> None:
    """A changed DOI row proposed by a decision: in force once the batch is approved and posted."""
    row = {
        k: (str(v) if isinstance(v, Decimal) else v)
        for k, v in ((f.name, getattr(new, f.name)) for f in fields(new))
        if k not in ("line", "source")
    }
    ledger.propose_doi(
        run_id,
        well_id=well_id,
        row=row,
        effective_from=effective,
        question_id=q.id,
        decided_by=q.answered_by,
    )


class DoiSanityKind(Kind):
    """Correcting the master writes a closebot DOI row (the computed NRI) from the broken
    row's date."""

    def on_decided(self, d: Deciding) -> None:
        if d.code == "correct":
            d.extra = {**d.extra, **_correct_doi(d)}


def _correct_doi(d: Deciding) -> dict[str, Any]:
    """DOI sanity, corrected: a closebot row from the broken row's date with the computed NRI,
    in force once the batch is approved and posted (as every DOI change)."""
    facts = d.facts
    close = d.desk.close_of(d.ctx)
    base = next(
        (
            r
            for r in close.data.doi
            if r.well_id == facts["well_id"] and r.effective_from == facts["effective_from"]
        ),
        None,
    )
    if base is None:
        raise ToolError(f"{facts['well_id']} has no DOI row from {facts['effective_from']}")
    nri = Decimal(facts["computed_nri"])
    new = with_change(base, wi=base.wi, nri=nri, effective_from=base.effective_from)
    propose_doi(d.ledger, d.ctx.run_id, base.well_id, new, base.effective_from, d.question)
    return {"effective_from": base.effective_from, "wi": str(base.wi), "nri": str(nri)}


UNKNOWN_PROPERTY = UnknownPropertyKind(
    "unknown_property",
    "Intake",
    {
        "create": Option(
            "create",
            "Create the well (DOI row later)",
            "Book it to cost/revenue now; a DOI row must be added.",
            books=_create,
            accounts="JIB: Dr cost / Cr 1395 (the document held it in 1395); revenue: Dr 2310, 6110, 6130 / Cr revenue",
            leaves=text("add a DOI row for {subject}"),
            holds_line=True,
        ),
        "suspense": Option(
            "suspense",
            "Hold in suspense",
            "JIB: Dr 1395 JIB Suspense; revenue: Cr 2310 Revenue Suspense, until the operator confirms.",
            leaves=text("identify {subject} (held in suspense)"),
            accounts="nothing more: the document sits in 1395 (JIB) or 2310 (revenue) as received",
            holds_line=True,
            held=lambda f, e: [
                {**x, "memo": f"{f['ref']} held in suspense as received"}
                for x in reversed_lines(_create(f, e))
            ],
        ),
    },
)
DOI_SANITY = DoiSanityKind(
    "doi_sanity",
    "DOI sanity",
    {
        "correct": Option(
            "correct",
            "Correct the master (computed NRI)",
            "NRI = WI × (1 − royalty − ORRI) from the row's date, in force once the batch is approved; the well's difference held in suspense until then.",
            books=_sanity_correct,
            accounts="each JIB line's difference to the computed row Dr 1395 / Cr cost; each stub's excess over the computed NRI Dr revenue / Cr 6110, 6130, 2310",
            leaves=text("correct the DOI master for {subject}; its difference is held in suspense"),
            holds_line=True,
            sets_off=True,
        ),
        "hold_well": Option(
            "hold_well",
            "Hold the well's documents in suspense",
            "Its JIB lines to 1395 and its checks to 2310, whole, until the master is corrected.",
            books=_hold_well,
            accounts="each JIB line whole Dr 1395 / Cr cost; each stub whole Dr revenue / Cr 6110, 6130, 2310",
            leaves=text("correct the DOI master for {subject}; its documents are held in suspense"),
            holds_line=True,
        ),
        "use_doi": Option(
            "use_doi",
            "Book with the DOI as recorded",
            "Override: use the row as it stands (say why); an open item to correct the master.",
            leaves=text("correct the DOI master for {subject}"),
            override=True,
        ),
    },
)
DECIMAL_RANGE = Kind(
    "decimal_range",
    "Intake",
    {
        "suspense": Option(
            "suspense",
            "Hold the line in suspense",
            "Move it to 1395 (JIB) or 2310 (revenue) until corrected.",
            books=_decimal_hold,
            accounts="JIB: the line whole Dr 1395 / Cr cost; stub: whole Dr revenue / Cr 6110, 6130, 2310",
            leaves=text("ask for a corrected document for {subject} (held in suspense)"),
            holds_line=True,
        ),
        "as_received": Option(
            "as_received", "Book as received", "Book the line as the document states."
        ),
    },
)
STUB_MATH = Kind(
    "stub_math",
    "Intake",
    {
        "as_paid": Option("as_paid", "Book as paid", "Book the check's owner net as paid."),
        "hold": Option(
            "hold",
            "Hold the excess in suspense",
            "Book what the stub's figures support; the excess to 2310.",
            books=_stub_hold,
            accounts="the excess over the stub's own figures Dr revenue / Cr 2310",
            leaves=text("ask the payor about {subject}"),
        ),
        "claim": Option(
            "claim",
            "Claim the shortfall",
            "Book as paid and claim the shortfall (Dr 1215 / Cr 4090).",
            books=_stub_claim,
            accounts="the shortfall Dr 1215 / Cr 4090",
            leaves=text("collect the claim on {subject} from the payor"),
        ),
        "ask_payor": Option(
            "ask_payor",
            "Book, ask the payor to correct",
            "Book as paid; ask the payor for a corrected stub.",
            leaves=text("ask the payor about {subject}"),
        ),
    },
)
MISSING_DOCUMENT = Kind(
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
            leaves=lambda f, e, s: f"request the missing document: {f.get('document')} from {s}",
        ),
    },
)
TB_UNBALANCED = Kind(
    "tb_unbalanced",
    "Intake",
    {
        "skip_flux": Option(
            "skip_flux",
            "Skip flux against that month",
            "Compare nothing against an unbalanced trial balance.",
            skips_flux=True,
        ),
        "use_anyway": Option(
            "use_anyway", "Use it for flux anyway", "Compare against it as exported."
        ),
    },
)

KINDS = (UNKNOWN_PROPERTY, DOI_SANITY, DECIMAL_RANGE, STUB_MATH, MISSING_DOCUMENT, TB_UNBALANCED)

"""The close's checks, step by step: each finds exceptions (a `Finding`) with the numbers,
the documents and a recommendation computed from the data.

Adding a check: write a function here that yields Findings of a new kind, register it in
CHECKS under its step, and declare the kind's options and what each books in kinds.py.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from bot.close.data import (
    ZERO,
    CloseData,
    DoiRow,
    JibLine,
    RevenueLine,
    add_months,
    cents,
    months_between,
)
from bot.close.master import (
    ACCOUNT_NAMES,
    ACCRUAL_WINDOW,
    FLUX_AMOUNT,
    FLUX_PERCENT,
    MATERIALITY,
    SEVERANCE_TOLERANCE,
    STALE_MONTHS,
    TOLERANCE,
    Master,
    dec8,
    money,
    percent,
    severance_due,
    signed_money,
    trailing_months,
)

STEPS = (
    "Intake",
    "WI/NRI validation",
    "JIB reconciliation & LOE accrual",
    "Revenue accrual",
    "Severance check",
    "Journal entries",
    "Flux review",
    "Sign-off",
)
REVENUE_ACCOUNTS = {"oil": "4010", "gas": "4020", "ngl": "4030"}
COST_ACCOUNTS = {
    "LOE": "6210",
    "Workover": "6220",
    "Overhead": "6250",
    "IDC": "1610",
    "ICC": "1615",
    "TDC": "1620",
    "TCC": "1620",
    "LWE": "1620",
}


def cost_account(line: JibLine) -> str:
    if line.cost_category == "Overhead" and line.afe_no:
        return "1610"  # drilling overhead under an AFE is capitalised with the IDC
    return COST_ACCOUNTS[line.cost_category]


@dataclass
class Finding:
    """An exception a person decides: what, the numbers, and what the data recommends."""

    kind: str
    key: str
    step: str
    subject: str
    summary: str
    question: str
    recommended: str
    reasoning: str
    facts: dict[str, Any] = field(default_factory=dict)
    options: list[str] | None = None  # option codes offered (default: all of the kind's)
    well_id: str | None = None
    amount: Decimal = ZERO

    @property
    def id(self) -> str:
        """kind:key, safe to quote as [ref …] in a question."""
        return f"{self.kind}:" + re.sub(r"[^A-Za-z0-9_.:\-]", "-", self.key)


@dataclass
class Close:
    """One run's view of a period: the data, the DOI in force, and the decisions so far."""

    data: CloseData
    master: Master
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)  # finding id → decision

    @property
    def period(self) -> str:
        return self.data.period

    def decided(self, finding_id: str) -> dict[str, Any] | None:
        d = self.decisions.get(finding_id)
        return d if d and d.get("status") == "resolved" else None

    # -- documents with their wells resolved -------------------------------

    def _well_of(self, kind: str, line: JibLine | RevenueLine, operator: str) -> str | None:
        decision = self.decided(f"unknown_property:{kind}:{line.line}")
        if decision and decision["option"].startswith("map:"):
            return str(decision["option"][4:])
        if line.well_id and self.master.latest(line.well_id):
            return line.well_id
        if not line.well_id and line.property_no:
            return self.master.by_property(operator, line.property_no)
        return None

    def jib(self) -> list[tuple[JibLine, str | None]]:
        return [(j, self._well_of("jib", j, j.operator)) for j in self.data.jib]

    def revenue(self) -> list[tuple[RevenueLine, str | None]]:
        out = []
        for r in self.data.revenue:
            operator = ""
            out.append((r, self._well_of("revenue", r, operator)))
        return out

    def known_jib(self) -> list[tuple[JibLine, DoiRow]]:
        out = []
        for j, well in self.jib():
            row = self.master.in_force(well, j.service_month) if well else None
            if row is not None:
                out.append((replace(j, well_id=row.well_id), row))
        return out

    def known_revenue(self) -> list[tuple[RevenueLine, DoiRow]]:
        out = []
        for r, well in self.revenue():
            row = self.master.in_force(well, r.sale_month) if well else None
            if row is not None:
                out.append((replace(r, well_id=row.well_id), row))
        return out


def stub_net(r: RevenueLine, decimal: Decimal) -> Decimal:
    return cents((r.gross_value - r.gross_taxes - r.gross_deductions) * decimal)


def stub_parts(
    r: RevenueLine, decimal: Decimal, *, net: Decimal | None = None
) -> dict[str, Decimal]:
    """Owner's revenue (credit), severance and deductions (debits) and net cash of a stub line."""
    taxes = cents(r.gross_taxes * decimal)
    deductions = cents(r.gross_deductions * decimal)
    net = stub_net(r, decimal) if net is None else net
    return {
        "revenue": net + taxes + deductions,
        "taxes": taxes,
        "deductions": deductions,
        "net": net,
    }


# -- step 1: intake ------------------------------------------------------------


def intake(close: Close) -> Iterator[Finding]:
    master, data = close.master, close.data
    for kind, lines in (("jib", close.jib()), ("revenue", close.revenue())):
        for line, well in lines:
            if well is not None:
                continue
            doc = (
                f"{line.invoice_no} (service {line.service_month})"
                if isinstance(line, JibLine)
                else f"check {line.check_no} (sale {line.sale_month}, {line.product})"
            )
            amount = line.owner_net_amount if isinstance(line, JibLine) else line.owner_net_value
            operator = line.operator if isinstance(line, JibLine) else line.payor
            candidates = master.operator_wells(operator) if isinstance(line, JibLine) else []
            what = f"well {line.well_id}" if line.well_id else f"property {line.property_no}"
            yield Finding(
                kind="unknown_property",
                key=f"{kind}:{line.line}",
                step=STEPS[0],
                subject=f"{what} on {doc}",
                summary=f"{what} is not in the DOI master ({money(amount)})",
                question=(
                    f"{kind}.csv line {line.line}: {doc} from {operator} names {what}, which is "
                    f"not in the DOI master. Owner net {money(amount)}. Map it to one of the "
                    "operator's wells, create the well (DOI row later), or hold it in suspense?"
                ),
                recommended="suspense",
                reasoning=(
                    "Nothing in the DOI or the operator's other documents ties this line to a "
                    "well we own; suspense keeps it off every well until the operator confirms."
                ),
                facts={
                    "document": kind,
                    "ref": f"{kind}.csv:{line.line}",
                    "operator": operator,
                    "amount": str(amount),
                    "account": cost_account(line) if isinstance(line, JibLine) else "",
                    "candidates": [[w, master.name(w)] for w in candidates],
                },
                options=[*[f"map:{w}" for w in candidates][:8], "create", "suspense"],
                amount=amount,
            )
    for row in data.doi:
        problem = doi_problem(row)
        if problem:
            yield Finding(
                kind="doi_sanity",
                key=f"{row.well_id}:{row.effective_from}",
                step=STEPS[0],
                subject=row.well_name,
                summary=problem,
                question=f"doi.csv line {row.line}: {row.well_name} ({row.well_id}): {problem}. How should this well be booked?",
                recommended="use_doi",
                reasoning="The DOI row is what the company's records say; book with it and have the master corrected.",
                facts={"ref": f"doi.csv:{row.line}", "well_id": row.well_id},
                well_id=row.well_id,
            )
    for kind, docs in (("jib", data.jib), ("revenue", data.revenue)):
        for line in docs:
            if ZERO < line.owner_decimal <= 1:
                continue
            amount = line.owner_net_amount if isinstance(line, JibLine) else line.owner_net_value
            yield Finding(
                kind="decimal_range",
                key=f"{kind}:{line.line}",
                step=STEPS[0],
                subject=f"{kind}.csv line {line.line}",
                summary=f"owner decimal {line.owner_decimal} is outside (0, 1]",
                question=(
                    f"{kind}.csv line {line.line}: owner decimal {line.owner_decimal} is outside (0, 1] "
                    f"(owner net {money(amount)}). Hold the line in suspense or book it as received?"
                ),
                recommended="suspense",
                reasoning="No interest can be zero, negative or more than the whole; the document is wrong.",
                facts={
                    "ref": f"{kind}.csv:{line.line}",
                    "document": kind,
                    "amount": str(amount),
                    "account": cost_account(line) if isinstance(line, JibLine) else "",
                },
                amount=amount,
            )
    for r in data.revenue:
        value = cents(r.gross_volume * r.price)
        net = stub_net(r, r.owner_decimal)
        if value == r.gross_value and net == r.owner_net_value:
            continue
        diff = r.owner_net_value - net
        parts = []
        if value != r.gross_value:
            parts.append(f"volume × price = {money(value)} vs value {money(r.gross_value)}")
        if net != r.owner_net_value:
            parts.append(
                f"(value − taxes − deductions) × {dec8(r.owner_decimal)} = {money(net)} vs paid {money(r.owner_net_value)} ({signed_money(diff)})"
            )
        yield Finding(
            kind="stub_math",
            key=str(r.line),
            step=STEPS[0],
            subject=f"check {r.check_no} line {r.line}",
            summary="; ".join(parts),
            question=f"revenue.csv line {r.line}: check {r.check_no} ({r.payor}, sale {r.sale_month}, {r.product}): "
            + "; ".join(parts)
            + ". How should it be booked?",
            recommended="hold" if diff > 0 else ("claim" if diff < 0 else "as_paid"),
            reasoning=(
                "The stub's own arithmetic does not hold: book what its figures support and hold the rest until the payor explains."
                if diff
                else "The net agrees; only the volume × price line is off, which changes nothing we book."
            ),
            facts={
                "ref": f"revenue.csv:{r.line}",
                "paid": str(r.owner_net_value),
                "computed": str(net),
                "difference": str(diff),
                "product": r.product,
            },
            options=["as_paid", "hold"]
            if diff > 0
            else (["as_paid", "claim"] if diff < 0 else ["as_paid", "ask_payor"]),
            well_id=r.well_id or None,
            amount=abs(diff),
        )
    expected_service = add_months(close.period, -2)
    billed_now = {j.operator for j in data.jib}
    for operator in sorted(
        {h.operator for h in data.jib_history if h.service_month == expected_service} - billed_now
    ):
        yield _missing(
            "jib",
            operator,
            f"{operator} billed service month {expected_service} but sent no JIB for {close.data.service_month}",
        )
    if not data.jib:
        yield _missing(
            "jib",
            "all",
            f"jib.csv has no lines: no JIB for service month {close.data.service_month}",
        )
    expected_sale = add_months(close.period, -3)
    paid_now = {r.payor for r in data.revenue}
    for payor in sorted(
        {h.payor for h in data.revenue_history if h.sale_month == expected_sale} - paid_now
    ):
        yield _missing(
            "revenue",
            payor,
            f"{payor} paid sale month {expected_sale} but sent no check this month",
        )
    if not data.revenue:
        yield _missing("revenue", "all", "revenue.csv has no lines: no checks this month")
    by_month: dict[str, list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
    for t in data.tb_activity:
        by_month[t.month][0] += t.debit
        by_month[t.month][1] += t.credit
    for month, (dr, cr) in sorted(by_month.items()):
        if dr != cr:
            yield Finding(
                kind="tb_unbalanced",
                key=month,
                step=STEPS[0],
                subject=f"trial balance activity {month}",
                summary=f"debits {money(dr)} ≠ credits {money(cr)} ({signed_money(dr - cr)})",
                question=f"tb_activity.csv: {month} activity does not balance: debits {money(dr)} vs credits {money(cr)} ({signed_money(dr - cr)}). The flux review compares against it.",
                recommended="skip_flux",
                reasoning="An unbalanced trial balance is not a reliable base for flux; compare nothing against it until it is re-exported.",
                facts={"month": month},
                amount=abs(dr - cr),
            )


def _missing(document: str, who: str, text: str) -> Finding:
    return Finding(
        kind="missing_document",
        key=f"{document}:{who}",
        step=STEPS[0],
        subject=who,
        summary=text,
        question=text + ". What should happen?",
        recommended="accrue" if document == "jib" else "request",
        reasoning=(
            "The LOE accrual covers an unbilled month; ask the operator for the statement."
            if document == "jib"
            else "The revenue accrual covers production without a check; ask the payor."
        ),
        facts={"document": document},
    )


def doi_problem(row: DoiRow) -> str | None:
    if not (ZERO < row.nri <= row.wi <= 1):
        return f"NRI {dec8(row.nri)} and WI {dec8(row.wi)} break 0 < NRI ≤ WI ≤ 1"
    implied = row.wi * (1 - row.royalty - row.orri)
    if abs(implied - row.nri) > TOLERANCE:
        return (
            f"NRI {dec8(row.nri)} ≠ WI × (1 − royalty − ORRI) = {dec8(row.wi)} × "
            f"(1 − {dec8(row.royalty)} − {dec8(row.orri)}) = {dec8(implied)}"
        )
    return None


# -- step 2: WI/NRI --------------------------------------------------------------


def interests(close: Close) -> Iterator[Finding]:
    jib_by_well: dict[str, list[tuple[JibLine, DoiRow]]] = defaultdict(list)
    rev_by_well: dict[str, list[tuple[RevenueLine, DoiRow]]] = defaultdict(list)
    for j, row in close.known_jib():
        jib_by_well[j.well_id].append((j, row))
    for r, row in close.known_revenue():
        rev_by_well[r.well_id].append((r, row))
    for well_id in sorted(set(jib_by_well) | set(rev_by_well)):
        jibs = [
            (j, row) for j, row in jib_by_well[well_id] if abs(j.owner_decimal - row.wi) > TOLERANCE
        ]
        stubs = [
            (r, row)
            for r, row in rev_by_well[well_id]
            if abs(r.owner_decimal - row.nri) > TOLERANCE
        ]
        if not jibs and not stubs:
            continue
        yield _wi_finding(close, well_id, jibs, stubs)


def _wi_finding(
    close: Close,
    well_id: str,
    jibs: list[tuple[JibLine, DoiRow]],
    stubs: list[tuple[RevenueLine, DoiRow]],
) -> Finding:
    row = (jibs or stubs)[0][1]
    jib_dec = jibs[0][0].owner_decimal if jibs else None
    stub_dec = stubs[0][0].owner_decimal if stubs else None
    billed = sum((j.owner_net_amount for j, _ in jibs), ZERO)
    at_doi = sum((cents(j.gross_amount * r.wi) for j, r in jibs), ZERO)
    paid = sum((r.owner_net_value for r, _ in stubs), ZERO)
    paid_doi = sum((stub_net(r, d.nri) for r, d in stubs), ZERO)
    if jibs and stubs:
        implied = jib_dec * row.nri / row.wi if row.wi else ZERO  # type: ignore[operator]
        pattern = "both_consistent" if abs(implied - stub_dec) <= TOLERANCE else "both_inconsistent"  # type: ignore[operator]
    else:
        pattern = "jib_only" if jibs else "stub_only"
    underpaid = bool(stubs) and paid < paid_doi
    last_billed = _last_billed_decimal(close.data, well_id)
    parts = [
        f"{row.well_name} ({row.state}, {row.operator}), DOI WI {dec8(row.wi)} / NRI {dec8(row.nri)} from {row.effective_from}."
    ]
    if jibs:
        invoices = ", ".join(sorted({j.invoice_no for j, _ in jibs}))
        lines = "; ".join(
            f"{j.cost_category} {money(j.gross_amount)} gross × {dec8(j.owner_decimal)} = {money(j.owner_net_amount)} (at DOI {money(cents(j.gross_amount * d.wi))})"
            for j, d in jibs
        )
        parts.append(
            f"JIB {invoices} (service {jibs[0][0].service_month}) bills WI {dec8(jib_dec)}: {lines}. "  # type: ignore[arg-type]
            f"Billed {money(billed)} vs {money(at_doi)} at DOI ({signed_money(billed - at_doi)})."
        )
        if last_billed is not None:
            parts.append(f"Last month's JIB billed {dec8(last_billed)}.")
    else:
        parts.append(f"JIB bills our DOI WI {dec8(row.wi)}.")
    if stubs:
        checks = ", ".join(sorted({r.check_no for r, _ in stubs}))
        parts.append(
            f"Check {checks} (sales {stubs[0][0].sale_month}) pays NRI {dec8(stub_dec)}: {money(paid)} vs "  # type: ignore[arg-type]
            f"{money(paid_doi)} at DOI ({signed_money(paid - paid_doi)})."
        )
    else:
        parts.append(f"Revenue stubs pay our DOI NRI {dec8(row.nri)}.")
    net_effect = (paid - paid_doi) - (billed - at_doi)
    parts.append(
        f"Net effect of the operator's decimals this month: cost {signed_money(billed - at_doi)}, revenue {signed_money(paid - paid_doi)}."
    )
    recommended, reasoning = _wi_recommendation(
        pattern, row, jib_dec, stub_dec, billed - at_doi, underpaid
    )
    options = {
        "both_consistent": ["accept", "protest", "short_pay", "suspense", "defer"],
        "both_inconsistent": ["accept", "protest", "short_pay", "suspense", "defer"],
        "jib_only": ["accept", "protest", "short_pay", "suspense", "defer"],
        "stub_only": ["accept", "claim", "defer"]
        if underpaid
        else ["accept", "hold_revenue", "defer"],
    }[pattern]
    return Finding(
        kind="wi_nri",
        key=well_id,
        step=STEPS[1],
        subject=row.well_name,
        summary=(f"JIB WI {dec8(jib_dec)} vs {dec8(row.wi)} " if jib_dec is not None else "")
        + (f"stub NRI {dec8(stub_dec)} vs {dec8(row.nri)}" if stub_dec is not None else ""),
        question=" ".join(parts),
        recommended=recommended,
        reasoning=reasoning,
        facts={
            "well_id": well_id,
            "well_name": row.well_name,
            "operator": row.operator,
            "doi_wi": dec8(row.wi),
            "doi_nri": dec8(row.nri),
            "jib_decimal": dec8(jib_dec) if jib_dec is not None else None,
            "stub_decimal": dec8(stub_dec) if stub_dec is not None else None,
            "last_billed_decimal": dec8(last_billed) if last_billed is not None else None,
            "pattern": pattern,
            "jib_billed": str(billed),
            "jib_at_doi": str(at_doi),
            "jib_difference": str(billed - at_doi),
            "stub_paid": str(paid),
            "stub_at_doi": str(paid_doi),
            "stub_difference": str(paid - paid_doi),
            "net_effect": str(net_effect),
            "jib_lines": [
                {
                    "ref": j.ref,
                    "invoice": j.invoice_no,
                    "account": cost_account(j),
                    "billed": str(j.owner_net_amount),
                    "at_doi": str(cents(j.gross_amount * d.wi)),
                    "gross": str(j.gross_amount),
                    "category": j.cost_category,
                }
                for j, d in jibs
            ],
            "stub_lines": [
                {
                    "ref": r.ref,
                    "check": r.check_no,
                    "product": r.product,
                    "account": REVENUE_ACCOUNTS[r.product],
                    "paid": {
                        k: str(v)
                        for k, v in stub_parts(r, r.owner_decimal, net=r.owner_net_value).items()
                    },
                    "at_doi": {k: str(v) for k, v in stub_parts(r, d.nri).items()},
                }
                for r, d in stubs
            ],
            "royalty": dec8(row.royalty),
            "orri": dec8(row.orri),
        },
        options=options,
        well_id=well_id,
        amount=abs(billed - at_doi) + abs(paid - paid_doi),
    )


def _last_billed_decimal(data: CloseData, well_id: str) -> Decimal | None:
    rows = [h for h in data.jib_history if h.well_id == well_id]
    return max(rows, key=lambda h: h.service_month).owner_decimal if rows else None


def _wi_recommendation(
    pattern: str,
    row: DoiRow,
    jib_dec: Decimal | None,
    stub_dec: Decimal | None,
    cost_diff: Decimal,
    underpaid: bool,
) -> tuple[str, str]:
    if pattern == "both_consistent":
        burden = 1 - row.nri / row.wi
        return "accept", (
            f"Both operator documents agree: the JIB bills WI {dec8(jib_dec)} and the stub pays NRI "  # type: ignore[arg-type]
            f"{dec8(stub_dec)} = {dec8(jib_dec)} × {1 - burden:.4f}, the same royalty burden as our DOI. "  # type: ignore[arg-type]
            f"Our DOI ({dec8(row.wi)} / {dec8(row.nri)}) is probably stale (an assignment or a payout reversion)."
        )
    if pattern == "jib_only":
        return "short_pay", (
            f"Only the JIB differs: the operator's own revenue deck still pays our DOI NRI {dec8(row.nri)}, "
            f"so WI {dec8(jib_dec)} on the bill is most likely a billing error. Short-pay and dispute "  # type: ignore[arg-type]
            f"{money(cost_diff)} (short-paying may carry late-payment interest under the JOA)."
        )
    if pattern == "stub_only":
        if underpaid:
            return (
                "claim",
                "The stub pays less than our DOI NRI while the JIB bills our WI: claim the shortfall from the payor.",
            )
        return "hold_revenue", (
            f"Only the stub differs while the JIB bills our DOI WI {dec8(row.wi)}: hold the excess in revenue suspense until the division order is confirmed."
        )
    return (
        "defer",
        "The JIB and the stub disagree with our DOI and with each other: hold the well and ask the operator for ownership support.",
    )


# -- step 3: JIB reconciliation ---------------------------------------------------


def jib_recon(close: Close) -> Iterator[Finding]:
    data, master = close.data, close.master
    known = close.known_jib()
    for j, row in known:
        computed = cents(j.gross_amount * j.owner_decimal)
        if computed != j.owner_net_amount:
            diff = j.owner_net_amount - computed
            yield _line_finding(
                "line_math",
                j,
                row,
                diff,
                f"{money(j.gross_amount)} × {dec8(j.owner_decimal)} = {money(computed)} but the line bills {money(j.owner_net_amount)} ({signed_money(diff)})",
            )
    seen: dict[tuple[str, str, str, str, Decimal], JibLine] = {}
    history = {
        (h.operator, h.well_id, h.service_month, h.cost_category, h.gross_amount): h
        for h in data.jib_history
    }
    for j, row in known:
        key = (j.operator, j.well_id, j.service_month, j.cost_category, j.gross_amount)
        first = seen.get(key)
        if first is not None:
            yield _line_finding(
                "duplicate",
                j,
                row,
                j.owner_net_amount,
                f"the same {j.cost_category} {money(j.gross_amount)} for service {j.service_month} as jib.csv line {first.line}",
            )
        elif key in history:
            h = history[key]
            yield _line_finding(
                "duplicate",
                j,
                row,
                j.owner_net_amount,
                f"already billed on {h.invoice_no} (jib_history.csv line {h.line}): {j.cost_category} {money(j.gross_amount)} for service {j.service_month}",
            )
        seen.setdefault(key, j)
    for j, row in known:
        age = months_between(j.service_month, close.period)
        if age > STALE_MONTHS:
            yield _line_finding(
                "stale_charge",
                j,
                row,
                j.owner_net_amount,
                f"service month {j.service_month} is {age} months before {close.period} (limit {STALE_MONTHS})",
            )
    by_afe: dict[str, list[tuple[JibLine, DoiRow]]] = defaultdict(list)
    for j, row in known:
        if j.afe_no:
            by_afe[j.afe_no].append((j, row))
    afes = {a.afe_no: a for a in data.afe}
    for afe_no, lines in sorted(by_afe.items()):
        afe = afes.get(afe_no)
        if afe is None:
            continue
        billed = afe.billed_to_date_gross + sum((j.gross_amount for j, _ in lines), ZERO)
        over = billed - afe.approved_gross
        if afe.approved_gross and over / afe.approved_gross > Decimal("0.10"):
            wi = lines[0][1].wi
            share = cents(over * wi)
            yield Finding(
                kind="afe_overrun",
                key=afe_no,
                step=STEPS[2],
                subject=f"{afe_no} ({master.name(afe.well_id)})",
                summary=f"billed {money(billed)} gross vs approved {money(afe.approved_gross)}: over {money(over)} ({over / afe.approved_gross * 100:+.2f} %), our share {money(share)}",
                question=(
                    f"{afe_no} {afe.description} on {master.name(afe.well_id)}: approved {money(afe.approved_gross)} gross; "
                    f"billed to date {money(afe.billed_to_date_gross)} + this month's {lines[0][0].invoice_no} "
                    f"{money(billed - afe.billed_to_date_gross)} = {money(billed)}, {money(over)} over "
                    f"({over / afe.approved_gross * 100:+.2f} %, more than 10 %). Our share at WI {dec8(wi)}: {money(share)}. "
                    "The JOA calls for a supplemental AFE above 10 %."
                ),
                recommended="protest",
                reasoning=(
                    f"The overrun is past the JOA's 10 % without a supplemental AFE: pay so the well is not in default, "
                    f"but hold our {money(share)} share as a receivable until the operator supports it."
                ),
                facts={
                    "afe_no": afe_no,
                    "approved": str(afe.approved_gross),
                    "billed": str(billed),
                    "over": str(over),
                    "share": str(share),
                    "lines": _alloc_lines(lines, share),
                },
                well_id=afe.well_id,
                amount=share,
            )
    by_invoice: dict[str, list[tuple[JibLine, DoiRow, Decimal]]] = defaultdict(list)
    for j, row in known:
        if j.cost_category != "Overhead":
            continue
        rate = master.overhead_rate(j.well_id, j.service_month, drilling=bool(j.afe_no))
        if rate is not None and rate != j.gross_amount:
            by_invoice[j.invoice_no].append((j, row, rate))
    for invoice, items in sorted(by_invoice.items()):
        diff = sum((j.owner_net_amount - cents(rate * row.wi) for j, row, rate in items), ZERO)
        detail = "; ".join(
            f"{row.well_name} {money(j.gross_amount)} × {dec8(j.owner_decimal)} = {money(j.owner_net_amount)} vs JOA {money(rate)} × {dec8(row.wi)} = {money(cents(rate * row.wi))}"
            for j, row, rate in items
        )
        yield Finding(
            kind="overhead_rate",
            key=invoice,
            step=STEPS[2],
            subject=f"{invoice} overhead",
            summary=f"overhead billed above the JOA rate: {signed_money(diff)}",
            question=f"{invoice} ({items[0][0].operator}, service {items[0][0].service_month}) bills producing overhead above the JOA rate: {detail}. Difference {signed_money(diff)}.",
            recommended="short_pay" if diff > 0 else "pay_as_billed",
            reasoning=(
                f"The JOA fixes the overhead rate; the operator billed {money(items[0][0].gross_amount)}/month against {money(items[0][2])}. Pay the JOA rate and dispute {money(diff)}."
                if diff > 0
                else "Billed below the JOA rate: pay as billed."
            ),
            facts={
                "invoice": invoice,
                "difference": str(diff),
                "lines": [
                    {
                        "ref": j.ref,
                        "account": cost_account(j),
                        "amount": str(j.owner_net_amount - cents(rate * row.wi)),
                        "well_id": j.well_id,
                    }
                    for j, row, rate in items
                ],
            },
            options=["pay_as_billed", "short_pay", "protest"]
            if diff > 0
            else ["pay_as_billed", "book_computed"],
            amount=abs(diff),
        )


def _alloc_lines(lines: list[tuple[JibLine, DoiRow]], share: Decimal) -> list[dict[str, str]]:
    """Spread `share` over the lines by gross, the rounding left on the largest line."""
    total = sum((j.gross_amount for j, _ in lines), ZERO)
    out = []
    for j, _ in lines:
        out.append(
            {
                "ref": j.ref,
                "account": cost_account(j),
                "amount": str(cents(share * j.gross_amount / total)),
                "well_id": j.well_id,
            }
        )
    rest = share - sum((Decimal(x["amount"]) for x in out), ZERO)
    biggest = max(range(len(out)), key=lambda i: lines[i][0].gross_amount)
    out[biggest]["amount"] = str(Decimal(out[biggest]["amount"]) + rest)
    return out


def _line_finding(kind: str, j: JibLine, row: DoiRow, amount: Decimal, what: str) -> Finding:
    title = {
        "line_math": "line math",
        "duplicate": "duplicate line",
        "stale_charge": "stale charge",
    }[kind]
    over = amount > 0
    return Finding(
        kind=kind,
        key=str(j.line),
        step=STEPS[2],
        subject=f"{j.invoice_no} line {j.line}",
        summary=f"{title}: {what}",
        question=(
            f"jib.csv line {j.line}: {j.invoice_no} ({j.operator}, service {j.service_month}), {row.well_name} "
            f"{j.cost_category} '{j.description}': {what}. Amount at stake {money(amount)}."
        ),
        recommended="short_pay" if over else "pay_as_billed",
        reasoning=(
            f"Pay what the document supports and dispute {money(amount)} with the operator."
            if over
            else "The operator billed less than its own figures; pay as billed (it may rebill)."
        ),
        facts={
            "ref": j.ref,
            "invoice": j.invoice_no,
            "amount": str(amount),
            "lines": [
                {
                    "ref": j.ref,
                    "account": cost_account(j),
                    "amount": str(amount),
                    "well_id": j.well_id,
                }
            ],
        },
        options=["pay_as_billed", "short_pay", "protest"]
        if over
        else ["pay_as_billed", "book_computed"],
        well_id=j.well_id,
        amount=abs(amount),
    )


def loe_accrual(close: Close) -> list[dict[str, Any]]:
    """Per well and category: the trailing 3-month average gross × the WI in force."""
    months = trailing_months(close.period)
    gross: dict[tuple[str, str], dict[str, Decimal]] = defaultdict(
        lambda: defaultdict(lambda: ZERO)
    )
    for h in close.data.jib_history:
        if h.cost_category in ("LOE", "Overhead") and h.service_month in months:
            gross[(h.well_id, h.cost_category)][h.service_month] += h.gross_amount
    for j, _ in close.known_jib():
        if j.cost_category in ("LOE", "Overhead") and not j.afe_no and j.service_month in months:
            gross[(j.well_id, j.cost_category)][j.service_month] += j.gross_amount
    out = []
    for (well_id, category), by_month in sorted(gross.items()):
        row = close.master.in_force(well_id, close.period)
        if row is None:
            continue
        average = sum(by_month.values(), ZERO) / len(months)
        amount = cents(average * row.wi)
        if amount:
            out.append(
                {
                    "well_id": well_id,
                    "well_name": row.well_name,
                    "category": category,
                    "account": COST_ACCOUNTS[category],
                    "month": close.period,
                    "nets": [str(cents(by_month.get(m, ZERO) * row.wi)) for m in months],
                    "amount": amount,
                    "wi": dec8(row.wi),
                }
            )
    return out


# -- step 4: revenue accrual -------------------------------------------------------


def revenue_accrual(close: Close) -> tuple[list[dict[str, Any]], list[Finding]]:
    """Accruals per well × product × month with volumes but no check; findings to decide."""
    data, master = close.data, close.master
    window = {add_months(close.period, -k) for k in range(1, ACCRUAL_WINDOW + 1)}
    checked = {(r.well_id, r.product, r.sale_month) for r, _ in close.known_revenue()}
    checked |= {(r.well_id, r.product, r.sale_month) for r in data.revenue_history}
    ever_paid = {r.well_id for r in data.revenue_history} | {
        r.well_id for r, _ in close.known_revenue()
    }
    prices = {(p.month, p.product): p for p in data.prices}
    by_well_month: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for p in data.production:
        if p.month not in window or (p.well_id, p.product, p.month) in checked:
            continue
        row = master.in_force(p.well_id, p.month)
        price = prices.get((p.month, p.product))
        if row is None or price is None:
            continue
        net_price = price.benchmark_price - price.differential
        value = cents(p.volume * net_price * row.nri)
        due = severance_due(
            row.state, p.product, row.first_prod_month, p.month, p.volume * net_price, p.volume
        )
        severance = cents(due[0] * row.nri) if due else ZERO
        by_well_month[(p.well_id, p.month)].append(
            {
                "well_id": p.well_id,
                "well_name": row.well_name,
                "product": p.product,
                "month": p.month,
                "volume": str(p.volume),
                "price": str(net_price),
                "nri": dec8(row.nri),
                "revenue": value,
                "severance": severance,
                "receivable": value - severance,
                "account": REVENUE_ACCOUNTS[p.product],
                "formula": f"{p.volume} × ({price.benchmark_price} − {price.differential}) × {dec8(row.nri)}",
            }
        )
    accruals: list[dict[str, Any]] = []
    findings: list[Finding] = []
    for (well_id, month), items in sorted(by_well_month.items()):
        total = sum((i["revenue"] for i in items), ZERO)
        name = master.name(well_id)
        kind = None
        if well_id not in ever_paid:
            kind, what, rec, why = (
                "new_well",
                "has production but no check yet (a new well)",
                "accrue",
                "The operator's volumes are the only basis until the first check; accrue them so revenue lands in the month it was produced.",
            )
        elif total == ZERO:
            kind, what, rec, why = (
                "shut_in",
                "reported no volume (shut in?)",
                "skip",
                "No volume, no revenue: accruing last month's would book sales that did not happen.",
            )
        elif total < MATERIALITY:
            kind, what, rec, why = (
                "below_materiality",
                f"accrues {money(total)}, below the {money(MATERIALITY)} threshold",
                "skip",
                "Below materiality: the check will book it when it comes.",
            )
        if kind is None:
            accruals.extend(items)
            continue
        finding = Finding(
            kind="revenue_accrual",
            key=f"{well_id}:{month}",
            step=STEPS[3],
            subject=f"{name} {month}",
            summary=f"{name} {month} {what}",
            question=(
                f"{name} ({well_id}) {month} {what}. Operator volumes: "
                + "; ".join(f"{i['product']} {i['formula']} = {money(i['revenue'])}" for i in items)
                + f". Accrue {money(total)} on operator volumes, on the last actual check, or skip?"
            ),
            recommended=rec,
            reasoning=why,
            facts={
                "items": [{k: str(v) for k, v in i.items()} for i in items],
                "total": str(total),
            },
            options=["accrue", "skip"] if kind == "new_well" else ["accrue", "last_actual", "skip"],
            well_id=well_id,
            amount=total,
        )
        findings.append(finding)
        decision = close.decided(finding.id)
        if decision and decision["option"] == "accrue":
            accruals.extend(items)
        elif decision and decision["option"] == "last_actual":
            accruals.extend(_last_actual(close, well_id, month))
    return accruals, findings


def _last_actual(close: Close, well_id: str, month: str) -> list[dict[str, Any]]:
    rows = [r for r in close.data.revenue_history if r.well_id == well_id]
    if not rows:
        return []
    last = max(r.sale_month for r in rows)
    out = []
    for r in rows:
        if r.sale_month == last:
            parts = stub_parts(r, r.owner_decimal, net=r.owner_net_value)
            out.append(
                {
                    "well_id": well_id,
                    "well_name": close.master.name(well_id),
                    "product": r.product,
                    "month": month,
                    "revenue": parts["revenue"],
                    "severance": parts["taxes"],
                    "receivable": parts["revenue"] - parts["taxes"],
                    "account": REVENUE_ACCOUNTS[r.product],
                    "formula": f"last actual {r.sale_month} {r.check_no}",
                }
            )
    return out


# -- step 5: severance ---------------------------------------------------------------


def severance(close: Close) -> Iterator[Finding]:
    by_well: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r, row in close.known_revenue():
        if not r.gross_value:
            continue
        due = severance_due(
            row.state, r.product, row.first_prod_month, r.sale_month, r.gross_value, r.gross_volume
        )
        if due is None:
            continue
        expected, basis = due
        if abs(r.gross_taxes - expected) / r.gross_value <= SEVERANCE_TOLERANCE:
            continue
        over = cents((r.gross_taxes - cents(expected)) * r.owner_decimal)
        by_well[row.well_id].append(
            {
                "ref": r.ref,
                "check": r.check_no,
                "product": r.product,
                "sale_month": r.sale_month,
                "charged": str(r.gross_taxes),
                "charged_rate": f"{r.gross_taxes / r.gross_value * 100:.2f} %",
                "expected": str(cents(expected)),
                "basis": basis,
                "owner_share": str(over),
            }
        )
    for well_id, items in sorted(by_well.items()):
        total = sum((Decimal(i["owner_share"]) for i in items), ZERO)
        name = close.master.name(well_id)
        detail = "; ".join(
            f"{i['product']} charged {money(Decimal(i['charged']))} ({i['charged_rate']}) vs {money(Decimal(i['expected']))} at {i['basis']} → our share {signed_money(Decimal(i['owner_share']))}"
            for i in items
        )
        yield Finding(
            kind="severance",
            key=well_id,
            step=STEPS[4],
            subject=name,
            summary=f"severance off the state rate: owner {'overcharge' if total > 0 else 'undercharge'} {money(abs(total))}",
            question=f"{name}, check {items[0]['check']} (sales {items[0]['sale_month']}): {detail}. Total {signed_money(total)}.",
            recommended="refund" if total > 0 else "accept",
            reasoning=(
                f"The state rate for this well is lower than what the purchaser withheld; claim the {money(total)} refund (Dr 1220)."
                if total > 0
                else "Withheld less than the statutory rate; the liability is the purchaser's. Accept and tell the operator."
            ),
            facts={"items": items, "total": str(total)},
            options=["accept", "correct", "refund"] if total > 0 else ["accept", "correct"],
            well_id=well_id,
            amount=abs(total),
        )


# -- step 7: flux ------------------------------------------------------------------

PNL_ACCOUNTS = ("4010", "4020", "4030", "4090", "6110", "6130", "6210", "6220", "6250")


def flux(close: Close, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """P&L activity by account this month vs the prior month's, flagged by the ±10 % and ±$5,000 rule."""
    prior_month = add_months(close.period, -1)
    prior: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for t in close.data.tb_activity:
        if t.month == prior_month:
            prior[t.account] += t.debit - t.credit
    now: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for line in lines:
        now[line["account"]] += line["debit"] - line["credit"]
    out = []
    for account in sorted(set(PNL_ACCOUNTS) & (set(prior) | set(now))):
        sign = -1 if account.startswith("4") else 1
        a, b = prior[account] * sign, now[account] * sign
        change = b - a
        pct = change / abs(a) if a else None
        flagged = abs(change) > FLUX_AMOUNT and (pct is None or abs(pct) > FLUX_PERCENT)
        out.append(
            {
                "account": account,
                "name": ACCOUNT_NAMES[account],
                "prior": a,
                "current": b,
                "change": change,
                "percent": pct,
                "flagged": flagged,
            }
        )
    return out


def revenue_split(close: Close) -> list[dict[str, Any]]:
    """Per well × product: this check's sale month vs the prior sale month, split volume / price."""
    out = []
    current = close.known_revenue()
    for r, row in current:
        prev_month = add_months(r.sale_month, -1)
        prev = [
            h
            for h in close.data.revenue_history
            if h.well_id == r.well_id and h.product == r.product and h.sale_month == prev_month
        ]
        if not prev or not prev[0].gross_volume:
            continue
        p = prev[0]
        nri = row.nri if abs(r.owner_decimal - row.nri) <= TOLERANCE else r.owner_decimal
        before = cents(p.gross_value * nri)
        after = cents(r.gross_value * nri)
        volume = cents((r.gross_volume - p.gross_volume) * p.price * nri)
        price = cents((r.price - p.price) * r.gross_volume * nri)
        change = after - before
        pct = change / before if before else None
        out.append(
            {
                "well_id": r.well_id,
                "well_name": row.well_name,
                "product": r.product,
                "prior_month": prev_month,
                "month": r.sale_month,
                "prior": before,
                "current": after,
                "change": change,
                "percent": pct,
                "volume_part": volume,
                "price_part": price,
                "nri": dec8(nri),
                "flagged": abs(change) > FLUX_AMOUNT and (pct is None or abs(pct) > FLUX_PERCENT),
            }
        )
    return out


def flux_explanation(close: Close, account: str) -> str:
    """A draft explanation from the documents behind an account's movement."""
    if account in ("6210", "6220", "6250"):
        category = {"6210": "LOE", "6220": "Workover", "6250": "Overhead"}[account]
        lines = sorted(
            (j for j, _ in close.known_jib() if j.cost_category == category),
            key=lambda j: -j.owner_net_amount,
        )[:3]
        return "; ".join(
            f"{close.master.name(j.well_id)}: {j.description} {money(j.owner_net_amount)} ({j.invoice_no})"
            for j in lines
        )
    return ""


def format_flux(item: dict[str, Any]) -> str:
    pct = percent(item["percent"]) if item["percent"] is not None else "new"
    return f"{item['account']} {item['name']}: {money(item['prior'])} → {money(item['current'])} ({signed_money(item['change'])}, {pct})"


CHECKS: dict[str, Callable[[Close], Iterator[Finding]]] = {
    STEPS[0]: intake,
    STEPS[1]: interests,
    STEPS[2]: jib_recon,
    STEPS[4]: severance,
}

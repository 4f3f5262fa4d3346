"""The intake step: every file of the period loaded and checked, every document mapped to a well,
and what the data itself gets wrong."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from bot.close import data as close_data
from bot.close.checks import (
    Close,
    Finding,
    cost_account,
    revenue_account,
    stub_net,
    stub_parts,
)
from bot.close.data import (
    ZERO,
    DoiRow,
    JibLine,
    RevenueLine,
    add_months,
    cents,
)
from bot.close.doi_master import (
    TOLERANCE,
    dec8,
    money,
    signed_money,
)
from bot.close.imports.intake import imported_evidence, input_targets
from bot.close.imports.wells import wells_of
from bot.close.registry import Step, StepTools
from bot.close.steps.interests import jib_line_facts, stub_line_facts
from bot.close.steps.signoff import carried_finding
from bot.core.names import Names
from bot.core.tools import ToolContext

INTAKE = Step(
    "intake",
    "Intake",
    "intake: every file checked; unknown properties, DOI sanity, decimals out of range, stub "
    "math, missing documents, an unbalanced trial balance become exceptions.",
    "Loading and checking every file of the period.",
    after=None,
    loading=lambda f: [f"Reading the {f.period} files…", "Mapping property numbers to wells…"],
)


@INTAKE.check
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
            # the wells the value most likely means (a name, a property number alike), then
            # the operator's
            likely = wells_of(data.doi).likely(line.well_id or line.property_no, operator=operator)
            others = master.operator_wells(operator) if isinstance(line, JibLine) else []
            candidates = list(dict.fromkeys([*likely, *others]))
            what = f"well {line.well_id}" if line.well_id else f"property {line.property_no}"
            yield Finding(
                kind="unknown_property",
                key=f"{kind}:{line.line}",
                step=INTAKE.name,
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
                    "candidates": [[w, master.name(w)] for w in candidates[:8]],
                    "operator_wells": len(candidates),
                    **_stub_facts(close, line),
                },
                options=[*[f"map:{w}" for w in candidates][:8], "create", "suspense"],
                amount=amount,
            )
    for row in data.doi:
        problem = doi_problem(row)
        if problem and not _corrected(close, row):
            yield _sanity_finding(close, row, problem)
    wells: dict[str, str | None] | None = None  # built only when a decimal is out of range
    for kind, docs in (("jib", data.jib), ("revenue", data.revenue)):
        for line in docs:
            if ZERO < line.owner_decimal <= 1:
                continue
            if wells is None:
                wells = {x.ref: w for lines in (close.jib(), close.revenue()) for x, w in lines}
            well = wells.get(line.ref)
            amount = line.owner_net_amount if isinstance(line, JibLine) else line.owner_net_value
            yield Finding(
                kind="decimal_range",
                key=f"{kind}:{line.line}",
                step=INTAKE.name,
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
                    "well_id": well or "",
                    "unknown_well": well is None,
                    **_stub_facts(close, line),
                },
                well_id=well,
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
            step=INTAKE.name,
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
                "account": revenue_account(r.product, r.sale_month, close.period),
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
        data.history.operators_by_month.get(expected_service, set()) - billed_now
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
    for payor in sorted(data.history.payors_by_month.get(expected_sale, set()) - paid_now):
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
                step=INTAKE.name,
                subject=f"trial balance activity {month}",
                summary=f"debits {money(dr)} ≠ credits {money(cr)} ({signed_money(dr - cr)})",
                question=f"tb_activity.csv: {month} activity does not balance: debits {money(dr)} vs credits {money(cr)} ({signed_money(dr - cr)}). The flux review compares against it.",
                recommended="skip_flux",
                reasoning="An unbalanced trial balance is not a reliable base for flux; compare nothing against it until it is re-exported.",
                facts={"month": month},
                amount=abs(dr - cr),
            )


def _stub_facts(close: Close, line: JibLine | RevenueLine) -> dict[str, Any]:
    """A stub line's owner revenue, severance, deductions and net as paid, and its revenue account."""
    if not isinstance(line, RevenueLine):
        return {}
    parts = stub_parts(line, line.owner_decimal, net=line.owner_net_value)
    return {
        "product": line.product,
        "sale_month": line.sale_month,
        "revenue_account": revenue_account(line.product, line.sale_month, close.period),
        "parts": {k: str(v) for k, v in parts.items()},
    }


def _missing(document: str, who: str, text: str) -> Finding:
    return Finding(
        kind="missing_document",
        key=f"{document}:{who}",
        step=INTAKE.name,
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


def _corrected(close: Close, row: DoiRow) -> bool:
    """closebot already holds a sane row for the well from the same date (a correction)."""
    return any(
        r.source != "doi.csv"
        and r.well_id == row.well_id
        and r.effective_from == row.effective_from
        and doi_problem(r) is None
        for r in close.master.rows
    )


def computed_nri(row: DoiRow) -> Decimal:
    return Decimal(dec8(row.wi * (1 - row.royalty - row.orri)))


def _sanity_finding(close: Close, row: DoiRow, problem: str) -> Finding:
    """A DOI row that breaks the identity: correct the master (the computed NRI) and hold the
    well's difference in suspense until then; booking it as recorded is an override."""
    nri = computed_nri(row)
    fixable = ZERO < row.wi <= 1 and ZERO < nri <= row.wi
    in_force = [
        (j, r)
        for j, r in close.known_jib()
        if r.well_id == row.well_id
        and r.effective_from == row.effective_from
        and r.line == row.line
    ]
    stubs = [
        (s, r)
        for s, r in close.known_revenue()
        if r.well_id == row.well_id
        and r.effective_from == row.effective_from
        and r.line == row.line
    ]
    jib_lines = [jib_line_facts(j, row.wi) for j, _ in in_force]
    stub_lines = [stub_line_facts(s, nri if fixable else row.nri, close.period) for s, _ in stubs]
    paid = sum((s.owner_net_value for s, _ in stubs), ZERO)
    at_nri = sum((stub_net(s, nri) for s, _ in stubs), ZERO)
    at_recorded = sum((stub_net(s, row.nri) for s, _ in stubs), ZERO)
    billed = sum((Decimal(j["billed"]) for j in jib_lines), ZERO)
    at_wi = sum((Decimal(j["at_doi"]) for j in jib_lines), ZERO) if fixable else billed
    at_nri = at_nri if fixable else paid
    question = (
        f"doi.csv line {row.line}: {row.well_name} ({row.well_id}): {problem}. "
        + (
            f"Computed NRI = {dec8(row.wi)} × (1 − {dec8(row.royalty)} − {dec8(row.orri)}) = {dec8(nri)}. "
            f"This month's checks paid {money(paid)}: {money(at_nri)} at the computed NRI, {money(at_recorded)} at the NRI as recorded. "
            if fixable
            else "The WI itself is impossible, so no NRI can be computed from it. "
        )
        + "Correct the master (the difference held in suspense until the corrected row is in force), or book with the row as recorded (an override: say why)?"
    )
    return Finding(
        kind="doi_sanity",
        key=f"{row.well_id}:{row.effective_from}",
        step=INTAKE.name,
        subject=row.well_name,
        summary=problem,
        question=question,
        recommended="correct" if fixable else "hold_well",
        reasoning=(
            f"An NRI that breaks 0 < NRI ≤ WI ≤ 1 or NRI = WI × (1 − royalty − ORRI) cannot be right; "
            f"booking with it overstates or understates the well. The identity gives {dec8(nri)}: correct the master "
            "and hold whatever the documents pay beyond it in suspense until the corrected row is approved."
            if fixable
            else "The row's WI is outside (0, 1]: nothing can be booked from it until the master is corrected."
        ),
        facts={
            "ref": f"doi.csv:{row.line}",
            "well_id": row.well_id,
            "well_name": row.well_name,
            "operator": row.operator,
            "effective_from": row.effective_from,
            "doi_wi": dec8(row.wi),
            "doi_nri": dec8(row.nri),
            "computed_nri": dec8(nri) if fixable else None,
            "royalty": dec8(row.royalty),
            "orri": dec8(row.orri),
            "jib_lines": jib_lines,
            "stub_lines": stub_lines,
            "jib_difference": str(billed - at_wi),
            "stub_difference": str(paid - at_nri),
        },
        options=["correct", "use_doi"] if fixable else ["hold_well", "use_doi"],
        well_id=row.well_id,
        amount=abs(paid - at_nri) + abs(billed - at_wi),
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


@INTAKE.tool
def load_period(tools: StepTools, ctx: ToolContext, period: str) -> dict[str, Any]:
    """Intake: load and check every file of the period, map property numbers to wells, and record intake exceptions (unknown property or well, DOI sanity, decimals out of range, stub math, missing documents, an unbalanced trial balance).

    Args:
      period: the accounting period being closed, YYYY-MM
    """
    close, ledger = tools._close(ctx, period)
    # the open items last month's sign-off carried come first: settled, still open, written off
    previous = add_months(period, -1)
    tools._record(
        ctx,
        ledger,
        [
            carried_finding(previous, c, INTAKE.name, Names(ctx.store))
            for c in ledger.carried_into(previous)
        ],
    )
    tools._record(ctx, ledger, INTAKE.findings(close))
    d = close.data
    if not ctx.store.audit.events(ctx.run_id, kind="input_files"):
        ctx.store.audit.record(
            run_id=ctx.run_id,
            kind="input_files",
            actor="agent",
            detail={
                "period": period,
                "files": d.hashes,
                "imported": imported_evidence(ctx.store, period),
            },
            covers=input_targets(ctx.store, period),
        )
    by_state = Counter(r.state for r in d.doi)
    return tools._step_result(
        ctx,
        ledger,
        INTAKE.name,
        period=period,
        period_label=close_data.period_label(period),
        wells=len(close.master.well_ids()),
        wells_by_state=dict(sorted(by_state.items())),
        jib_lines=len(d.jib),
        jib_invoices=len({j.invoice_no for j in d.jib}),
        jib_service_months=sorted({j.service_month for j in d.jib}),
        jib_owner_net_total=sum((j.owner_net_amount for j in d.jib), ZERO),
        revenue_lines=len(d.revenue),
        revenue_checks=len({r.check_no for r in d.revenue}),
        revenue_sale_months=sorted({r.sale_month for r in d.revenue}),
        revenue_owner_net_total=sum((r.owner_net_value for r in d.revenue), ZERO),
        input_files={k: v[:12] for k, v in d.hashes.items()},
    )

"""The WI/NRI validation step: the operator's decimals against the DOI in force."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

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
    CloseData,
    DoiRow,
    JibLine,
    RevenueLine,
    cents,
)
from bot.close.doi_master import (
    TOLERANCE,
    dec8,
    money,
    signed_money,
)
from bot.close.registry import Step, StepTools
from bot.core.tools import ToolContext

INTERESTS = Step(
    "interests",
    "WI/NRI validation",
    "JIB decimals vs the DOI WI, stub decimals vs the DOI NRI in force.",
    "Checking every owner decimal against the DOI in force.",
    after="intake",
    loading=lambda f: [
        f"Checking {f.jib} against the DOI…",
        f"Checking {f.stubs} against the DOI…",
    ],
)


@INTERESTS.check
def interests(close: Close) -> Iterator[Finding]:
    # only the lines off the DOI are grouped by well (at volume nearly every line matches:
    # most share the very Decimal the DOI row holds, read from the same text)
    jib_by_well: dict[str, list[tuple[JibLine, DoiRow]]] = defaultdict(list)
    rev_by_well: dict[str, list[tuple[RevenueLine, DoiRow]]] = defaultdict(list)
    for j, row in close.known_jib(unheld=True):
        decimal = j.owner_decimal
        if decimal is not row.wi and abs(decimal - row.wi) > TOLERANCE:
            jib_by_well[j.well_id].append((j, row))
    for r, row in close.known_revenue(unheld=True):
        decimal = r.owner_decimal
        if decimal is not row.nri and abs(decimal - row.nri) > TOLERANCE:
            rev_by_well[r.well_id].append((r, row))
    for well_id in sorted(set(jib_by_well) | set(rev_by_well)):
        yield _wi_finding(close, well_id, jib_by_well[well_id], rev_by_well[well_id])


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
            for j, d in jibs[:3]
        ) + (  # the question stays readable at any size; the facts and document_lines list all
            f"; and {len(jibs) - 3} more lines" if len(jibs) > 3 else ""
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
        step=INTERESTS.name,
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
            "jib_lines": [jib_line_facts(j, d.wi) for j, d in jibs],
            "stub_lines": [stub_line_facts(r, d.nri, close.period) for r, d in stubs],
            "royalty": dec8(row.royalty),
            "orri": dec8(row.orri),
        },
        options=options,
        well_id=well_id,
        amount=abs(billed - at_doi) + abs(paid - paid_doi),
    )


def jib_line_facts(j: JibLine, wi: Decimal) -> dict[str, Any]:
    """A JIB line as billed and at the DOI WI, for a finding's facts."""
    return {
        "ref": j.ref,
        "invoice": j.invoice_no,
        "account": cost_account(j),
        "billed": str(j.owner_net_amount),
        "at_doi": str(cents(j.gross_amount * wi)),
        "gross": str(j.gross_amount),
        "category": j.cost_category,
    }


def stub_line_facts(r: RevenueLine, nri: Decimal, period: str) -> dict[str, Any]:
    """A stub line as paid and at the DOI NRI, for a finding's facts."""
    return {
        "ref": r.ref,
        "check": r.check_no,
        "sale_month": r.sale_month,
        "product": r.product,
        "account": revenue_account(r.product, r.sale_month, period),
        "paid": {
            k: str(v) for k, v in stub_parts(r, r.owner_decimal, net=r.owner_net_value).items()
        },
        "at_doi": {k: str(v) for k, v in stub_parts(r, nri).items()},
    }


def _last_billed_decimal(data: CloseData, well_id: str) -> Decimal | None:
    last = data.history.last_jib_decimal.get(well_id)
    return last[1] if last else None


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


@INTERESTS.tool
def validate_interests(tools: StepTools, ctx: ToolContext, period: str) -> dict[str, Any]:
    """WI/NRI validation: compare every JIB owner decimal to the DOI WI and every revenue stub decimal to the DOI NRI in force for its month (tolerance 0.000001); each mismatch becomes an exception with a recommendation.

    Args:
      period: the accounting period being closed, YYYY-MM
    """
    close, ledger = tools._close(ctx, period)
    tools._record(ctx, ledger, INTERESTS.findings(close))
    return tools._step_result(ctx, ledger, INTERESTS.name, tolerance="0.000001")

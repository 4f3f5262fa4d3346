"""The month-end close toolset the agent (Claude or the offline playbook) works with: one
tool per step of CLOSE.md, one to record a person's decision, a drill-down, the summary."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any, Literal

from bot.close import data as close_data
from bot.close.checks import Finding
from bot.close.data import ZERO, add_months
from bot.close.decisions import DecisionTools
from bot.close.doi_master import ACCOUNT_NAMES, money
from bot.close.imports.intake import imported_evidence, input_targets
from bot.close.kinds import KINDS, option_label
from bot.close.ledger import Ledger
from bot.close.posting import PostingTools
from bot.close.registry import (
    FLUX,
    INTAKE,
    INTERESTS,
    JIBS,
    REGISTRY,
    REVENUE,
    SEVERANCE,
    SIGNOFF,
    STEPS,
)
from bot.close.steps import flux, jibs, revenue
from bot.close.steps.flux import _flux_label, _flux_line
from bot.close.toolbase import MAX_LIST, _short
from bot.core.names import Names
from bot.core.tools import ToolContext, ToolError, ToolRegistry


def _carried_finding(
    previous: str, c: dict[str, Any], step: str = INTAKE.name, names: Names | None = None
) -> Finding:
    """An open item the last sign-off carried: asked about when the next close opens (settled /
    still open / write off), before its own steps; its owner by name."""
    shown = names.cached(c["owner"]) if names and c.get("owner") else c.get("owner")
    owner = f", owner {shown}" if shown else ""
    due = f", due {c['due']}" if c.get("due") else ""
    return Finding(
        kind="carried_item",
        key=str(c["id"]),
        step=step,
        subject=c["text"][:70],
        summary=f"open since {previous}{owner}{due}",
        question=f"Open item carried from {previous}{owner}{due}: {c['text']}. Is it settled, still open (carried forward again), or written off?",
        recommended="still_open",
        reasoning="Nothing in this month's documents shows it settled; keep it open until someone confirms.",
        facts={
            "item_id": c["id"],
            "text": c["text"],
            "amount": c.get("amount") or "",
            "from": previous,
            "owner": c.get("owner") or "",
            "due": c.get("due") or "",
            "held_balance": c.get("held_balance") or [],
        },
        amount=Decimal(c["amount"]) if c.get("amount") else ZERO,
    )


def _basis_finding(
    period: str, prior_month: str, batch_id: str, diffs: list[tuple[str, Decimal, Decimal]]
) -> Finding:
    listing = "; ".join(
        f"{a} {ACCOUNT_NAMES.get(a, '')}: closebot posted {money(p)}, tb_activity.csv {money(t)}"
        for a, p, t in diffs
    )
    return Finding(
        kind="flux_basis",
        key=prior_month,
        step=FLUX.name,
        subject=f"tb_activity.csv {prior_month}",
        summary=f"tb_activity.csv disagrees with closebot's posted {prior_month} on {len(diffs)} account(s)",
        question=f"Flux compares {period} with closebot's own posted {prior_month} (batch {batch_id}). "
        f"tb_activity.csv says otherwise for {prior_month}: {listing}. The export may be stale or include entries "
        "closebot did not post.",
        recommended="investigate",
        reasoning="closebot's posted batch is the books it keeps; an export that disagrees with them should be reconciled, not compared with.",
        facts={
            "month": prior_month,
            "batch_id": batch_id,
            "differences": [[a, str(p), str(t)] for a, p, t in diffs],
        },
        amount=sum((abs(p - t) for _, p, t in diffs), ZERO),
    )


def _flux_item(
    close: Any, i: dict[str, Any], split: list[dict[str, Any]], people: list[str]
) -> Finding:
    """One flagged flux item, asked on its own: explain (the draft from the documents), adjust, escalate."""
    code = i.get("account") or f"{i['well_id']}:{i['product']}"
    if i.get("account"):
        draft = flux.flux_explanation(close, i["account"])
        product = {"4010": "oil", "4020": "gas", "4030": "ngl"}.get(i["account"])
        if product and not draft:
            parts = [s for s in split if s["product"] == product]
            if parts:
                volume = sum((s["volume_part"] for s in parts), ZERO)
                price = sum((s["price_part"] for s in parts), ZERO)
                draft = f"checks this month vs the month before: volume {money(volume)}, price {money(price)}"
    else:
        draft = f"volume {money(i['volume_part'])}, price {money(i['price_part'])}"
    label = _flux_label(i)
    return Finding(
        kind="flux_item",
        key=code,
        step=FLUX.name,
        subject=label,
        summary=f"explain {label}",
        question=f"{_flux_line(i)}: beyond ±10 % and ±$5,000. "
        + (
            f"Drafted from the documents: {draft}. "
            if draft
            else "Nothing in the documents explains it. "
        )
        + "Explain (the draft, or type your own under Other), adjust with an entry you describe, or escalate?",
        recommended="explain" if draft else "escalate",
        reasoning=f"The documents behind it: {draft}."
        if draft
        else "No document explains the movement; someone who knows it should.",
        facts={"item": {k: str(v) for k, v in i.items()}, "draft": draft, "people": people},
        options=["explain", "adjust", "escalate"],
        amount=abs(Decimal(str(i["change"]))),
    )


class CloseTools(DecisionTools, PostingTools):
    """Close tools over one data directory (the shipped sample unless told otherwise)."""

    def registry(self) -> ToolRegistry:
        reg = ToolRegistry(STEPS)
        for step in REGISTRY:
            for tool in step.tools:
                reg.add(getattr(self, tool), step=step.name)
        reg.add(self.resolve_exception)
        reg.add(self.exception_details)
        reg.add(self.document_lines)
        reg.add(self.close_summary)
        return reg

    def document_lines(
        self,
        ctx: ToolContext,
        period: str,
        document: Literal["jib", "revenue"],
        well_id: str = "",
        invoice_or_check: str = "",
        page: int = 1,
    ) -> dict[str, Any]:
        """Drill down into this month's documents: the JIB or revenue stub lines of one well (or one invoice or check), a page of 12 at a time, each with its file line, amounts and decimal; with how many match and their totals. Step results and exceptions give counts and summaries; this gives the lines behind them.

        Args:
          period: the accounting period being closed, YYYY-MM
          document: jib or revenue
          well_id: the well (a well_id of the DOI), or empty for any
          invoice_or_check: a JIB invoice number or a revenue check number, or empty for any
          page: which page of 12 lines, from 1
        """
        if not well_id and not invoice_or_check:
            raise ToolError("name a well_id or an invoice_or_check to drill into")
        close, _ = self._close(ctx, period)
        per_page = 12
        first, last = (max(page, 1) - 1) * per_page, max(page, 1) * per_page
        shown: list[list[str]] = []
        count = 0
        gross = net = ZERO
        if document == "jib":
            for j, well in close.jib():
                if (well_id and well != well_id) or (
                    invoice_or_check and j.invoice_no != invoice_or_check
                ):
                    continue
                gross += j.gross_amount
                net += j.owner_net_amount
                count += 1
                if first < count <= last:
                    shown.append(
                        [
                            j.ref,
                            j.invoice_no,
                            j.service_month,
                            well or f"property {j.property_no}",
                            j.cost_category,
                            _short(j.description, 40),
                            str(j.gross_amount),
                            str(j.owner_decimal),
                            str(j.owner_net_amount),
                        ]
                    )
            columns = "ref invoice service_month well category description gross decimal net"
        else:
            for r, well in close.revenue():
                if (well_id and well != well_id) or (
                    invoice_or_check and r.check_no != invoice_or_check
                ):
                    continue
                gross += r.gross_value
                net += r.owner_net_value
                count += 1
                if first < count <= last:
                    shown.append(
                        [
                            r.ref,
                            r.check_no,
                            r.sale_month,
                            well or f"property {r.property_no}",
                            r.product,
                            str(r.gross_volume),
                            str(r.price),
                            str(r.gross_value),
                            str(r.gross_taxes),
                            str(r.gross_deductions),
                            str(r.owner_decimal),
                            str(r.owner_net_value),
                        ]
                    )
            columns = (
                "ref check sale_month well product volume price value taxes deductions decimal net"
            )
        pages = max(1, -(-count // per_page))
        return {
            "document": document,
            "well_id": well_id or None,
            "invoice_or_check": invoice_or_check or None,
            "lines": count,
            "gross_total": gross,
            "owner_net_total": net,
            "page": page,
            "pages": pages,
            "columns": columns.split(),
            "rows": shown,
        }

    def load_period(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 1, intake: load and check every file of the period, map property numbers to wells, and record intake exceptions (unknown property or well, DOI sanity, decimals out of range, stub math, missing documents, an unbalanced trial balance).

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        # the open items last month's sign-off carried come first: settled, still open, written off
        previous = add_months(period, -1)
        self._record(
            ctx,
            ledger,
            [
                _carried_finding(previous, c, names=Names(ctx.store))
                for c in ledger.carried_into(previous)
            ],
        )
        self._record(ctx, ledger, INTAKE.findings(close))
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
        return self._step_result(
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

    def validate_interests(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 2: compare every JIB owner decimal to the DOI WI and every revenue stub decimal to the DOI NRI in force for its month (tolerance 0.000001); each mismatch becomes an exception with a recommendation.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        self._record(ctx, ledger, INTERESTS.findings(close))
        return self._step_result(ctx, ledger, INTERESTS.name, tolerance="0.000001")

    def reconcile_jibs(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 3: JIB line math, duplicates (within the file and against jib_history), charges over 24 months old, AFE overruns over 10 %, overhead vs the JOA rate; and the LOE accrual (trailing 3-month average × WI).

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        self._record(ctx, ledger, JIBS.findings(close))
        accrual = jibs.loe_accrual(close)
        return self._step_result(
            ctx,
            ledger,
            JIBS.name,
            loe_accrual_total=sum((a["amount"] for a in accrual), ZERO),
            loe_accrual=[  # the first few, formatted (not every well's, then cut)
                f"{a['well_name']} {a['category']}: {money(a['amount'])}"
                for a in accrual[:MAX_LIST]
            ],
        )

    def accrue_revenue(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 4: accrue revenue per well × product × production month with volumes but no check (volume × (benchmark − differential) × NRI, less severance); new wells, shut-in wells and accruals under $2,500 are exceptions.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        items, findings = revenue.revenue_accrual(close)
        total = sum((i.revenue for i in items), ZERO)
        shown = [
            f"{i.well_name} {i.product} {i.month}: {money(i.revenue)}" for i in items[:MAX_LIST]
        ]
        del items  # the journal builds them again: not held while the other checks run
        self._record(ctx, ledger, findings + REVENUE.findings(close))
        return self._step_result(
            ctx,
            ledger,
            REVENUE.name,
            revenue_accrual_total=total,
            history_gaps=revenue.history_gaps(close)[:MAX_LIST],
            accruals=shown,
        )

    def check_severance(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 5: effective severance rate per stub line vs the state × product table (OK 5 % in the first 36 months, ND gas per Mcf); off by more than 0.25 pp is an exception.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        self._record(ctx, ledger, SEVERANCE.findings(close))
        return self._step_result(ctx, ledger, SEVERANCE.name)

    def review_flux(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 7: this month's P&L activity by account (the current batch) vs the prior month's, flagged beyond ±10 % and ±$5,000; revenue split into volume and price per well and product. Flagged items become a "which need an explanation?" question.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        close, ledger = self._close(ctx, period)
        batch = ledger.current_batch(ctx.run_id)
        if batch is None:
            raise ToolError("no journal batch yet: run build_journal_entries first")
        skip = any(
            KINDS[e["kind"]].skips_flux(e["resolution"] or "")
            for e in ledger.exceptions(ctx.run_id)
        )
        prior_month = add_months(period, -1)
        posted = ledger.posted_batch(prior_month)
        findings: list[Finding] = []
        tb = flux.tb_prior(close)
        if posted is not None:
            prior = flux.activity(ledger.account_totals(posted["id"]))
            basis = f"closebot's posted {prior_month} (batch {posted['id']})"
            diffs = flux.basis_differences(prior, tb) if tb is not None else []
            if diffs:
                findings.append(_basis_finding(period, prior_month, posted["id"], diffs))
        elif skip or tb is None:
            prior, basis = None, "nothing (no trial balance to compare with)"
        else:
            prior, basis = tb, f"tb_activity.csv {prior_month}"
        items = (
            flux.flux(close, ledger.account_totals(batch["id"]), prior) if prior is not None else []
        )
        split = flux.revenue_split(close)
        flagged = [i for i in items if i["flagged"]] + [s for s in split if s["flagged"]]
        people = sorted(self.approvers) or [
            ctx.store.runs.get(ctx.run_id).started_by or "the controller"
        ]
        findings += [_flux_item(close, i, split, people) for i in flagged]
        self._record(ctx, ledger, findings)
        return self._step_result(
            ctx,
            ledger,
            FLUX.name,
            compared_with=basis,
            accounts=[_flux_line(i) + (" FLAGGED" if i["flagged"] else "") for i in items][
                :MAX_LIST
            ],
            revenue_split=[
                _flux_line(s) for s in sorted(split, key=lambda s: -abs(s["change"]))[:6]
            ],
        )

    def sign_off(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 8: every step's status and every open item (undecided exceptions, disputes, suspense, requests, unexplained flux, an unposted batch, steps not run); open items are carried forward with an owner and due date, or the period lock is blocked.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        self._data(ctx, period)
        ledger = Ledger(ctx.store)
        previous = add_months(period, -1)
        # a run an earlier release started asks them here (this release asks them at intake)
        self._record(
            ctx,
            ledger,
            [
                _carried_finding(previous, c, SIGNOFF.name, Names(ctx.store))
                for c in ledger.carried_into(previous)
            ],
        )
        waiting = [
            e
            for e in ledger.exceptions(ctx.run_id)
            if KINDS[e["kind"]].waits_signoff and e["status"] != "resolved"
        ]
        if not waiting:
            self._record(ctx, ledger, self._signoff_finding(ctx, ledger, period))
        items = self._open_items(ctx, ledger)
        return self._step_result(
            ctx,
            ledger,
            SIGNOFF.name,
            open_items=[i["text"] for i in items][:MAX_LIST],
            open_item_count=len(items),
        )

    def close_summary(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """The run's summary: every step's status, exceptions and how each was decided and by whom, the batch by account, accruals, DOI changes, open items with owners.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        self._data(ctx, period)
        ledger = Ledger(ctx.store)
        run = ctx.store.runs.get(ctx.run_id)
        excs = ledger.exceptions(ctx.run_id)
        batch = ledger.current_batch(ctx.run_id)
        by_account = ledger.account_totals(batch["id"]) if batch else []
        carried = ledger.open_items(ctx.run_id)
        names = Names(ctx.store)
        items = [
            {"text": i["text"], "owner": names.cached(i["owner"], default=""), "due": i["due"]}
            for i in carried
        ]
        # what opened since the sign-off stored them (a decision after the draft, say) too
        stored = {i["text"] for i in carried}
        items += [
            {"text": i["text"], "owner": None, "due": None}
            for i in self._open_items(ctx, ledger)
            if i["text"] not in stored
        ]
        for step in STEPS:
            state = run.steps.get(step, "pending")
            if state in ("pending", "failed") and not any(step in i["text"] for i in items):
                items.append(
                    {
                        "text": f"step '{step}' {'failed' if state == 'failed' else 'was not performed'}",
                        "owner": None,
                        "due": None,
                    }
                )
        lock = [e for e in excs if KINDS[e["kind"]].signs_off]
        decided = [e for e in excs if not KINDS[e["kind"]].about_open_items]  # carried: open items
        doi_changes = [
            f"{r['well_id']} from {r['effective_from']}: WI {r['row']['wi']} / NRI {r['row']['nri']} ({r['status']})"
            for r in ledger.doi_rows(run_id=ctx.run_id)
        ]
        return {
            "period": period,
            "period_label": close_data.period_label(period),
            "steps": {s: run.steps.get(s, "pending") for s in STEPS},
            "exceptions": [
                {
                    "subject": e["details"]["subject"],
                    "summary": _short(e["details"]["summary"], 110),
                    "decision": option_label(e["kind"], e["resolution"], e["details"]["facts"])
                    if e["resolution"] and e["resolution"] in e["details"]["options"]
                    else e["resolution"],
                    "by": f"{e['decided_by']} ({e['decision_source']})",
                }
                if e["status"] == "resolved"
                else {
                    "subject": e["details"]["subject"],
                    "summary": _short(e["details"]["summary"], 110),
                    "status": e["status"],
                }
                for e in decided[:MAX_LIST]
            ],
            "exception_count": len(decided),
            "batch": {
                "batch_id": batch["id"],
                "status": batch["status"],
                "total_debit": batch["total_debit"],
                "total_credit": batch["total_credit"],
                "posted_by": batch["posted_by"],
                "by_account": [[a["account"], a["debit"], a["credit"]] for a in by_account],
            }
            if batch
            else None,
            "doi_changes": doi_changes[:MAX_LIST],
            "doi_change_count": len(doi_changes),
            "period_lock": (lock[0]["resolution"] or "pending")
            if lock
            else ("locked" if not items else "not signed off"),
            "open_items": items[:MAX_LIST],
            "open_item_count": len(items),
        }

"""The month-end close toolset the agent (Claude or the offline playbook) works with."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from bot.close import data as close_data
from bot.close.data import CloseData
from bot.close.interests import (
    RESOLUTIONS,
    find_mismatches,
    line_math_errors,
    money,
    resolution_label,
)
from bot.close.journal import ZERO, JournalError, build_entries, totals_by_account
from bot.errors import DataError, NotFoundError
from bot.questions import HUMAN_SOURCES, TOOL_NAME
from bot.tools import ToolContext, ToolError, ToolRegistry

STEPS = ("Intake", "WI/NRI validation", "Journal entries", "Posting", "Summary")

Resolution = Literal["accept_operator", "short_pay_dispute", "suspense", "defer"]


def batch_id_for(run_id: str, period: str) -> str:
    return f"JE-{period}-{run_id[:6]}"


class CloseTools:
    """Close tools over one data directory (the shipped sample unless told otherwise)."""

    def __init__(
        self, *, data_dir: Path | None = None, approvers: frozenset[str] = frozenset()
    ) -> None:
        self.data_dir = data_dir
        self.approvers = approvers
        self._cache: dict[str, CloseData] = {}

    def registry(self) -> ToolRegistry:
        reg = ToolRegistry(STEPS)
        reg.add(self.load_period, step="Intake")
        reg.add(self.validate_interests, step="WI/NRI validation")
        reg.add(self.resolve_exception, step="WI/NRI validation")
        reg.add(self.build_journal_entries, step="Journal entries")
        reg.add(self.post_journal_entries, step="Posting")
        reg.add(self.close_summary, step="Summary")
        return reg

    def _data(self, ctx: ToolContext, period: str) -> CloseData:
        run = ctx.store.run(ctx.run_id)
        if period != run.period:
            raise ToolError(
                f"this run closes {run.period}, not {period}; use period {run.period!r}"
            )
        if period not in self._cache:
            try:
                self._cache[period] = close_data.load(period, self.data_dir)
            except DataError as e:
                raise ToolError(str(e)) from e
        return self._cache[period]

    def load_period(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 1, intake: load the period's DOI master, JIB lines, revenue stubs and prior trial balance.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        d = self._data(ctx, period)
        by_state = Counter(w.state for w in d.wells.values())
        by_operator: dict[str, Decimal] = {}
        for j in d.jib:
            by_operator[j.operator] = by_operator.get(j.operator, ZERO) + j.owner_net_amount
        return {
            "period": period,
            "period_label": close_data.period_label(period),
            "wells": len(d.wells),
            "wells_by_state": dict(sorted(by_state.items())),
            "jib_lines": len(d.jib),
            "jib_invoices": len({j.invoice_no for j in d.jib}),
            "jib_service_months": sorted({j.service_month for j in d.jib}),
            "jib_owner_net_total": sum((j.owner_net_amount for j in d.jib), ZERO),
            "jib_owner_net_by_operator": by_operator,
            "revenue_lines": len(d.revenue),
            "revenue_checks": len({r.check_no for r in d.revenue}),
            "revenue_sale_months": sorted({r.sale_month for r in d.revenue}),
            "revenue_owner_net_total": sum((r.owner_net_value for r in d.revenue), ZERO),
            "prior_trial_balance_accounts": len(d.prior_tb),
        }

    def validate_interests(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 2: compare every JIB owner decimal to the DOI WI and every revenue stub decimal to the DOI NRI.

        Each mismatch (tolerance 0.000001) is recorded as an open exception with the numbers,
        a recommended resolution computed from the data and its reasoning. Each needs a
        person's decision through ask_user_question before entries are built.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        d = self._data(ctx, period)
        mismatches = []
        for m in find_mismatches(d):
            exception_id = f"{ctx.run_id}:{m.exception_id_suffix}"
            record = ctx.store.record_exception(
                ctx.run_id,
                exception_id=exception_id,
                kind="wi_nri_mismatch",
                well_id=m.well.well_id,
                details=m.facts(),
            )
            mismatches.append(
                {"exception_id": exception_id, "status": record["status"], **m.facts()}
            )
        return {
            "period": period,
            "wells_checked": len(d.wells),
            "tolerance": "0.000001",
            "mismatches": mismatches,
            "line_math_errors": line_math_errors(d),
            "resolution_options": {
                code: {"label": label, "description": desc}
                for code, (label, desc) in RESOLUTIONS.items()
            },
        }

    def resolve_exception(
        self,
        ctx: ToolContext,
        exception_id: str,
        resolution: Resolution,
        question_id: str,
        note: str = "",
    ) -> dict[str, Any]:
        """Record the decision on an open exception, as the person chose it through ask_user_question.

        Args:
          exception_id: the exception_id reported by validate_interests
          resolution: accept_operator, short_pay_dispute, suspense or defer
          question_id: the id of the ask_user_question tool call whose answer decided this
          note: optional context for the audit trail
        """
        try:
            exc = ctx.store.exception(exception_id)
        except NotFoundError as e:
            raise ToolError(str(e)) from e
        if exc["run_id"] != ctx.run_id:
            raise ToolError(f"exception {exception_id} belongs to another run")
        if exc["status"] != "open":
            return {
                "exception_id": exception_id,
                "status": exc["status"],
                "resolution": exc["resolution"],
                "note": "already resolved; nothing changed",
            }
        question = self._answered_question(ctx, question_id)
        record = ctx.store.resolve_exception(
            exception_id,
            resolution=resolution,
            note=note or None,
            question_id=question_id,
            decided_by=question.answered_by,
            decision_source=question.source,
        )
        result: dict[str, Any] = {
            "exception_id": exception_id,
            "status": record["status"],
            "resolution": resolution,
            "resolution_label": resolution_label(resolution),
            "decided_by": question.answered_by,
            "source": question.source,
        }
        if resolution == "accept_operator":
            facts = exc["details"]
            change = {
                "well_id": facts["well_id"],
                "wi": {"from": facts["doi_wi"], "to": facts["jib_decimal"]},
                "nri": {"from": facts["doi_nri"], "to": facts["stub_decimal"] or facts["doi_nri"]},
            }
            ctx.store.audit(
                run_id=ctx.run_id, kind="doi_update", actor=question.answered_by, detail=change
            )
            result["doi_update"] = change
        return result

    def _answered_question(self, ctx: ToolContext, question_id: str) -> Any:
        try:
            q = ctx.store.question(question_id)
        except NotFoundError:
            raise ToolError(f"no {TOOL_NAME} call with id {question_id!r} in this run") from None
        if q.run_id != ctx.run_id:
            raise ToolError(f"question {question_id} belongs to another run")
        if q.status != "answered":
            raise ToolError(
                f"question {question_id} was {q.status}, not answered; the decision is still open"
            )
        return q

    def build_journal_entries(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Step 6: draft balanced journal entries for the JIB bills and revenue checks.

        Applies each recorded resolution; a mismatch without one is booked at the DOI decimal
        with the difference held in suspense. Amounts are exact to the cent and every entry
        balances. The batch stays a draft until post_journal_entries.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        d = self._data(ctx, period)
        exceptions = ctx.store.exceptions(ctx.run_id)
        resolutions = {
            e["well_id"]: e["resolution"] for e in exceptions if e["status"] == "resolved"
        }
        try:
            entries = build_entries(d, resolutions)
        except JournalError as e:
            raise ToolError(str(e)) from e
        lines = [line for e in entries for line in e.lines]
        batch_id = batch_id_for(ctx.run_id, period)
        batch = ctx.store.save_journal_batch(
            ctx.run_id, batch_id=batch_id, period=period, lines=lines
        )
        total_debit = Decimal(batch["total_debit"])
        total_credit = Decimal(batch["total_credit"])
        return {
            "batch_id": batch_id,
            "status": batch["status"],
            "entries": [
                {
                    "entry_no": e.number,
                    "description": e.description,
                    "lines": len(e.lines),
                    "amount": sum((line["debit"] for line in e.lines), ZERO),
                }
                for e in entries
            ],
            "total_debit": total_debit,
            "total_credit": total_credit,
            "balanced": total_debit == total_credit,
            "by_account": totals_by_account(lines),
            "open_exceptions": [e["id"] for e in exceptions if e["status"] == "open"],
            "period_already_posted": [b["id"] for b in ctx.store.posted_batches(period)],
        }

    def post_journal_entries(
        self, ctx: ToolContext, batch_id: str, approval_question_id: str
    ) -> dict[str, Any]:
        """Post a drafted batch to the ledger: the one irreversible step. Idempotent per batch.

        Refused unless approval_question_id is an ask_user_question call of this run that names
        the batch id, was answered by a person (not an automatic default) who started the run
        or is an approver, choosing an option whose label starts with "Approve".

        Args:
          batch_id: the batch_id from build_journal_entries
          approval_question_id: the id of the ask_user_question call that asked for approval
        """
        try:
            batch = ctx.store.journal_batch(batch_id)
        except NotFoundError as e:
            raise ToolError(str(e)) from e
        if batch["run_id"] != ctx.run_id:
            raise ToolError(f"batch {batch_id} belongs to another run")
        if batch["status"] == "posted":
            return {
                "batch_id": batch_id,
                "status": "posted",
                "posted_by": batch["posted_by"],
                "note": "already posted; nothing changed",
            }
        if batch["total_debit"] != batch["total_credit"]:
            raise ToolError(f"batch {batch_id} does not balance; it cannot be posted")
        earlier = [b for b in ctx.store.posted_batches(batch["period"]) if b["id"] != batch_id]
        if earlier:
            first = earlier[0]
            raise ToolError(
                f"Not posted: batch {first['id']} already posted {batch['period']} (by {first['posted_by']} at "
                f"{first['posted_at']}); posting {batch_id} too would book the period twice. It stays a draft."
            )
        q = self._answered_question(ctx, approval_question_id)
        refusal = None
        if q.source not in HUMAN_SOURCES:
            refusal = f"the approval was an automatic default ({q.source}); posting needs a person's approval"
        elif batch_id not in q.context and not any(
            batch_id in item["question"] for item in q.questions
        ):
            refusal = f"question {approval_question_id} does not ask about batch {batch_id}"
        elif not any(
            label.casefold().startswith("approve")
            for a in (q.answer or {}).values()
            for label in a.get("labels", [])
        ):
            refusal = "the answer did not approve posting"
        else:
            run = ctx.store.run(ctx.run_id)
            if q.answered_by != run.started_by and q.answered_by not in self.approvers:
                refusal = f"{q.answered_by} is neither the run's starter nor an approver"
        if refusal:
            ctx.store.audit(
                run_id=ctx.run_id,
                kind="posting_refused",
                actor=q.answered_by,
                detail={"batch_id": batch_id, "reason": refusal},
            )
            raise ToolError(f"Not posted: {refusal}. Batch {batch_id} stays a draft.")
        ctx.store.post_journal_batch(
            batch_id, posted_by=q.answered_by, approval_question_id=approval_question_id
        )
        return {
            "batch_id": batch_id,
            "status": "posted",
            "posted_by": q.answered_by,
            "total": Decimal(batch["total_debit"]),
        }

    def close_summary(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """The run's summary: exceptions and how each was decided and by whom, entries by account, posting, open items.

        Args:
          period: the accounting period being closed, YYYY-MM
        """
        self._data(ctx, period)
        exceptions = ctx.store.exceptions(ctx.run_id)
        batches = ctx.store.journal_batches(ctx.run_id)
        batch = batches[-1] if batches else None
        lines = ctx.store.journal_lines(batch["id"]) if batch else []
        open_items = [
            f"{e['details']['well_name']}: WI/NRI mismatch undecided"
            for e in exceptions
            if e["status"] == "open"
        ]
        if batch is None:
            open_items.append("no journal entries were drafted")
        elif batch["status"] != "posted":
            open_items.append(
                f"batch {batch['id']} ({money(Decimal(batch['total_debit']))}) is a draft, not posted"
            )
        follow_ups = []
        for e in exceptions:
            facts = e["details"]
            if e["resolution"] == "accept_operator":
                follow_ups.append(
                    f"update the DOI master for {facts['well_name']} (WI {facts['doi_wi']} → {facts['jib_decimal']}, "
                    f"NRI {facts['doi_nri']} → {facts['stub_decimal'] or facts['doi_nri']}) and book the prior-period catch-up"
                )
            elif e["resolution"] == "short_pay_dispute":
                follow_ups.append(
                    f"dispute {money(Decimal(facts['jib_difference']))} with {facts['operator']} ({facts['well_name']})"
                )
            elif e["resolution"] in ("suspense", "defer"):
                follow_ups.append(
                    f"confirm the interest in {facts['well_name']} with {facts['operator']}; the difference is in suspense"
                )
        return {
            "period": period,
            "period_label": close_data.period_label(period),
            "follow_ups": follow_ups,
            "exceptions": [
                {
                    "exception_id": e["id"],
                    "well": e["details"]["well_name"],
                    "pattern": e["details"]["pattern"],
                    "status": e["status"],
                    "resolution": resolution_label(e["resolution"]) if e["resolution"] else None,
                    "decided_by": e["decided_by"],
                    "source": e["decision_source"],
                }
                for e in exceptions
            ],
            "batch": (
                {
                    "batch_id": batch["id"],
                    "status": batch["status"],
                    "total_debit": batch["total_debit"],
                    "total_credit": batch["total_credit"],
                    "posted_by": batch["posted_by"],
                    "by_account": totals_by_account(lines),
                }
                if batch
                else None
            ),
            "open_items": open_items,
        }

"""The month-end close toolset the agent (Claude or the offline playbook) works with: each
step's tools (registered in its module in bot/close/steps/), one to record a person's
decision, a drill-down, the summary."""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import Any, Literal

from bot.close import data as close_data
from bot.close import groups
from bot.close.data import ZERO
from bot.close.decisions import DecisionTools
from bot.close.decisions.answers import option_of
from bot.close.exception_questions import question_for, question_for_group, shortened
from bot.close.inquiries import how_answered
from bot.close.kinds import KINDS
from bot.close.ledger import Ledger
from bot.close.open_items import assignment_questions
from bot.close.posting import PostingTools
from bot.close.steps import names as step_names
from bot.close.steps import registry
from bot.close.toolbase import MAX_LIST, fit
from bot.close.toolset_approval import approval_questions, header_of_ref
from bot.core.names import Names
from bot.core.tools import ToolContext, ToolError, ToolRegistry

# a DOI row's status as people read it (the stored words stay in the decision log)
DOI_STATUS = {"proposed": "proposed: in force once the batch is posted", "in_force": "in force"}


def decided_by(names: Names, who: str | None, source: str | None) -> str:
    """'Alice Park', or 'the recommendation, applied by default': a name, never a user id or
    the stored source word."""
    return how_answered(source) or names.cached(who, default="closebot")


class CloseTools(DecisionTools, PostingTools):
    """Close tools over one data directory (the shipped sample unless told otherwise)."""

    def registry(self) -> ToolRegistry:
        steps = registry()
        reg = ToolRegistry([s.name for s in steps])
        for step in steps:  # each step's tools, bound to this toolset (their `tools` argument)
            for tool in step.tools:
                reg.add(MethodType(tool, self), step=step.name)
        reg.add(self.resolve_exception)
        reg.add(self.exception_details)
        reg.add(self.document_lines)
        reg.add(self.close_summary)
        reg.prepared = self.prepared_questions  # ask_user_question by ref
        reg.record_answers = self.record_answers  # ...its answers recorded as they come
        return reg

    def prepared_questions(self, ctx: ToolContext, ref: str) -> list[dict[str, Any]]:
        """The questions a ref names, exactly as exception_details prepares them: an
        exception's (a sign-off's with its owners and due dates after it), a group's; or a
        batch's approval (toolset_approval.py)."""
        if groups.is_group(ref):
            return [question_for_group(self._group(ctx, ref))]
        if header_of_ref(ref):
            return approval_questions(ctx, ref)
        try:
            exc = self._exception(ctx, ref)
        except ToolError:
            raise ToolError(
                f"no prepared question with ref {ref!r}; the step results list each open "
                "exception's ref"
            ) from None
        if exc["status"] != "open":
            raise ToolError(f"{ref} is {exc['status']}, not open: there is nothing to ask")
        also = assignment_questions(exc) if KINDS[exc["kind"]].signs_off else []
        return [question_for(exc), *also]

    def tool(self, name: str) -> Callable[..., Any]:
        """A tool by its name, bound to this toolset: `tool("build_journal_entries")(ctx, period)`."""
        found = self.registry().get(name)
        if found is None:
            raise KeyError(f"no close tool {name!r}")
        return found.fn

    def record_answers(
        self, ctx: ToolContext, question_id: str, asked: list[tuple[int, str]]
    ) -> list[dict[str, Any]]:
        """Each answer to a question asked by reference recorded as resolve_exception would
        (bound to the question); what it booked, or why it was not recorded (asked again)."""
        answers = self._answered(ctx, question_id).answer or {}
        out: list[dict[str, Any]] = []
        for n, ref in asked:
            if header_of_ref(ref):
                continue  # an approval: posting takes its question's id
            option, note = option_of(answers.get(str(n)) or {"skipped": True})
            try:
                out.append(
                    {"ref": ref, **self.resolve_exception(ctx, ref, option, question_id, note)}
                )
            except ToolError as e:
                out.append({"ref": ref, "not_recorded": str(e)})
        return out

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
                            shortened(j.description, 40),
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
        items: list[dict[str, Any]] = [
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
        for step in step_names():
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
            f"{r['well_id']} from {r['effective_from']}: WI {r['row']['wi']} / NRI {r['row']['nri']} "
            f"({DOI_STATUS.get(r['status'], r['status'])})"
            for r in ledger.doi_rows(run_id=ctx.run_id)
        ]
        summary = {
            "period": period,
            "period_label": close_data.period_label(period),
            "steps": {s: run.steps.get(s, "pending") for s in step_names()},
            "exceptions": [
                {
                    "subject": e["details"]["subject"],
                    "summary": shortened(e["details"]["summary"], 110),
                    "decision": KINDS[e["kind"]].decided(
                        e["resolution"], e["details"]["facts"], e["extra"]
                    )
                    if e["resolution"] and e["resolution"] in e["details"]["options"]
                    else e["resolution"],
                    "by": decided_by(names, e["decided_by"], e["decision_source"]),
                }
                if e["status"] == "resolved"
                else {
                    "subject": e["details"]["subject"],
                    "summary": shortened(e["details"]["summary"], 110),
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
        # at any size under the budget: the lists shortened, their counts kept
        return fit(summary, "exceptions", "doi_changes", "open_items")

"""Deciding a group of alike exceptions with one answer (`bot/close/groups.py`): each member
recorded as on its own, or the group split to be asked line by line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.close import groups
from bot.close.decisions.answers import FACT_ITEMS, bound_answer, codes_of, group_answer
from bot.close.decisions.changes import ChangeTools, change_refusal
from bot.close.doi_master import ACCOUNT_NAMES
from bot.close.exception_questions import question_for_group
from bot.close.kinds import book, describe
from bot.close.ledger import Ledger
from bot.close.records import ExceptionRow
from bot.core.tools import ToolContext, ToolError

Resolve = Callable[[ToolContext, str, str, str, str], dict[str, Any]]


class GroupDecisionTools(ChangeTools):
    """A group's details and its one answer."""

    def _group(self, ctx: ToolContext, ref: str) -> list[ExceptionRow]:
        found = groups.members(Ledger(ctx.store).exceptions(ctx.run_id), ref)
        if not found:
            raise ToolError(f"no group {ref!r} in this run; the step results list its groups")
        return found

    def _group_details(self, ctx: ToolContext, ref: str) -> dict[str, Any]:
        group = self._group(ctx, ref)
        return {
            "exception_id": ref,
            "kind": group[0]["kind"],
            "status": groups.status(group),
            "summary": groups.summary(group),
            "exceptions": len(group),
            "question": question_for_group(group),
            "first": [e["details"]["ref"] for e in group[:FACT_ITEMS]],
            "note": f"One question for all {len(group)}: record the answer with resolve_exception "
            "and this group's ref; the detail of every line is attached to the form.",
        }

    def _resolve_group(
        self,
        ctx: ToolContext,
        ref: str,
        option: str,
        question_id: str,
        note: str,
        resolve: Resolve,
    ) -> dict[str, Any]:
        """The group's answer for each of its exceptions, each recorded as on its own by
        `resolve` (bound to the question that named the group); "Decide line by line" leaves
        each open to be asked."""
        group = self._group(ctx, ref)
        q = self._answered(ctx, question_id)
        labels = group_answer(q, ref)
        if groups.LINE_BY_LINE in labels:
            if option.strip() not in (groups.LINE_BY_LINE, groups.LINE_BY_LINE_CODE):
                raise ToolError(
                    f"{q.answered_by} chose {groups.LINE_BY_LINE!r} for {ref}, not {option!r}; record what they chose"
                )
            ledger = Ledger(ctx.store)
            # a change of the group's decision (issue 31) reopens every line, each asked alone
            changing = [e for e in group if self._change_of(ctx, e, q.id) is not None]
            split = changing or [e for e in group if e["status"] != "resolved"]
            for e in split:
                if changing and (refusal := change_refusal(ledger, e)):
                    raise ToolError(f"{e['details']['ref']}: {refusal}")
                (ledger.change_decision if changing else ledger.decide)(
                    e["id"],
                    option=groups.LINE_BY_LINE_CODE,
                    status="open",
                    extra={groups.LINE_BY_LINE_CODE: ref},
                    question_id=q.id,
                    decided_by=q.answered_by,
                    source=q.source,
                )
            return {
                "group": ref,
                "status": "line by line",
                "exceptions": len(split),
                "follow_up_exceptions": [
                    {"ref": e["details"]["ref"], "step": e["details"]["step"]} for e in split
                ],
                "next": "Ask about each of these with ask_user_question (exception_details gives each "
                "one's question), then record each with resolve_exception.",
            }
        for e in group:  # every exception takes this answer, or none is recorded
            if e["status"] != "resolved":
                chosen, typed = bound_answer(q, e)
                codes = codes_of(e, option)
                if typed is None and codes != chosen:
                    raise ToolError(
                        f"{q.answered_by} chose {', '.join(labels) or 'nothing'} for {ref}, not "
                        f"{option!r}; record what they chose"
                    )
        results = [resolve(ctx, e["id"], option, question_id, note) for e in group]
        decided = [
            self._exception(ctx, e["id"]) for e in group
        ]  # as recorded: their own codes and extras
        lines = [
            line
            for e in decided
            if e["status"] == "resolved" and e["resolution"] in e["details"]["options"]
            for line in book(e["kind"], e["resolution"], e["details"]["facts"], e["extra"])
        ]
        return {
            "group": ref,
            "status": groups.status(decided),
            "exceptions": len(group),
            "decision": results[0].get("decision") or results[0].get("status"),
            "decided_by": q.answered_by,
            "source": q.source,
            "books": describe(lines, names=ACCOUNT_NAMES),
        }

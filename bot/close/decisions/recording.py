"""Recording a decision: the option bound to the question that asked it, what the exception's
kind sets off when it is decided (its hooks in `bot/close/kinds/`), the other exceptions on the
same document lines it settles, and what it books, as the tool result says it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from bot.close.checks import Close, Finding
from bot.close.doi_master import ACCOUNT_NAMES, money
from bot.close.kinds import (
    KINDS,
    SETTLED,
    Deciding,
    book,
    describe,
    line_refs,
    option_entry,
    option_label,
)
from bot.close.ledger import Ledger
from bot.close.records import ExceptionRow, OpenItem
from bot.close.toolbase import ToolBase
from bot.core.tools import ToolContext
from bot.store import QuestionRecord


class RecordingTools(ToolBase):
    """Recording one exception's decision, and what the close's tools lend the kinds' hooks
    (the `Desk` they decide at)."""

    # -- the desk a kind's hooks use ---------------------------------------------------

    def close_of(self, ctx: ToolContext) -> Close:
        """The run's view of its period."""
        close, _ = self._close(ctx, ctx.store.runs.get(ctx.run_id).period)
        return close

    def open_items(self, ctx: ToolContext, ledger: Ledger) -> list[OpenItem]:
        return self._open_items(ctx, ledger)

    def signoff_findings(self, ctx: ToolContext, ledger: Ledger) -> list[Finding]:
        return self._signoff_finding(ctx, ledger, ctx.store.runs.get(ctx.run_id).period)

    def keep_open(
        self, ledger: Ledger, exc: ExceptionRow, q: QuestionRecord, why: str
    ) -> dict[str, Any]:
        ledger.decide(
            exc["id"],
            option="open",
            status="open",
            extra={"note": why},
            question_id=q.id,
            decided_by=q.answered_by,
            source=q.source,
        )
        return {"exception_id": exc["id"], "status": "open", "note": f"{why}; the item stays open"}

    # -- recording -----------------------------------------------------------------------

    def decide(
        self,
        ctx: ToolContext,
        ledger: Ledger,
        exc: ExceptionRow,
        code: str,
        q: QuestionRecord,
        extra: dict[str, Any],
    ) -> dict[str, Any]:
        """Record `code` as the decision on `exc`, with what its kind sets off."""
        d = exc["details"]
        kind = KINDS[exc["kind"]]
        deciding = Deciding(self, ctx, ledger, exc, code, q, extra)
        kind.on_decided(deciding)
        extra = deciding.extra
        record = ledger.decide(
            exc["id"],
            option=code,
            status="resolved",
            extra=extra,
            question_id=q.id,
            decided_by=q.answered_by,
            source=q.source,
        )
        settled = self._settle_others(ctx, ledger, exc, q) if kind.holds(code, d["facts"]) else []
        kind.after_recorded(deciding)
        new = self._record(ctx, ledger, deciding.spawned)
        lines = book(exc["kind"], code, d["facts"], record["extra"])
        result: dict[str, Any] = {
            "exception_id": exc["id"],
            "status": "resolved",
            "decision": option_label(exc["kind"], code, d["facts"]) if "," not in code else code,
            "decided_by": q.answered_by,
            "source": q.source,
            "books": option_entry(exc["kind"], code, d["facts"], record["extra"], lines=lines)
            if "," not in code
            else describe(lines, names=ACCOUNT_NAMES),
        }
        if settled:
            result["settles"] = settled
        if new:
            result["follow_up_exceptions"] = [
                {
                    "exception_id": e["id"],
                    "ref": e["details"]["ref"],
                    "step": e["details"]["step"],
                    "summary": e["details"]["summary"],
                }
                for e in new
            ]
            result["next"] = (
                "Ask the follow-up question(s) with ask_user_question, then record them with resolve_exception."
            )
        if extra.get("catch_up"):
            result["catch_up"] = [
                f"{c['memo']}: Dr {c['debit']} / Cr {c['credit']} {money(Decimal(c['amount']))}"
                for c in extra["catch_up"]
            ]
        return result

    def _settle_others(
        self, ctx: ToolContext, ledger: Ledger, exc: ExceptionRow, q: QuestionRecord
    ) -> list[str]:
        """A decision that holds, maps or replaces document lines settles every other open
        exception about only those lines: they are recorded as settled by it, booking nothing."""
        lines = line_refs(exc["details"]["facts"])
        out = []
        for other in ledger.exceptions(ctx.run_id) if lines else []:
            theirs = line_refs(other["details"]["facts"])
            if other["id"] == exc["id"] or other["status"] == "resolved" or not theirs:
                continue
            if theirs <= lines:
                ledger.decide(
                    other["id"],
                    option=SETTLED.code,
                    status="resolved",
                    extra={"settled_by": exc["details"]["ref"]},
                    question_id=q.id,
                    decided_by=q.answered_by,
                    source=q.source,
                )
                out.append(other["details"]["ref"])
        return out

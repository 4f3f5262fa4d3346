"""What the journal step's posting shares with the rest of the close: which exceptions hold the
posting back, and the batch's detail rebuilt line by line from the files and the decisions."""

from __future__ import annotations

from typing import Any

from bot.close.controls import ContentHash
from bot.close.data import add_months
from bot.close.journal import build
from bot.close.kinds import KINDS
from bot.close.ledger import Ledger
from bot.close.records import ExceptionRow
from bot.close.toolbase import ToolBase
from bot.core.tools import ToolContext, ToolError

# the kinds whose questions explain the books, never change them
REVIEW_KINDS = tuple(k.name for k in KINDS.values() if k.review_only)


def review_only(exc: ExceptionRow) -> bool:
    """Flux review's questions: they explain the books, never change them (an adjustment is its
    own kind, and books)."""
    return KINDS[exc["kind"]].review_only


def undecided(exc: ExceptionRow) -> bool:
    """Nobody decided this exception: open, with no answer recorded on it."""
    return exc["status"] != "resolved" and exc["resolution"] is None


class PostingTools(ToolBase):
    """The current batch's detail, for the exports and the audit (not a tool the model calls)."""

    def journal_detail(self, ctx: ToolContext) -> list[dict[str, Any]]:
        """Every source line behind each line of the run's current batch (entry_no, line_no,
        account, well, amounts, the file line), rebuilt from the files (their hashes checked
        against the run's evidence) and the run's decisions. Refused when the rebuilt entries
        are not the stored ones (content hash)."""
        run = ctx.store.runs.get(ctx.run_id)
        ledger = Ledger(ctx.store)
        batch = ledger.current_batch(ctx.run_id)
        if batch is None:
            raise ToolError(f"run {ctx.run_id} drafted no journal entries")
        close, _ = self._close(ctx, run.period)
        prior = ledger.posted_batch(add_months(run.period, -1))
        prior_lines = (
            (x for x in ledger.iter_lines(prior["id"]) if x["source"] == "accrual")
            if prior
            else None
        )
        digest = ContentHash()
        rows: list[dict[str, Any]] = []
        build(
            close,
            ledger.exceptions(ctx.run_id),
            prior_lines,
            sink=digest.add_all,
            detail_sink=rows.extend,
        )
        if digest.hexdigest() != batch["content_hash"]:
            raise ToolError(
                f"batch {batch['id']} was drafted from other files or decisions than the run "
                "has now; its detail cannot be rebuilt"
            )
        return rows

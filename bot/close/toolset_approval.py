"""The posting approvals as prepared questions: `approval:<batch id>` is the approval of a
drafted batch, `second_approval:<batch id>` the second one an entry over the limit needs
(asked of someone other than who gave the first). Rendered from the draft's own result, so
the model names the approval and never writes — or routes — it itself."""

from __future__ import annotations

import json
from typing import Any

from bot.close.controls import APPROVAL_HEADER, SECOND_APPROVAL_HEADER
from bot.close.ledger import Ledger
from bot.core.tools import ToolContext, ToolError

APPROVAL_REFS = {"approval": APPROVAL_HEADER, "second_approval": SECOND_APPROVAL_HEADER}


def approval_ref(batch_id: str, *, second: bool = False) -> str:
    return f"{'second_approval' if second else 'approval'}:{batch_id}"


def header_of_ref(ref: str) -> str | None:
    """The approval header a ref names, or None when it names no approval."""
    kind, _, batch = ref.partition(":")
    return APPROVAL_REFS.get(kind) if batch else None


def approval_questions(ctx: ToolContext, ref: str) -> list[dict[str, Any]]:
    """The approval question a ref names, built from the batch's draft result."""
    from bot.close.playbook.forms import approval_ask  # the one approval form, as offline

    kind, _, batch_id = ref.partition(":")
    batch = Ledger(ctx.store).current_batch(ctx.run_id)
    if batch is None or batch["id"] != batch_id or batch["status"] != "draft":
        raise ToolError(
            f"{batch_id} is not this run's current draft; draft the batch and ask its approval_ref"
        )
    drafted = _drafted(ctx, batch_id)
    second_to = None
    if kind == "second_approval":
        second_to = _first_approver(ctx, batch_id)
        if second_to is None:
            raise ToolError(f"ask {approval_ref(batch_id)} first: no one has approved it yet")
    return list(approval_ask(drafted, second_to=second_to)["questions"])


def _drafted(ctx: ToolContext, batch_id: str) -> dict[str, Any]:
    for message in reversed(ctx.store.transcript.messages(ctx.run_id)):
        for block in message.content if message.role == "assistant" else []:
            if block.get("type") != "tool_use" or block.get("name") != "build_journal_entries":
                continue
            stored = ctx.store.transcript.tool_result(block["id"])
            if stored is None or stored.is_error:
                continue
            result = json.loads(stored.content)
            if result.get("batch_id") == batch_id:
                return dict(result)
    raise ToolError(f"no draft result of {batch_id} in this run")


def _first_approver(ctx: ToolContext, batch_id: str) -> str | None:
    for q in reversed(ctx.store.questions.of_run(ctx.run_id)):
        first = q.questions[0] if q.questions else {}
        if (
            q.status == "answered"
            and first.get("header") == APPROVAL_HEADER
            and batch_id in str(first.get("question"))
            and any(
                str(label).startswith("Approve")
                for label in ((q.answer or {}).get("1") or {}).get("labels") or []
            )
        ):
            return q.answered_by
    return None


__all__ = ["APPROVAL_REFS", "approval_questions", "approval_ref", "header_of_ref"]

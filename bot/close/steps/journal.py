"""The journal entries step: one balanced batch drafted, and posted — the one irreversible
step, behind the controls (bot/close/controls.py)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from bot.close.controls import check_approval, content_hash, over_limit, short_hash
from bot.close.data import add_months
from bot.close.doi_master import money
from bot.close.journal import JournalError, build
from bot.close.kinds import KINDS
from bot.close.ledger import AlreadyPostedError, Ledger
from bot.close.open_items import decided_after
from bot.close.posting import review_only, undecided
from bot.close.registry import MAX_LIST, Step, StepTools
from bot.close.toolset_approval import approval_ref
from bot.core.errors import NotFoundError
from bot.core.identity import same_person
from bot.core.questions import HUMAN_SOURCES
from bot.core.tools import ToolContext, ToolError

JOURNAL = Step(
    "journal",
    "Journal entries",
    "one balanced batch: last month's reversals, documents, decisions, catch-ups, accruals; "
    "then review_flux on the draft and its questions — an adjustment decided there "
    "means build_journal_entries again (flux then reviews the new draft) — and only then ask "
    "for approval of the latest draft and post_journal_entries.",
    "Drafting the journal batch: reversals, documents, decisions, accruals.",
    after="severance",
    loading=lambda f: ["Drafting the journal entries…", "Balancing the batch…"],
)


@JOURNAL.tool
def build_journal_entries(tools: StepTools, ctx: ToolContext, period: str) -> dict[str, Any]:
    """Journal entries: draft one balanced batch — last month's accrual reversals, this month's JIBs and checks as received, every decision's adjusting entry, the catch-ups, and this month's LOE and revenue accruals. A redraft gets a new batch id.

    Args:
      period: the accounting period being closed, YYYY-MM
    """
    close, ledger = tools._close(ctx, period)
    prior = ledger.posted_batch(add_months(period, -1))
    prior_lines = (
        (x for x in ledger.iter_lines(prior["id"]) if x["source"] == "accrual") if prior else None
    )
    # each entry's lines go to the store as the entry closes: the batch is never held whole
    writer = ledger.open_batch(ctx.run_id, period=period)
    try:
        batch, info = build(
            close, ledger.exceptions(ctx.run_id), prior_lines, row_sink=writer.add_rows
        )
    except BaseException as e:
        writer.abandon()
        if isinstance(e, JournalError):
            raise ToolError(str(e)) from e
        raise
    saved = writer.finish()
    ledger.remember_account_totals(saved["id"], batch.by_account())
    excs = ledger.exceptions(ctx.run_id)
    total_debit, total_credit = Decimal(saved["total_debit"]), Decimal(saved["total_credit"])
    posted = ledger.posted_batch(period)
    # every list below is bounded, with its count: the result is the same size at any volume
    # undecided: nobody answered (put off, or never asked); an item left open with an owner
    # (a typed answer) is decided as open and carried, not undecided. A flux item not yet
    # explained books nothing, so it stays open (and is carried) without holding the posting
    # back
    open_ones = [e["details"]["ref"] for e in excs if undecided(e) and not review_only(e)]
    owned = [
        e["details"]["ref"]
        for e in excs
        if e["status"] != "resolved" and not undecided(e) and not review_only(e)
    ]
    unexplained = [
        e["details"]["subject"] for e in excs if e["status"] != "resolved" and review_only(e)
    ]
    defaulted = [
        e["details"]["ref"] for e in excs if e["decision_source"] not in (None, *HUMAN_SOURCES)
    ]
    over = [e for e in batch.entries if e.amount > tools.approval_limit]
    doi_changes = [
        f"{r['row'].get('well_name', r['well_id'])} WI {r['row']['wi']} / NRI {r['row']['nri']} from {r['effective_from']}"
        for r in ledger.doi_rows(run_id=ctx.run_id)
        if r["status"] == "proposed"
    ]
    adjustments = [
        f"{e['details']['subject']}: Dr {a['debit']} / Cr {a['credit']} {money(Decimal(a['amount']))}"
        + (f" — {a['memo']}" if a.get("memo") else "")
        + f" (by {e['decided_by'] or '-'})"
        for e in excs
        if KINDS[e["kind"]].entry_described
        and e["status"] == "resolved"
        and (a := e["extra"].get("adjustment"))
    ]
    return {
        "batch_id": saved["id"],
        "status": saved["status"],
        "entries": len(batch.entries),
        "largest_entries": [
            {"entry_no": e.number, "description": e.description, "amount": e.amount}
            for e in sorted(batch.entries, key=lambda e: -e.amount)[:5]
        ],
        "total_debit": total_debit,
        "total_credit": total_credit,
        "balanced": total_debit == total_credit,
        "by_account": [
            {"account": a["account"], "debit": a["debit"], "credit": a["credit"]}
            for a in batch.by_account()
        ],
        "reversed_from": info["reversal_source"],
        "open_exceptions": open_ones[:MAX_LIST],
        "open_exception_count": len(open_ones),
        "open_with_owner": owned[:MAX_LIST],
        "open_with_owner_count": len(owned),
        "defaulted_decisions": defaulted[:MAX_LIST],
        "defaulted_count": len(defaulted),
        "period_already_posted": posted["id"] if posted else None,
        "content_hash": short_hash(cast(str, saved["content_hash"])),
        # its approval, prepared: ask_user_question asks it by this ref (toolset_approval.py)
        "approval_ref": approval_ref(saved["id"]),
        "approval_limit": tools.approval_limit,
        "entries_over_limit": [
            {"entry_no": e.number, "description": e.description, "amount": e.amount}
            for e in over[:5]
        ],
        "over_limit_count": len(over),
        "approvers_set": bool(tools.approvers),
        "doi_changes": doi_changes[:MAX_LIST],
        "doi_change_count": len(doi_changes),
        "flux_adjustments": adjustments[:MAX_LIST],
        "flux_unexplained": unexplained[:MAX_LIST],
    }


@JOURNAL.tool
def post_journal_entries(
    tools: StepTools,
    ctx: ToolContext,
    batch_id: str,
    approval_question_id: str,
    second_approval_question_id: str = "",
) -> dict[str, Any]:
    """Post a drafted batch: the one irreversible step. Idempotent per batch; a period is posted once.

    Refused unless approval_question_id is an ask_user_question call of this run that names
    the batch id and its content hash (as build_journal_entries gave them), answered by a
    person (never a default) choosing an option whose label starts with "Approve": an
    approver other than the run's starter when CLOSEBOT_APPROVERS is set, else the starter
    (self-approved). A batch with an entry over the approval limit also needs
    second_approval_question_id, approved the same way by a different approver. The DOI
    changes decided in the run take effect with the posting.

    Args:
      batch_id: the batch_id from build_journal_entries
      approval_question_id: the id of the ask_user_question call that asked for approval
      second_approval_question_id: the id of the second approval, when an entry is over the limit
    """
    ledger = Ledger(ctx.store)
    try:
        batch = ledger.batch(batch_id)
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
    if batch["status"] != "draft":
        raise ToolError(
            f"batch {batch_id} is {batch['status']}: a later draft replaced it; post the current draft"
        )
    if batch["total_debit"] != batch["total_credit"]:
        raise ToolError(f"batch {batch_id} does not balance; it cannot be posted")
    run = ctx.store.runs.get(ctx.run_id)
    digest = content_hash(ledger.iter_lines(batch_id))
    q = tools._answered(ctx, approval_question_id)
    refusal = None
    waiting = [
        e["details"]["ref"]
        for e in ledger.exceptions(ctx.run_id)
        if undecided(e) and not review_only(e)
    ]
    late = decided_after(ledger, ctx.run_id, batch)
    if waiting:  # never with a decision still to take (one put off with Cancel, say)
        refusal = (
            f"{len(waiting)} exception(s) are still undecided ({', '.join(waiting[:5])}); "
            "decide them before posting"
        )
    elif digest != batch["content_hash"]:
        refusal = f"batch {batch_id}'s lines changed after it was drafted (content hash {short_hash(digest)}, drafted as {short_hash(batch['content_hash'] or '')})"
    elif late:
        refusal = (
            f"{', '.join(late[:5])} {'was' if len(late) == 1 else 'were'} decided after batch {batch_id} was "
            "drafted and book(s) entries it does not hold: redraft with build_journal_entries and ask "
            "for approval of the new draft"
        )
    else:
        refusal = check_approval(
            q, batch_id=batch_id, digest=digest, run=run, approvers=tools.approvers
        )
    second = None
    over = over_limit(ledger.iter_lines(batch_id), tools.approval_limit)
    if refusal is None and over:
        if not second_approval_question_id:
            refusal = f"entry {over[0]} is over the {money(tools.approval_limit)} approval limit and needs a second, different approver"
        else:
            second = tools._answered(ctx, second_approval_question_id)
            refusal = check_approval(
                second,
                batch_id=batch_id,
                digest=digest,
                run=run,
                approvers=tools.approvers,
                first=q.answered_by,
            )
            refusal = f"second approval: {refusal}" if refusal else None
    if refusal:
        ctx.store.audit.record(
            run_id=ctx.run_id,
            kind="posting_refused",
            actor=q.answered_by,
            detail={"batch_id": batch_id, "reason": refusal},
        )
        raise ToolError(f"Not posted: {refusal}. Batch {batch_id} stays a draft.")
    self_approved = not tools.approvers and same_person(q.answered_by, run.started_by)
    detail = {
        "content_hash": digest,
        "self_approved": self_approved,
        "approved_via": q.source,
        "second_approval_question_id": second.id if second else None,
        "second_approver": second.answered_by if second else None,
    }
    try:
        ledger.post(
            batch_id,
            posted_by=q.answered_by or "",
            approval_question_id=approval_question_id,
            detail=detail,
        )
    except AlreadyPostedError as e:
        raise ToolError(f"Not posted: {e}. Batch {batch_id} stays a draft.") from e
    doi = ledger.doi_rows(run_id=ctx.run_id)
    return {
        "batch_id": batch_id,
        "status": "posted",
        "posted_by": q.answered_by,
        "second_approver": second.answered_by if second else None,
        "self_approved": self_approved,
        "total": Decimal(batch["total_debit"]),
        "doi_rows_in_force": [
            f"{r['well_id']} from {r['effective_from']}: WI {r['row']['wi']} / NRI {r['row']['nri']}"
            for r in doi
            if r["status"] == "in_force"
        ],
    }

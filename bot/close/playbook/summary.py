"""What the playbook says at the end (the summary, from close_summary's result) and when the
close waits on a decision put off."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from bot.close.data import period_label
from bot.close.doi_master import money
from bot.close.journal import ACCOUNTS
from bot.close.playbook.transcript import Call, State, say
from bot.core.models import Reply


def waiting(state: State, step: str) -> Reply:
    """End the turn: what waits on the questions put off, and how they come back."""
    refs = state.deferred()
    what = f"{len(refs)} decision{'s' if len(refs) != 1 else ''} put off ({', '.join(refs[:5])})"
    if not refs:
        what = "an approval put off"
    return say(
        f"*Month-end close · {period_label(state.period)}* — waiting: {step} and the steps after it "
        f"wait on {what}. Nothing is posted. Press *Decide* on the close's message to answer "
        "(at a terminal: `closebot resume`); the close goes on from here."
    )


def the_point(s: dict[str, Any], post: Call | None, *, defaulted_approval: bool = False) -> str:
    """The summary's first line, what a reader needs first: the batch posted or not with its
    totals and who approved it, the exceptions and what is still open."""
    b = s["batch"]
    parts = []
    if b is None:
        parts.append("Nothing to post")
    else:
        total = money(Decimal(b["total_debit"]))
        result = post.result if post is not None and isinstance(post.result, dict) else {}
        if b["status"] == "posted":
            how = (
                "self-approved"
                if result.get("self_approved")
                else f"approved by {result.get('posted_by') or b['posted_by']}"
            )
            if result.get("second_approver"):
                how += f" and {result['second_approver']}"
            parts.append(f"Posted {b['batch_id']}: {total} debits = credits, {how}")
        else:
            why = " (a default never approves posting)" if defaulted_approval else ""
            parts.append(f"Not posted: {b['batch_id']} ({total}) is a draft{why}")
    count = s.get("exception_count", len(s["exceptions"]))
    still = sum(1 for e in s["exceptions"] if e.get("status", "resolved") != "resolved")
    parts.append(
        f"{count} exception{'s' if count != 1 else ''}"
        + (f", {still} still open" if still else (", all decided" if count else ""))
    )
    items = s.get("open_item_count", len(s["open_items"]))
    parts.append(
        f"{items} open item{'s' if items != 1 else ''} carried forward"
        if items
        else "no open items"
    )
    return " · ".join(parts) + "."


def summary_text(
    s: dict[str, Any],
    post: Call | None,
    stopped: str | None = None,
    *,
    defaulted_approval: bool = False,
) -> str:
    """The final summary, from close_summary's result: steps, decisions, batch, open items."""
    steps = {
        k: ("done" if v == "running" else v) for k, v in s["steps"].items()
    }  # the last step is this one
    not_done = [k for k, v in steps.items() if v != "done"]
    head = f"*Month-end close · {s['period_label']}* — " + (
        f"stopped: {stopped}"
        if stopped
        else ("finished" if not not_done else f"finished with {len(not_done)} step(s) not done")
    )
    lines = [
        head,
        the_point(s, post, defaulted_approval=defaulted_approval),
        "",  # the point first (posted, the totals, what is open, who approved), then the rest
        "*Steps*: "
        + "; ".join(f"{k}: {v if v != 'pending' else 'not run'}" for k, v in steps.items()),
    ]
    if s["exceptions"]:
        lines.append(f"*Exceptions ({s.get('exception_count', len(s['exceptions']))})*")
        for e in s["exceptions"]:
            by = str(e.get("by") or e.get("decided_by") or "closebot")
            how = (
                f"{e['decision']} — "
                + (by if by.startswith("the recommendation") else f"decided by {by}")
                if e.get("status", "resolved") == "resolved"
                else "open"
            )
            lines.append(f"• {e['subject']}: {e['summary'][:140]} → {how}")
        if (more := s.get("exception_count", 0) - len(s["exceptions"])) > 0:
            lines.append(f"• … and {more} more (exception_details has each)")
    else:
        lines.append("*Exceptions*: none.")
    b = s["batch"]
    if b:
        where = f"posted by {b['posted_by']}" if b["status"] == "posted" else "draft, not posted"
        lines.append(
            f"*Journal batch {b['batch_id']}* ({where}): debits {money(Decimal(b['total_debit']))} = credits {money(Decimal(b['total_credit']))}"
        )
        for account, debit, credit in b["by_account"]:
            dr, cr = Decimal(debit), Decimal(credit)
            side = " ".join(
                x for x in (f"Dr {money(dr)}" if dr else "", f"Cr {money(cr)}" if cr else "") if x
            )
            lines.append(f"• {account} {ACCOUNTS.get(account, '')}: {side}")
    if post is not None and post.is_error:
        lines.append(f"*Posting refused*: {post.result}")
    elif (
        post is not None and isinstance(post.result, dict) and post.result.get("status") == "posted"
    ):
        how = (
            "self-approved (no approvers are set)"
            if post.result.get("self_approved")
            else f"approved by {post.result.get('posted_by')}"
        )
        if post.result.get("second_approver"):
            how += f", second approval by {post.result['second_approver']}"
        lines.append(f"*Posted*: {how}")
    elif b and b["status"] != "posted" and defaulted_approval:
        lines.append(
            "*Not posted*: the approval was applied by default, and a default never approves posting; a person must approve the batch."
        )
    if s.get("doi_changes"):
        more = s.get("doi_change_count", 0) - len(s["doi_changes"])
        lines.append(
            "*DOI changes*: "
            + "; ".join(s["doi_changes"])
            + (f"; and {more} more" if more > 0 else "")
        )
    lock = {
        "carry_forward": "locked; open items carried forward",
        "block_lock": "blocked by the sign-off",
    }
    lines.append(f"*Period lock*: {lock.get(s['period_lock'], s['period_lock'])}")
    if s["open_items"]:
        lines.append(f"*Open items ({s.get('open_item_count', len(s['open_items']))})*")
        for i in s["open_items"]:
            owner = f" — owner {i['owner']}, due {i['due']}" if i.get("owner") else ""
            lines.append(f"• {i['text']}{owner}")
        if (more := s.get("open_item_count", 0) - len(s["open_items"])) > 0:
            lines.append(f"• … and {more} more")
    else:
        lines.append("*Open items*: none")
    return "\n".join(lines)

"""The forms the playbook asks: the posting approval (and the second one over the limit), and
the short follow-up that confirms a typed answer matching an option."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from bot.close.controls import APPROVAL_HEADER as POSTING_HEADER
from bot.close.controls import SECOND_APPROVAL_HEADER
from bot.close.doi_master import money
from bot.close.journal import ACCOUNTS
from bot.close.playbook.transcript import KEEP_OPEN


def follow_up_ask(step: str, typed: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One short question per typed answer that matches an option: book it so, or leave it
    open with the person who answered as its owner."""
    questions = []
    for ref, result in typed:
        label = result["maps_to"]["label"]
        owner = result.get("owner_name") or "you"  # a name, never a user id
        questions.append(
            {
                "header": "Your answer",
                "question": f"You wrote \u201c{str(result['other'])[:300]}\u201d for {result.get('subject') or ref} "
                f"[ref {ref}] — book it as {label}?",
                "type": "single_choice",
                "options": [
                    {
                        "label": label,
                        "description": str(result["maps_to"].get("books") or "")[:300],
                    },
                    {
                        "label": KEEP_OPEN,
                        "description": f"Nothing is booked; it is an open item owned by {owner}.",
                    },
                ],
                "recommended": 1,
                "reasoning": f"Your words name this option ({result['maps_to'].get('matched') or label}).",
            }
        )
    return {
        "context": f"{step}: {len(questions)} typed answer{'s' if len(questions) != 1 else ''} to confirm before I book anything.",
        "questions": questions,
    }


def approval_ask(b: dict[str, Any], *, second_to: str | None = None) -> dict[str, Any]:
    """The posting approval form: the batch, its accounts and content hash, what is open,
    what was defaulted, the DOI changes that take effect with it, the entries over the limit."""
    total = money(Decimal(b["total_debit"]))
    table = "\n".join(
        f"• {a['account']} {ACCOUNTS.get(a['account'], '')}: "
        + " ".join(
            x
            for x in (
                f"Dr {money(Decimal(a['debit']))}" if Decimal(a["debit"]) else "",
                f"Cr {money(Decimal(a['credit']))}" if Decimal(a["credit"]) else "",
            )
            if x
        )
        for a in b["by_account"]
    )
    open_ones, defaulted, already = (
        b["open_exceptions"],
        b["defaulted_decisions"],
        b.get("period_already_posted"),
    )
    if already:
        recommended, reasoning = (
            2,
            f"Batch {already} already posted this period; posting this one too would book it twice.",
        )
    elif not b["balanced"]:
        recommended, reasoning = 2, "The batch does not balance."
    elif open_ones:
        recommended, reasoning = (
            2,
            f"{b.get('open_exception_count', len(open_ones))} exception(s) are still undecided ({', '.join(open_ones[:5])}); decide them before posting.",
        )
    elif owned := b.get("open_with_owner"):
        recommended, reasoning = (
            1,
            f"The batch balances to the cent ({total} = {total}). Every exception is answered; "
            f"{b.get('open_with_owner_count', len(owned))} left open with an owner "
            f"({', '.join(owned[:5])}) book nothing and are carried as open items.",
        )
    else:
        recommended, reasoning = (
            1,
            f"The batch balances to the cent ({total} = {total}) and every exception has a recorded decision.",
        )
    lines = [
        f"{'Second approval of' if second_to else 'Post'} journal batch {b['batch_id']} (content hash {b['content_hash']}): "
        f"{b['entries']} entries, {total} debits = {money(Decimal(b['total_credit']))} credits; last month's accruals reversed from {b['reversed_from']}.",
        "By account:",
        table,
    ]
    if b.get("doi_changes"):
        lines.append(
            "DOI changes that take effect with this approval: " + "; ".join(b["doi_changes"]) + "."
        )
    if owned := b.get("open_with_owner"):
        more = b.get("open_with_owner_count", len(owned)) - len(owned)
        lines.append(
            f"Left open with an owner (booked as no entry, carried as open items): {', '.join(owned)}"
            + (f" and {more} more" if more > 0 else "")
            + "."
        )
    if b.get("flux_unexplained"):
        lines.append(
            "Flux items not explained (they stay open items; they book nothing): "
            + "; ".join(b["flux_unexplained"])
            + "."
        )
    if b.get("flux_adjustments"):
        lines.append(
            "Flux adjustments booked in this batch: " + "; ".join(b["flux_adjustments"]) + "."
        )
    if defaulted:
        more = b.get("defaulted_count", 0) - len(defaulted)
        lines.append(
            f"Decisions applied by default (not a person's): {', '.join(defaulted)}"
            + (f" and {more} more" if more > 0 else "")
            + "."
        )
    over = b.get("entries_over_limit") or []
    if over:
        lines.append(
            f"Over the {money(Decimal(b['approval_limit']))} approval limit: "
            + "; ".join(
                f"#{e['entry_no']} {e['description']} {money(Decimal(e['amount']))}"
                for e in over[:3]
            )
            + (
                f" and {b.get('over_limit_count', len(over)) - 3} more"
                if b.get("over_limit_count", len(over)) > 3
                else ""
            )
            + (
                f". A different approver than {second_to} must approve."
                if second_to
                else ". A second, different approver must approve too."
            )
        )
    return {
        "context": f"Journal batch {b['batch_id']} is ready. Posting is irreversible and needs "
        + ("a second approval." if second_to else "your approval."),
        "questions": [
            {
                "header": SECOND_APPROVAL_HEADER if second_to else POSTING_HEADER,
                "question": "\n".join(lines)[:2500],
                "type": "single_choice",
                "options": [
                    {
                        "label": "Approve and post",
                        "description": f"Post the {b['entries']} entries ({total}) to the ledger now.",
                    },
                    {
                        "label": "Keep as draft",
                        "description": "Leave the batch for review; nothing is posted.",
                    },
                    {
                        "label": "Reject with a comment",
                        "description": "Nothing is posted; say why in 'Why'.",
                    },
                ],
                "recommended": recommended,
                "reasoning": reasoning,
            }
        ],
    }

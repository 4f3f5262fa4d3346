"""What a posting approval says beyond the batch (issue 30.6): how many approvals a batch has
(the second approval's "1 of 2 approvals given"), and — on a re-approval after a decision
changed — what changed since the batch withdrawn, entry by entry ("+Dr 1220 Severance Refund
Receivable $718.13 / Cr 6110 Severance Tax Expense $718.13 · Whitfield 12-8H — Claim a
refund"). Front-end neutral words; the Slack approval card shows them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from decimal import Decimal

from bot.close.controls import APPROVAL_HEADERS, SECOND_APPROVAL_HEADER, first_approver, header_of
from bot.close.data import ZERO
from bot.close.doi_master import ACCOUNT_NAMES
from bot.close.kinds.entries import describe, line
from bot.close.ledger import Ledger
from bot.store import QuestionRecord, Store

MAX_CHANGES = 8  # entries listed; the rest counted


def _nets(ledger: Ledger, batch_id: str) -> dict[str, dict[str, Decimal]]:
    """Each entry's net (debit − credit) per account, by the entry's title."""
    out: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(lambda: ZERO))
    for x in ledger.iter_lines(batch_id):
        out[str(x["entry"])][str(x["account"])] += x["debit"] - x["credit"]
    return out


def _title(entry: str) -> str:
    """An entry's title as people read it: without 'Decision: ' and '(by …)'."""
    return entry.removeprefix("Decision: ").split(" (by ", 1)[0]


def batch_changes(ledger: Ledger, old_id: str, new_id: str) -> list[str]:
    """What the batch `new_id` books that `old_id` did not, entry by entry: '+' an entry added
    or grown, '−' one taken away or shrunk, each with its accounts by number and name."""
    old, new = _nets(ledger, old_id), _nets(ledger, new_id)
    out = []
    for title in [*new, *(t for t in old if t not in new)]:
        accounts = set(old.get(title, {})) | set(new.get(title, {}))
        # an entry taken away is shown as it was, with '−'; one added or changed, what it adds
        gone = title not in new
        moved = {
            a: (
                old[title][a] if gone else new[title].get(a, ZERO) - old.get(title, {}).get(a, ZERO)
            )
            for a in accounts
        }
        moved = {a: v for a, v in moved.items() if v}
        if not moved:
            continue
        lines = [
            line(a, debit=v if v > 0 else ZERO, credit=-v if v < 0 else ZERO, memo="")
            for a, v in sorted(moved.items(), key=lambda av: (av[1] < 0, av[0]))
        ]
        sign = "−" if gone else "+"
        out.append(f"{sign}{describe(lines, names=ACCOUNT_NAMES)} · {_title(title)}")
    if len(out) > MAX_CHANGES:
        out = [*out[:MAX_CHANGES], f"… and {len(out) - MAX_CHANGES} more entries changed"]
    return out


def withdrawn_batch(store: Store, record: QuestionRecord) -> str | None:
    """The batch of the latest approval of this run withdrawn because a decision changed
    (before `record`), when it is not the batch `record` asks about."""
    ledger = Ledger(store)
    batches = [str(b["id"]) for b in ledger.batches(record.run_id)]
    for q in reversed(store.questions.of_run(record.run_id)):
        if q.id == record.id or header_of(q) not in APPROVAL_HEADERS:
            continue
        if q.status == "cancelled" and q.source == "change":
            said = q.context + " ".join(str(x.get("question")) for x in q.questions)
            found = [b for b in batches if b in said]
            return found[-1] if found else None
    return None


def approval_notes(
    store: Store, record: QuestionRecord, name: Callable[[str | None], str]
) -> list[str]:
    """The lines an approval card shows beside its batch: the approvals given so far, and what
    changed since a batch withdrawn. `name` turns a user id into the name people read."""
    notes = []
    if header_of(record) == SECOND_APPROVAL_HEADER:
        first = first_approver(store, record.run_id)
        who = f": {name(first)} approved" if first else ""
        notes.append(f"*1 of 2 approvals given*{who}; an entry over the limit needs a second.")
    ledger = Ledger(store)
    current = ledger.current_batch(record.run_id)
    old = withdrawn_batch(store, record)
    if current is not None and old is not None and old != current["id"]:
        changed = batch_changes(ledger, old, str(current["id"]))
        notes.append(
            f"*Changed since batch {old} was withdrawn* (a decision was changed):\n"
            + ("\n".join(f"• {c}" for c in changed) if changed else "• no entry changed")
        )
    return notes

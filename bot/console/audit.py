"""`closebot audit`: a run's decision log, as text or CSV, and `--verify` of its chain,
its seal and the records the chain covers."""

from __future__ import annotations

import argparse
from typing import TextIO

from bot.close import Ledger
from bot.console.presenter import EXIT_FAILED, EXIT_OK
from bot.console.session import open_store, settings_of
from bot.core.decision_log import decision_rows, to_csv
from bot.core.names import Names, named_text
from bot.store import Store


def cmd_audit(args: argparse.Namespace, out: TextIO) -> int:
    store = open_store(settings_of(args))
    if args.verify:
        return _verify(store, args.run_id, out)
    rows = decision_rows(store, args.run_id)
    if args.csv:
        out.write(to_csv(rows))
        return EXIT_OK
    names = Names(store)  # people by the names Slack last gave (the CSV has ids beside them)
    known = list(store.people.of())

    def named(text: str) -> str:
        return _printable(named_text(text, known, names))

    if not rows:
        print(f"Run {args.run_id} asked no questions.", file=out)
    for row in rows:
        print(named(f"[{row['question_id'][-8:]}#{row['number']}] {row['question']}"), file=out)
        answer = row["answer"] or f"({row['status']})"
        who = names(row["answered_by"], "-")
        print(
            named(
                f"    → {answer}\n      by {who} at {row['answered_at'] or '-'} via {row['source'] or '-'}"
            ),
            file=out,
        )
        if row["overridden"] == "yes" or row["rationale"]:
            why = f" — why: {row['rationale']}" if row["rationale"] else ""
            print(
                _printable(
                    f"      {'overrode the recommendation' if row['overridden'] == 'yes' else 'followed the recommendation'}{why}"
                ),
                file=out,
            )
    events = store.audit.events(args.run_id)
    posted = [e for e in events if e.kind in AUDIT_KINDS_SHOWN]
    for e in posted:
        note = (
            " (self-approved)"
            if e.kind == "journal_posted" and e.detail.get("self_approved")
            else ""
        )
        print(
            f"{e.at} {e.kind}{note} by {names(e.actor, '-')}: {named(str(e.detail))}",
            file=out,
        )
    sealed = store.audit.seal(args.run_id)
    if sealed is not None:
        print(f"Audit seal: {sealed.short()} (check with --verify)", file=out)
    return EXIT_OK


def _verify(store: Store, run_id: str, out: TextIO) -> int:
    """`audit RUN --verify`: the chain, the seal and every covered row; the first bad one named."""
    Ledger(store)  # the close's covered tables are registered (and migrated)
    head = f"Audit trail of run {run_id}:"
    register = store.audit.register_problems()  # the whole record: runs deleted whole
    gone = [p for p in register if p.startswith(f"run {run_id} ")]
    if gone:
        print(f"{head} BROKEN: {gone[0]}.", file=out)
        return EXIT_FAILED
    store.runs.get(run_id)
    if register:
        print(f"{head} the record around it is BROKEN:", file=out)
        for p in register:
            print(f"  - {p}", file=out)
        return EXIT_FAILED
    verdict = store.audit.verdict(run_id)
    if verdict.broken is not None:
        b = verdict.broken
        print(
            f"{head} BROKEN at event {b['id']} ({b['kind']}, {b['at']}), number "
            f"{verdict.checked} of the run: {verdict.why}.",
            file=out,
        )
        return EXIT_FAILED
    if verdict.problem:
        print(f"{head} BROKEN: {verdict.problem}.", file=out)
        return EXIT_FAILED
    mismatches = evidence_mismatches(store, run_id)  # rows an earlier release wrote
    if mismatches:
        print(
            f"{head} {verdict.checked} events chained, but the records disagree with them:",
            file=out,
        )
        for m in mismatches:
            print(f"  - {m}", file=out)
        return EXIT_FAILED
    notes = []
    if verdict.unkeyed:
        notes.append(
            f"{verdict.unkeyed} written by an earlier release verify with their own (unkeyed) "
            "algorithm"
        )
    if verdict.unchained:
        notes.append(
            f"the first {verdict.unchained} were written before closebot chained its audit "
            "events (an earlier release): present, but they carry no hash to check"
        )
    print(
        f"{head} {verdict.checked} events, every link intact"
        + (f" ({'; '.join(notes)})" if notes else "")
        + f"; {verdict.rows} rows covered, each as the chain recorded it; answers and posted "
        "batches match what was audited."
        + (f" Sealed: {verdict.seal.short()}." if verdict.seal else ""),
        file=out,
    )
    return EXIT_OK


AUDIT_KINDS_SHOWN = (
    "journal_posted",
    "posting_refused",
    "doi_proposed",
    "answer_refused",
    "period_lock",
    "steer_refused",
    "stop_refused",
    "retry_refused",
    "stop_requested",
)


def evidence_mismatches(store: Store, run_id: str) -> list[str]:
    """Records that no longer say what the chained audit events say: an answer edited after the
    fact, or a posted batch whose lines changed."""
    from bot.close import content_hash

    events = store.audit.events(run_id)
    out = []
    answered = {e.detail.get("question_id"): e for e in events if e.kind == "question_answered"}
    for q in store.questions.of_run(run_id):
        event = answered.get(q.id)
        if q.status == "answered" and event is None:
            out.append(f"question {q.id} is answered in the store but no answer was audited")
        elif event is not None and (
            q.answered_by != event.actor or q.answer != event.detail.get("answer")
        ):
            out.append(
                f"question {q.id}: the store says {q.answered_by} chose {q.answer}, "
                f"the audit says {event.actor} chose {event.detail.get('answer')}"
            )
    ledger = Ledger(store)
    posted = {e.detail.get("batch_id"): e for e in events if e.kind == "journal_posted"}
    for batch in ledger.batches(run_id):
        event = posted.get(batch["id"])
        if batch["status"] == "posted" and event is None:
            out.append(
                f"batch {batch['id']} is posted in the store but its posting was not audited"
            )
        elif event is not None and event.detail.get("content_hash") not in (
            None,
            content_hash(ledger.iter_lines(batch["id"])),
        ):
            out.append(
                f"batch {batch['id']}: its lines changed after it was posted (content hash differs)"
            )
    return out


def _printable(text: str) -> str:
    """No terminal control sequences from stored text reach the terminal."""
    return "".join(c if c.isprintable() or c == "\n" else f"\\x{ord(c):02x}" for c in text)

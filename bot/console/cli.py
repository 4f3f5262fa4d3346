"""The `closebot` command: run, resume, audit and list closes in a terminal."""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import TextIO

from bot import __version__
from bot.agent_loop import AgentLoop, Paused, TurnOutcome, Waiting
from bot.close import data as close_data
from bot.close import gl_export, preview
from bot.close.assemble import build_model, close_loop
from bot.close.controls import APPROVAL_HEADERS, approval_refusal, header_of
from bot.close.decisions import CannotChange, ask_change, changeable_decisions
from bot.close.doi_master import money
from bot.close.imports import intake
from bot.close.ledger import Ledger
from bot.close.prompts import start_prompt
from bot.console.presenter import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PAUSED,
    EXIT_USAGE,
    Answerer,
    AutoAnswerer,
    ConsoleAnswerer,
    ConsolePresenter,
    drive,
)
from bot.core.config import Settings
from bot.core.decision_log import ENTRY_COLUMNS, decision_rows, journal_rows, named_lines, to_csv
from bot.core.errors import CloseBotError, ConfigError, PeriodTakenError
from bot.core.identity import os_login
from bot.core.models import estimated_cost
from bot.core.names import Names, named_text
from bot.store import USAGE_FIELDS, Store
from bot.store.leases import describe_owner, lease_owner


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"closebot: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="closebot",
        description="Run a month-end close with an agent that asks you when a decision is yours.",
    )
    parser.add_argument("--version", action="version", version=f"closebot {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    db = _Parser(add_help=False)
    db.add_argument("--db", help="SQLite file (default: $CLOSEBOT_DB or ./closebot.db)")
    data = _Parser(add_help=False)
    data.add_argument(
        "--data",
        help="folder of close data, one YYYY-MM folder per period (default: the shipped sample)",
    )

    run = sub.add_parser("run", parents=[db, data], help="run a close in this terminal")
    run.add_argument(
        "period", nargs="?", help="accounting period YYYY-MM (default: the latest with data)"
    )
    run.add_argument(
        "--auto",
        action="store_true",
        help="answer every question with its recommendation (benchmark mode)",
    )

    resume = sub.add_parser(
        "resume", parents=[db, data], help="continue a paused or interrupted run"
    )
    resume.add_argument("run_id")
    resume.add_argument(
        "--auto", action="store_true", help="answer pending questions with their recommendations"
    )

    change = sub.add_parser(
        "change",
        parents=[db, data],
        help="before posting: list a run's decisions, or ask one again (the batch is redrafted)",
    )
    change.add_argument("run_id")
    change.add_argument(
        "decision", nargs="?", help="the decision's number in the list (without it: the list)"
    )

    audit = sub.add_parser(
        "audit", parents=[db], help="print a run's decision log: question, answer, who, when, how"
    )
    audit.add_argument("run_id")
    audit.add_argument("--csv", action="store_true", help="as CSV, every evidence column")
    audit.add_argument(
        "--verify", action="store_true", help="check the hash chain; report the first broken link"
    )

    approve = sub.add_parser(
        "approve",
        parents=[db, data],
        help="give a run's pending posting approval under your own OS login, then continue the run",
    )
    approve.add_argument("run_id")

    entries = sub.add_parser("entries", parents=[db, data], help="print a run's journal entries")
    entries.add_argument("run_id")
    entries.add_argument("--csv", action="store_true", help="as CSV, closebot's own columns")
    entries.add_argument(
        "--format",
        choices=gl_export.FORMATS,
        help="a journal import file for your ledger: QuickBooks Online, Xero, NetSuite or plain CSV",
    )
    entries.add_argument(
        "--map",
        help="account map CSV (account,gl_account,gl_name[,tax_rate]); "
        "default: account_map.csv in $CLOSEBOT_DATA, else the sample's",
    )
    entries.add_argument(
        "--detail",
        action="store_true",
        help="as CSV, every source line behind each entry line (rebuilt from the files)",
    )

    serve = sub.add_parser(
        "serve",
        parents=[db, data],
        help="run the Slack app (HTTP, or Socket Mode when SLACK_APP_TOKEN is set)",
    )
    serve.add_argument(
        "--http", action="store_true", help="serve HTTP even when SLACK_APP_TOKEN is set"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)",
    )
    serve.add_argument(
        "--port", type=int, default=3000, help="port (default 3000; 0 picks a free one)"
    )
    serve.add_argument(
        "--log-json",
        action="store_true",
        help="log one JSON object per line (default: plain lines)",
    )

    sandbox = sub.add_parser(
        "sandbox",
        parents=[data],
        help="a Slack channel in your browser with closebot in it: no Slack account needed",
    )
    sandbox.add_argument(
        "--port",
        type=int,
        default=8000,
        help="port on 127.0.0.1 (default 8000; 0 picks a free one)",
    )
    sandbox.add_argument(
        "--db",
        help="SQLite file; the channels are kept beside it (PATH.slack.json) so a later start "
        "continues where this one stopped (default: a new one in a temporary folder)",
    )

    sub.add_parser("runs", parents=[db], help="list recent runs")

    data_cmd = sub.add_parser("data", help="the close data: write the sample, or check a folder")
    data_sub = data_cmd.add_subparsers(dest="data_command", required=True, parser_class=_Parser)
    sample = data_sub.add_parser("sample", help="write the shipped sample periods into DIR")
    sample.add_argument("dir")
    check = data_sub.add_parser(
        "check", help="check every file of every period in DIR (or one PERIOD); imports nothing"
    )
    check.add_argument("dir")
    check.add_argument("period", nargs="?")
    imp = data_sub.add_parser(
        "import",
        parents=[db],
        help="import files (CSV or XLSX, any layout closebot can map) into the database",
    )
    imp.add_argument("paths", nargs="+", metavar="DIR|FILE")
    imp.add_argument("--period", help="the period the files belong to (YYYY-MM)")
    imp.add_argument(
        "--kind", help="which of the eleven files this is (jib.csv, …), when it can't be told"
    )
    imp.add_argument(
        "--yes",
        action="store_true",
        help="use the proposed column mapping of a file in an unfamiliar layout (it is remembered)",
    )

    doi = sub.add_parser(
        "doi",
        parents=[db, data],
        help="a well's DOI history: the CSV rows and those closebot added",
    )
    doi.add_argument("well_id")

    sub.add_parser(
        "doctor",
        parents=[db],
        help="check the database: integrity, audit chains, leases, stuck runs (changes nothing)",
    )
    backup = sub.add_parser(
        "backup", parents=[db], help="copy the database to PATH while closebot runs (online)"
    )
    backup.add_argument("path")
    return parser


RESUME_LEASE = timedelta(seconds=90)  # renewed while resume runs; expires soon after a crash


def _settings(args: argparse.Namespace) -> Settings:
    env = dict(os.environ)
    if getattr(args, "db", None):
        env["CLOSEBOT_DB"] = args.db
    if getattr(args, "data", None):
        env["CLOSEBOT_DATA"] = args.data
    return Settings.from_env(env)


def open_store(settings: Settings, *, to_work: bool = False) -> Store:
    """The database; `to_work` (run, resume) refuses one a newer closebot has migrated."""
    try:
        store = Store(settings.db_path)
    except sqlite3.DatabaseError as e:
        raise ConfigError(f"cannot use {settings.db_path} as closebot's database: {e}") from e
    newer = store.newer_schema() if to_work else None
    if newer:
        store.close()
        raise ConfigError(f"{settings.db_path}: {newer}; use the newer closebot")
    return store


def _loop(settings: Settings, store: Store, out: TextIO) -> AgentLoop:
    return close_loop(settings, store=store, presenter=ConsolePresenter(out, store))


def _answerer(auto: bool, out: TextIO, store: Store, settings: Settings) -> Answerer:
    if auto:
        return AutoAnswerer(out)
    return ConsoleAnswerer(
        stdin=sys.stdin,
        out=out,
        preview=partial(preview.shown_at_console, store, settings.data_dir),
    )


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    settings = _settings(args)
    store = open_store(settings, to_work=True)
    period = args.period or intake.latest_period(store, settings.data_dir)
    intake.require_data(store, period, settings.data_dir)
    intake.load_period(store, period, settings.data_dir)  # bad data stops here, before a run
    label = close_data.period_label(period)
    posted = Ledger(store).posted_batch(period)
    if posted is not None:  # one close per period
        names = Names(store)  # people by the names Slack last gave
        approvers = [names(who, "-") for who in Ledger(store).approvers(posted)]
        by = f", approved by {' and '.join(approvers)}" if approvers else ""
        print(
            f"closebot: {label} is already posted (batch {posted['id']}{by}); a period is closed "
            "once. To change it, reopen it with a reversing batch in the ledger. Nothing was "
            "started.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    live = store.live_run(period)
    if live is not None:
        print(
            f"closebot: the {label} close is already under way (run {live.id}, {live.status}); "
            f"continue it with `closebot resume {live.id}`. Nothing was started.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    loop = _loop(settings, store, out)
    mode = "auto" if args.auto else "console"
    try:  # the period's claim: of two starts at the same instant, one makes a run
        run = store.create_run(
            period=period,
            mode=mode,
            started_by=os_login(),
            model=loop.model.name,
            one_per_period=True,
        )
    except PeriodTakenError as e:
        print(
            f"closebot: the {label} close is already under way (run {e.run_id}); "
            f"continue it with `closebot resume {e.run_id}`. Nothing was started.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    driver = (
        "Claude " + loop.model.name
        if settings.uses_claude
        else "the offline playbook (no ANTHROPIC_API_KEY)"
    )
    print(
        f"closebot · Month-end close · {close_data.period_label(period)} · run {run.id}", file=out
    )
    print(f"Driven by {driver}; state in {settings.db_path}.\n", file=out, flush=True)
    outcome = loop.start(run.id, start_prompt(period))
    return _drive_to_end(loop, store, run.id, outcome, auto=args.auto, settings=settings, out=out)


def cmd_resume(args: argparse.Namespace, out: TextIO) -> int:
    settings = _settings(args)
    store = open_store(settings, to_work=True)
    run = store.run(args.run_id)
    if run.status == "done":
        print(
            f"closebot: run {run.id} is already finished; see `closebot audit {run.id}`.", file=out
        )
        return EXIT_OK
    owner = lease_owner("closebot resume")
    with store.leased(run.id, owner=owner, ttl=RESUME_LEASE) as holder:
        if holder:
            print(
                f"closebot: run {run.id} is being advanced by {describe_owner(holder)}; "
                "nothing was changed. Try again when it is done (`closebot runs` shows its state).",
                file=sys.stderr,
            )
            return EXIT_FAILED
        loop = _loop(settings, store, out)
        print(
            f"closebot · resuming run {run.id} ({close_data.period_label(run.period)}, was {run.status})",
            file=out,
            flush=True,
        )
        pending = store.pending_question(run.id)
        deferred = store.deferred_questions(run.id)
        if pending:
            outcome: TurnOutcome = Paused(pending.id)
        elif loop.parked(run.id):  # it waits on questions put off: they come back now
            outcome = Waiting(text="", deferred=tuple(q.id for q in deferred))
        else:
            outcome = loop.advance(run.id)
        return _drive_to_end(
            loop,
            store,
            run.id,
            outcome,
            auto=args.auto,
            settings=settings,
            out=out,
            bring_back=True,
        )


def cmd_change(args: argparse.Namespace, out: TextIO) -> int:
    """Change a decision before posting: without a number, the decisions that can change;
    with one, that question asked again here. A pending approval is withdrawn; the batch is
    drafted again and needs a new approval (the old answer stays in the audit trail)."""
    settings = _settings(args)
    store = open_store(settings, to_work=True)
    run = store.run(args.run_id)
    decisions = changeable_decisions(store, run.id)
    if not args.decision:
        if not decisions:
            print(f"closebot: run {run.id} has no decision that can change now.", file=out)
            return EXIT_OK
        print(f"Decisions of run {run.id} that can still change (nothing is posted):", file=out)
        for n, (_, what) in enumerate(decisions, start=1):
            print(f"  {n}. {what}", file=out)
        print(f"Change one with: closebot change {run.id} N", file=out)
        return EXIT_OK
    if not args.decision.isdigit() or not 1 <= int(args.decision) <= len(decisions):
        print(
            f"closebot: {args.decision!r} is not a decision's number (1–{len(decisions)}); "
            f"`closebot change {run.id}` lists them. Nothing was changed.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    value, what = decisions[int(args.decision) - 1]
    owner = lease_owner("closebot change")
    with store.leased(run.id, owner=owner, ttl=RESUME_LEASE) as holder:
        if holder:
            print(
                f"closebot: run {run.id} is being advanced by {describe_owner(holder)}; "
                "nothing was changed.",
                file=sys.stderr,
            )
            return EXIT_FAILED
        try:
            record, withdrawn = ask_change(store, run.id, value, by=os_login())
        except CannotChange as e:
            print(f"closebot: {e}. Nothing was changed.", file=sys.stderr)
            return EXIT_USAGE
        if withdrawn:
            print(
                "The pending posting approval is withdrawn: the batch is drafted again.", file=out
            )
        print(f"Changing: {what}", file=out, flush=True)
        loop = _loop(settings, store, out)
        return _drive_to_end(
            loop, store, run.id, Paused(record.id), auto=False, settings=settings, out=out
        )


def _drive_to_end(
    loop: AgentLoop,
    store: Store,
    run_id: str,
    outcome: TurnOutcome,
    *,
    auto: bool,
    settings: Settings,
    out: TextIO,
    bring_back: bool = False,
) -> int:
    """Answer questions until the run ends; say what to do next."""
    # Auto answers are nobody's decision: they are logged as 'auto', not as the operator.
    user = "auto" if auto else os_login()
    code = drive(
        loop,
        store,
        run_id,
        outcome,
        answerer=_answerer(auto, out, store, settings),
        user=user,
        out=out,
        approvers=settings.approvers,
        bring_back=bring_back and not auto,
    )
    if code == EXIT_OK:
        print(
            f"\nDecision log: closebot audit {run_id}   Entries: closebot entries {run_id}",
            file=out,
            flush=True,
        )
    elif code == EXIT_FAILED and store.run(run_id).status == "failed":
        print(f"Fix the cause, then continue with: closebot resume {run_id}", file=out, flush=True)
    return code


def cmd_approve(args: argparse.Namespace, out: TextIO) -> int:
    """A posting approval at the console, given by the OS login running this command."""
    settings = _settings(args)
    store = open_store(settings)
    run = store.run(args.run_id)
    login = os_login()
    pending = store.pending_question(run.id)
    if pending is None or header_of(pending) not in APPROVAL_HEADERS:
        waits = (
            f"it waits on '{header_of(pending) or pending.id}': `closebot resume {run.id}`"
            if pending
            else f"it is {run.status}"
        )
        print(
            f"closebot: run {run.id} is not waiting on a posting approval ({waits}).",
            file=sys.stderr,
        )
        return EXIT_FAILED
    refusal = approval_refusal(store, pending, run, login, settings.approvers, console=True)
    if refusal:
        store.audit(
            run_id=run.id,
            kind="approve_refused",
            actor=login,
            detail={"question_id": pending.id, "reason": refusal, "channel": "console"},
        )
        print(
            f"closebot: {login} may not give this approval: {refusal}. Nothing was changed; "
            "the refusal is in the audit trail.",
            file=sys.stderr,
        )
        return EXIT_FAILED
    owner = f"closebot approve (pid {os.getpid()})"
    with store.leased(run.id, owner=owner, ttl=RESUME_LEASE) as holder:
        if holder:
            print(
                f"closebot: run {run.id} is being advanced by {holder}; try again when it is done.",
                file=sys.stderr,
            )
            return EXIT_FAILED
        loop = _loop(settings, store, out)
        print(
            f"closebot · run {run.id} ({close_data.period_label(run.period)}) · approving as {login}",
            file=out,
            flush=True,
        )
        code = drive(
            loop,
            store,
            run.id,
            Paused(pending.id),
            answerer=ConsoleAnswerer(stdin=sys.stdin, out=out),
            user=login,
            out=out,
            approvers=settings.approvers,
            approvals_only=True,
        )
    answered = store.question(pending.id)
    if code == EXIT_PAUSED and answered.status == "answered":
        return EXIT_OK  # the approval is given; the run waits on someone else now
    return code


def cmd_audit(args: argparse.Namespace, out: TextIO) -> int:
    store = open_store(_settings(args))
    if args.verify:
        return _verify(store, args.run_id, out)
    rows = decision_rows(store, args.run_id)
    if args.csv:
        out.write(to_csv(rows))
        return EXIT_OK
    names = Names(store)  # people by the names Slack last gave (the CSV has ids beside them)
    known = list(store.people())

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
    events = store.audit_events(args.run_id)
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
    sealed = store.seal_of(args.run_id)
    if sealed is not None:
        print(f"Audit seal: {sealed.short()} (check with --verify)", file=out)
    return EXIT_OK


def _verify(store: Store, run_id: str, out: TextIO) -> int:
    """`audit RUN --verify`: the chain, the seal and every covered row; the first bad one named."""
    store.run(run_id)
    Ledger(store)  # the close's covered tables are registered (and migrated)
    verdict = store.audit_verdict(run_id)
    head = f"Audit trail of run {run_id}:"
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
    from bot.close.controls import content_hash

    events = store.audit_events(run_id)
    out = []
    answered = {e.detail.get("question_id"): e for e in events if e.kind == "question_answered"}
    for q in store.questions(run_id):
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


DETAIL_COLUMNS = ("entry_no", "line_no", "account", "well_id", "debit", "credit", "ref", "memo")


def cmd_entries(args: argparse.Namespace, out: TextIO) -> int:
    store = open_store(_settings(args))
    store.run(args.run_id)
    ledger = Ledger(store)
    batch = ledger.current_batch(args.run_id)
    if batch is None:
        print(f"Run {args.run_id} drafted no journal entries.", file=out)
        return EXIT_OK
    if args.detail:
        from bot.close.toolset import CloseTools  # the close's code, only for this export
        from bot.core.tools import ToolContext, ToolError

        settings = _settings(args)
        tools = CloseTools(data_dir=settings.data_dir)
        try:
            rows = tools.journal_detail(ToolContext(run_id=args.run_id, store=store))
        except ToolError as e:
            raise CloseBotError(str(e)) from e
        out.write(to_csv(rows, DETAIL_COLUMNS))
        return EXIT_OK
    lines = named_lines(ledger.lines(batch["id"]), Names(store))  # who decided, by name
    if args.format:
        settings = _settings(args)
        path = Path(args.map).expanduser() if args.map else gl_export.map_path(settings.data_dir)
        export = gl_export.build_export(
            batch,
            lines,
            period=store.run(args.run_id).period,
            documents=gl_export.documents(store, args.run_id),
            account_map=gl_export.read_account_map(path),
        )
        if args.format == "xero" and len(lines) > gl_export.XERO_MAX_LINES:
            print(
                f"closebot: note: {len(lines)} lines; Xero imports at most "
                f"{gl_export.XERO_MAX_LINES} a file",
                file=sys.stderr,
            )
        out.write(export.render(args.format))
        return EXIT_OK
    if args.csv:
        out.write(to_csv(journal_rows(batch, lines), ENTRY_COLUMNS))
        return EXIT_OK
    print(
        f"Batch {batch['id']} ({batch['status']}) · debits {money(Decimal(batch['total_debit']))} = credits {money(Decimal(batch['total_credit']))}",
        file=out,
    )
    current = None
    for line in lines:
        if line["entry_no"] != current:
            current = line["entry_no"]
            print(f"\n{line['entry_no']}. {line['entry']}", file=out)
        dr = f"{line['debit']:>14,.2f}" if line["debit"] else " " * 14
        cr = f"{line['credit']:>14,.2f}" if line["credit"] else " " * 14
        print(
            f"   {line['account']} {line['account_name'][:28]:<28} {dr} {cr}  {line['memo'][:40]}",
            file=out,
        )
    return EXIT_OK


def cmd_runs(args: argparse.Namespace, out: TextIO) -> int:
    store = open_store(_settings(args))
    runs = store.runs()
    names = Names(store)  # Slack's names as last looked up; a console login as itself
    if not runs:
        print("No runs yet. Start one with: closebot run", file=out)
    for r in runs:
        calls, usage = store.usage(r.id)
        tokens = ""
        if calls:
            prompt = sum(usage[k] for k in USAGE_FIELDS if k != "output_tokens")
            cached = usage["cache_read_input_tokens"] / prompt if prompt else 0.0
            tokens = (
                f"  {calls} calls, {prompt:,} in ({cached:.0%} cached) / "
                f"{usage['output_tokens']:,} out, ~${estimated_cost(r.model, usage):.2f}"
            )
        print(
            f"{r.id}  {r.period}  {r.status:<9} {r.mode:<8} {names(r.started_by, '-'):<16} {r.created_at}{tokens}",
            file=out,
        )
    return EXIT_OK


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    from bot.core import logs
    from bot.slack.app import serve  # Slack's libraries load only for this command

    # A long-running server logs what it does: INFO, UTC timestamps, unless told otherwise.
    logs.configure(
        os.environ.get("CLOSEBOT_LOG_LEVEL", "INFO").strip().upper() or "INFO",
        json_lines=args.log_json,
    )
    settings = _settings(args)
    store = open_store(settings)
    try:
        return serve(
            settings,
            store=store,
            model=build_model(settings),
            http=args.http,
            host=args.host,
            port=args.port,
            out=out,
        )
    except OSError as e:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from e


def cmd_sandbox(args: argparse.Namespace, out: TextIO) -> int:
    import tempfile

    from bot.sandbox.run import Sandbox, run_sandbox

    kept = args.db is not None  # a named database keeps the workspace beside it
    if not kept:
        args.db = str(Path(tempfile.mkdtemp(prefix="closebot-sandbox-")) / "sandbox.db")
    settings = _settings(args)
    workspace = settings.db_path.with_name(settings.db_path.name + ".slack.json") if kept else None
    store = open_store(settings)
    model = build_model(settings)
    driver = (
        f"Claude ({model.name})"
        if settings.uses_claude
        else "the offline playbook (set ANTHROPIC_API_KEY for Claude)"
    )
    try:
        sandbox = Sandbox(store=store, model=model, port=args.port, workspace_file=workspace)
    except ValueError as e:
        raise ConfigError(str(e)) from e
    except OSError as e:
        raise ConfigError(
            f"cannot listen on 127.0.0.1:{args.port}: {e.strerror or e}; try --port 0"
        ) from e
    return run_sandbox(sandbox, driver=driver, db_path=settings.db_path, out=out)


def cmd_data(args: argparse.Namespace, out: TextIO) -> int:
    if args.data_command == "import":
        return cmd_data_import(args, out)
    target = Path(args.dir).expanduser()
    if args.data_command == "sample":
        written = close_data.write_sample(target)
        print(f"Wrote the sample periods {', '.join(written)} to {target}.", file=out)
        print(f"Check them with: closebot data check {target}", file=out)
        return EXIT_OK
    if not target.is_dir():
        raise ConfigError(f"{target} is not a directory")
    if args.period:
        close_data.check_period(args.period)
    results = close_data.check(target, args.period)
    bad = 0
    for period, problems in results.items():
        if not problems:
            print(f"{period}: ok (11 files)", file=out)
            continue
        bad += 1
        print(f"{period}: {len(problems)} problem(s); nothing would be imported:", file=out)
        for p in problems:
            print(f"  - {p}", file=out)
    if (target / gl_export.MAP_FILE).is_file():
        try:
            missing = gl_export.unmapped(gl_export.read_account_map(target / gl_export.MAP_FILE))
        except CloseBotError as e:
            print(f"{gl_export.MAP_FILE}: {e}", file=out)
            return EXIT_USAGE
        if missing:
            bad += 1
            print(
                f"{gl_export.MAP_FILE}: {len(missing)} closebot account(s) with no GL account: "
                + ", ".join(missing),
                file=out,
            )
        else:
            print(f"{gl_export.MAP_FILE}: ok (every closebot account is mapped)", file=out)
    return EXIT_USAGE if bad else EXIT_OK


def cmd_data_import(args: argparse.Namespace, out: TextIO) -> int:
    """Import files into the database, as a drop in Slack does; a file that needs a person
    (its kind, period or an unfamiliar layout) is listed with what to say."""
    if args.period:
        close_data.check_period(args.period)
    files: list[Path] = []
    for raw in args.paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            files.extend(
                sorted(p for p in path.iterdir() if p.suffix.lower() in (".csv", ".xlsx", ".xlsm"))
            )
        elif path.is_file():
            files.append(path)
        else:
            raise ConfigError(f"{path}: no such file or directory")
    files = [f for f in files if f.name != gl_export.MAP_FILE]
    if not files:
        raise ConfigError("no CSV or XLSX files to import")
    store = open_store(_settings(args))
    imports = intake.Imports(store)
    who = os_login()  # the console's identity: the OS login running the command
    failed = 0
    for path in files:
        got = imports.receive(
            filename=path.name,
            raw=path.read_bytes(),
            dropped_by=who,
            origin="cli",
            period=args.period,
            kind=args.kind,
        )
        if got.ask and got.ask.needs == ["mapping"]:
            print(
                f"{path.name}: {got.ask.kind}, proposed mapping: {_mapping_text(got.ask)}", file=out
            )
            if args.yes or (sys.stdin.isatty() and _yes(f"Use this mapping for {path.name}?", out)):
                got = imports.confirm(got.id, by=who)
        if got.status == "active":
            superseded = (
                f"; replaces {got.superseded['filename']} (file {got.superseded['id']})"
                if got.superseded
                else ""
            )
            assert got.converted
            print(
                f"{path.name}: {got.kind} for {got.period} — {got.converted.summary()}{superseded}",
                file=out,
            )
        elif got.status == "duplicate":
            print(f"{path.name}: already the {got.period} {got.kind}; nothing changed", file=out)
        elif got.status == "pending":
            failed += 1
            assert got.ask
            say = " and ".join(
                {"kind": "--kind", "period": "--period", "mapping": "--yes"}[n]
                for n in got.ask.needs
            )
            print(
                f"{path.name}: could not tell its {', '.join(got.ask.needs)}; give {say}", file=out
            )
        else:
            failed += 1
            print(
                f"{path.name}: {len(got.problems)} problem(s); nothing of it was imported:",
                file=out,
            )
            for p in got.problems:
                print(f"  - {p}", file=out)
    return EXIT_USAGE if failed else EXIT_OK


def _yes(prompt: str, out: TextIO) -> bool:
    print(f"{prompt} [y/N] ", end="", file=out, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _mapping_text(ask: intake.Ask) -> str:
    return ", ".join(f"{k} ← {v!r}" for k, v in ask.mapping.items() if v and v != k) or "as named"


def cmd_doi(args: argparse.Namespace, out: TextIO) -> int:
    settings = _settings(args)
    store = open_store(settings)
    ledger = Ledger(store)
    period = close_data.latest_period(settings.data_dir)
    folder = close_data.require_period(period, settings.data_dir)
    csv_rows = [
        r for r in close_data.load(period, settings.data_dir).doi if r.well_id == args.well_id
    ]
    added = ledger.all_doi_rows(args.well_id)
    if not csv_rows and not added:
        raise ConfigError(
            f"no DOI rows for well {args.well_id!r} in {folder / 'doi.csv'} or the store"
        )
    name = csv_rows[0].well_name if csv_rows else added[0]["row"].get("well_name", args.well_id)
    print(f"{args.well_id} {name} — DOI history", file=out)
    print(f"  {'effective':<11} {'WI':>11} {'NRI':>11}  source", file=out)
    for r in csv_rows:
        print(
            f"  {r.effective_from:<11} {r.wi:>11.8f} {r.nri:>11.8f}  doi.csv line {r.line} ({period})",
            file=out,
        )
    for a in added:
        row = a["row"]
        state = {
            "in_force": "in force",
            "proposed": "proposed, awaiting posting approval",
            "void": "void",
        }.get(a["status"], a["status"])
        print(
            f"  {a['effective_from']:<11} {Decimal(row['wi']):>11.8f} {Decimal(row['nri']):>11.8f}  closebot run {a['run_id']}, "
            f"decided by {a['decided_by'] or '-'} — {state}",
            file=out,
        )
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace, out: TextIO) -> int:
    """Exit 0: sound; 1: a problem found (each one a line); 2: no database there."""
    from bot.store import doctor

    settings = _settings(args)
    findings = doctor.examine(settings.db_path)
    for f in findings:
        print(f"{'PROBLEM' if f.problem else 'ok     '}  {f.what}", file=out)
    problems = sum(f.problem for f in findings)
    if problems:
        print(f"closebot doctor: {problems} problem(s) in {settings.db_path}", file=out)
        return EXIT_FAILED
    print(f"closebot doctor: {settings.db_path} is sound", file=out)
    return EXIT_OK


def cmd_backup(args: argparse.Namespace, out: TextIO) -> int:
    from bot.store import doctor

    settings = _settings(args)
    pages = doctor.backup(settings.db_path, Path(args.path))
    print(
        f"closebot: backed up {settings.db_path} to {args.path} ({pages} pages, checked); "
        "README: Backups says how to restore it",
        file=out,
    )
    return EXIT_OK


COMMANDS = {
    "data": cmd_data,
    "doi": cmd_doi,
    "run": cmd_run,
    "resume": cmd_resume,
    "change": cmd_change,
    "approve": cmd_approve,
    "audit": cmd_audit,
    "entries": cmd_entries,
    "runs": cmd_runs,
    "serve": cmd_serve,
    "sandbox": cmd_sandbox,
    "doctor": cmd_doctor,
    "backup": cmd_backup,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """The closebot command; errors are one clear line, never a traceback."""
    out = out or sys.stdout
    level = os.environ.get("CLOSEBOT_LOG_LEVEL", "ERROR").strip().upper()
    if level not in logging.getLevelNamesMapping():
        print(
            f"closebot: error: CLOSEBOT_LOG_LEVEL={level!r} is not a log level (DEBUG, INFO, WARNING, ERROR)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args, out)
    except CloseBotError as e:
        print(f"closebot: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(
            "\nclosebot: interrupted; nothing is lost. `closebot runs` lists runs to resume.",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # the edge: a bug gets one line here, the traceback at DEBUG
        logging.getLogger("closebot").debug("unexpected error", exc_info=True)
        print(
            f"closebot: unexpected error: {type(e).__name__}: {e} (CLOSEBOT_LOG_LEVEL=DEBUG shows where)",
            file=sys.stderr,
        )
        return EXIT_FAILED


__all__ = ["main"]

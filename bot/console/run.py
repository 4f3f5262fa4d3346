"""`closebot run` and `closebot resume`: start a period's close, or continue a run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from bot.agent_loop import Paused, TurnOutcome, Waiting
from bot.close import (
    Ledger,
    PeriodPostedError,
    latest_period,
    load_period,
    period_label,
    period_taken,
    require_data,
    start_close,
    start_prompt,
)
from bot.console.presenter import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from bot.console.session import RESUME_LEASE, console_loop, drive_to_end, open_store, settings_of
from bot.core.config import Settings
from bot.core.errors import PeriodTakenError
from bot.core.identity import os_login
from bot.core.names import Names
from bot.store import Run, Store
from bot.store.leases import describe_owner, lease_owner
from bot.store.locks import wait_for_writer


def _say_waiting(seconds: int) -> None:
    print(
        f"closebot: the database is busy (another closebot?) — waiting up to {seconds} s "
        "(CLOSEBOT_DB_WAIT_SECONDS)",
        file=sys.stderr,
        flush=True,
    )


def open_to_work(args: argparse.Namespace) -> tuple[Settings, Store]:
    """The settings and the database for run and resume: a database another process holds is
    waited for, within the bound, saying so (issue 31); BusyError once the bound passes."""
    settings = settings_of(args)
    if not settings.db_url:  # PostgreSQL: a write waits for the lock itself (lock_timeout)
        wait_for_writer(settings.db_path, settings.db_wait_seconds, _say_waiting)
    return settings, open_store(settings, to_work=True)


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    settings, store = open_to_work(args)
    period = args.period or latest_period(store, settings.data_dir)
    require_data(store, period, settings.data_dir)
    load_period(store, period, settings.data_dir)  # bad data stops here, before a run
    label = period_label(period)
    taken = period_taken(store, period)  # one close per period: refused here, before the model
    if taken is not None:
        print(_taken_text(store, label, taken.posted, taken.live), file=sys.stderr)
        return EXIT_USAGE
    loop = console_loop(settings, store, out)
    mode = "auto" if args.auto else "console"
    try:  # the period's claim: of two starts at the same instant, one makes a run
        run = start_close(store, period, mode=mode, started_by=os_login(), model=loop.model.name)
    except PeriodPostedError as e:
        print(_taken_text(store, label, e.batch, None), file=sys.stderr)
        return EXIT_USAGE
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
    print(f"closebot · Month-end close · {period_label(period)} · run {run.id}", file=out)
    print(f"Driven by {driver}; state in {settings.db_path}.\n", file=out, flush=True)
    outcome = loop.start(run.id, start_prompt(period))
    return drive_to_end(loop, store, run.id, outcome, auto=args.auto, settings=settings, out=out)


def _taken_text(
    store: Store, label: str, posted: Mapping[str, Any] | None, live: Run | None
) -> str:
    """Why the period's close is not started: it is posted (and by whom), or under way."""
    if posted is not None:
        names = Names(store)  # people by the names Slack last gave
        approvers = [names(who, "-") for who in Ledger(store).approvers(posted)]
        by = f", approved by {' and '.join(approvers)}" if approvers else ""
        return (
            f"closebot: {label} is already posted (batch {posted['id']}{by}); a period is closed "
            "once. To change it, reopen it with a reversing batch in the ledger. Nothing was "
            "started."
        )
    assert live is not None
    return (
        f"closebot: the {label} close is already under way (run {live.id}, {live.status}); "
        f"continue it with `closebot resume {live.id}`. Nothing was started."
    )


def cmd_resume(args: argparse.Namespace, out: TextIO) -> int:
    settings, store = open_to_work(args)
    run = store.runs.get(args.run_id)
    if run.status == "done":
        print(
            f"closebot: run {run.id} is already finished; see `closebot audit {run.id}`.", file=out
        )
        return EXIT_OK
    owner = lease_owner("closebot resume")
    with store.leases.held(run.id, owner=owner, ttl=RESUME_LEASE) as holder:
        if holder:
            print(
                f"closebot: run {run.id} is being advanced by {describe_owner(holder)}; "
                "nothing was changed. Try again when it is done (`closebot runs` shows its state).",
                file=sys.stderr,
            )
            return EXIT_FAILED
        loop = console_loop(settings, store, out)
        print(
            f"closebot · resuming run {run.id} ({period_label(run.period)}, was {run.status})",
            file=out,
            flush=True,
        )
        pending = store.questions.pending(run.id)
        deferred = store.questions.deferred(run.id)
        if pending:
            outcome: TurnOutcome = Paused(pending.id)
        elif loop.parked(run.id):  # it waits on questions put off: they come back now
            outcome = Waiting(text="", deferred=tuple(q.id for q in deferred))
        else:
            outcome = loop.advance(run.id)
        return drive_to_end(
            loop,
            store,
            run.id,
            outcome,
            auto=args.auto,
            settings=settings,
            out=out,
            bring_back=True,
        )

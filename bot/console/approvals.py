"""`closebot change` and `closebot approve`: before posting, ask a decision again, or give
the pending posting approval under the OS login running the command."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from bot.agent_loop import Paused
from bot.close import (
    APPROVAL_HEADERS,
    CannotChange,
    approval_refusal,
    ask_change,
    changeable_decisions,
    header_of,
    period_label,
)
from bot.console.presenter import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PAUSED,
    EXIT_USAGE,
    ConsoleAnswerer,
    drive,
)
from bot.console.session import RESUME_LEASE, console_loop, drive_to_end, open_store, settings_of
from bot.core.identity import os_login
from bot.store.leases import describe_owner, lease_owner


def cmd_change(args: argparse.Namespace, out: TextIO) -> int:
    """Change a decision before posting: without a number, the decisions that can change;
    with one, that question asked again here. A pending approval is withdrawn; the batch is
    drafted again and needs a new approval (the old answer stays in the audit trail)."""
    settings = settings_of(args)
    store = open_store(settings, to_work=True)
    run = store.runs.get(args.run_id)
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
    with store.leases.held(run.id, owner=owner, ttl=RESUME_LEASE) as holder:
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
        loop = console_loop(settings, store, out)
        return drive_to_end(
            loop, store, run.id, Paused(record.id), auto=False, settings=settings, out=out
        )


def cmd_approve(args: argparse.Namespace, out: TextIO) -> int:
    """A posting approval at the console, given by the OS login running this command."""
    settings = settings_of(args)
    store = open_store(settings)
    run = store.runs.get(args.run_id)
    login = os_login()
    pending = store.questions.pending(run.id)
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
        store.audit.record(
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
    with store.leases.held(run.id, owner=owner, ttl=RESUME_LEASE) as holder:
        if holder:
            print(
                f"closebot: run {run.id} is being advanced by {holder}; try again when it is done.",
                file=sys.stderr,
            )
            return EXIT_FAILED
        loop = console_loop(settings, store, out)
        print(
            f"closebot · run {run.id} ({period_label(run.period)}) · approving as {login}",
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
    answered = store.questions.get(pending.id)
    if code == EXIT_PAUSED and answered.status == "answered":
        return EXIT_OK  # the approval is given; the run waits on someone else now
    return code

"""`closebot runs`, `closebot doctor` and `closebot backup`: the database's runs, its
health and an online copy of it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from bot.console.presenter import EXIT_FAILED, EXIT_OK
from bot.console.session import open_store, settings_of
from bot.core.errors import ConfigError
from bot.core.names import Names
from bot.core.prices import cost_by_model, dollars
from bot.store import USAGE_FIELDS


def cmd_runs(args: argparse.Namespace, out: TextIO) -> int:
    store = open_store(settings_of(args))
    runs = store.runs.recent()
    names = Names(store)  # Slack's names as last looked up; a console login as itself
    if not runs:
        print("No runs yet. Start one with: closebot run", file=out)
    for r in runs:
        calls, usage = store.transcript.usage(r.id)
        tokens = ""
        if calls:
            prompt = sum(usage[k] for k in USAGE_FIELDS if k != "output_tokens")
            cached = usage["cache_read_input_tokens"] / prompt if prompt else 0.0
            tokens = (
                f"  {calls} calls, {prompt:,} in ({cached:.0%} cached) / "
                f"{usage['output_tokens']:,} out, "
                f"{dollars(cost_by_model(store.transcript.usage_by_model(r.id)))}"
            )
        retry = f"  (retrying the model at {r.retry_at[11:16]} UTC)" if r.retry_at else ""
        print(
            f"{r.id}  {r.period}  {r.status:<9} {r.mode:<8} {names(r.started_by, '-'):<16} {r.created_at}{tokens}{retry}",
            file=out,
        )
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace, out: TextIO) -> int:
    """Exit 0: sound; 1: a problem found (each one a line); 2: no database there."""
    from bot.close import Ledger
    from bot.console.audit import evidence_mismatches
    from bot.store import doctor

    settings = settings_of(args)
    # what `audit RUN --verify` checks, for every run: the close's covered rows too
    findings = doctor.examine(settings.db_path, prepare=Ledger, also=evidence_mismatches)
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

    settings = settings_of(args)
    if settings.db_url:
        raise ConfigError(
            f"{settings.database} is a PostgreSQL database: back it up with pg_dump "
            "(README: Hosted on PostgreSQL); `closebot backup` copies an SQLite file"
        )
    pages = doctor.backup(settings.db_path, Path(args.path))
    print(
        f"closebot: backed up {settings.db_path} to {args.path} ({pages} pages, checked); "
        "README: Backups says how to restore it",
        file=out,
    )
    return EXIT_OK

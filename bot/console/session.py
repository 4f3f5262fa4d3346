"""What every command starts from: the settings its flags give, the store, the close
loop at the console, the answerer, and driving a run until it ends or waits."""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from datetime import timedelta
from functools import partial
from typing import TextIO

from bot.agent_loop import AgentLoop, TurnOutcome
from bot.close import DOMAIN, close_loop, preview_at_console
from bot.console.presenter import (
    EXIT_FAILED,
    EXIT_OK,
    Answerer,
    AutoAnswerer,
    ConsoleAnswerer,
    ConsolePresenter,
    drive,
)
from bot.core.config import Settings
from bot.core.errors import ConfigError
from bot.core.identity import os_login
from bot.store import Store

RESUME_LEASE = timedelta(seconds=90)  # renewed while resume runs; expires soon after a crash


def settings_of(args: argparse.Namespace) -> Settings:
    env = dict(os.environ)
    if getattr(args, "db", None):
        env["CLOSEBOT_DB"] = args.db
    if getattr(args, "data", None):
        env["CLOSEBOT_DATA"] = args.data
    return Settings.from_env(env)


def open_store(settings: Settings, *, to_work: bool = False) -> Store:
    """The database; `to_work` (run, resume) refuses one a newer closebot has migrated."""
    try:
        store = Store(settings.db_url or settings.db_path, migrations=[DOMAIN.migrations])
    except sqlite3.DatabaseError as e:
        raise ConfigError(f"cannot use {settings.database} as closebot's database: {e}") from e
    newer = store.newer_schema() if to_work else None
    if newer:
        store.close()
        raise ConfigError(f"{settings.database}: {newer}; use the newer closebot")
    return store


def console_loop(settings: Settings, store: Store, out: TextIO) -> AgentLoop:
    return close_loop(settings, store=store, presenter=ConsolePresenter(out, store))


def answerer_for(auto: bool, out: TextIO, store: Store, settings: Settings) -> Answerer:
    if auto:
        return AutoAnswerer(out)
    return ConsoleAnswerer(
        stdin=sys.stdin,
        out=out,
        preview=partial(preview_at_console, store, settings.data_dir),
    )


def drive_to_end(
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
        answerer=answerer_for(auto, out, store, settings),
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
    elif code == EXIT_FAILED and store.runs.get(run_id).status == "failed":
        print(f"Fix the cause, then continue with: closebot resume {run_id}", file=out, flush=True)
    return code

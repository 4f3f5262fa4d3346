"""`closebot run` against a database another process holds (issue 31): it says it is waiting,
waits up to CLOSEBOT_DB_WAIT_SECONDS, and carries on once the lock is let go — or, when the
bound passes, exits 2 saying so, having changed nothing. A real second connection holds the
lock (BEGIN EXCLUSIVE), let go by the test once closebot says it waits."""

from __future__ import annotations

import os
import queue
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bot.close import DOMAIN
from bot.store import Store
from tests.cli_run import ONE, TIMEOUT

WAITING = "the database is busy (another closebot?)"


def made(db: Path) -> None:
    """The database as an earlier closebot left it: created, migrated, no run."""
    Store(db, migrations=[DOMAIN.migrations]).close()


@contextmanager
def held(db: Path) -> Iterator[sqlite3.Connection]:
    """Another process's hold on the database: an EXCLUSIVE transaction, ended on leaving."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=0)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()


def started(env: dict[str, str]) -> tuple[subprocess.Popen[str], queue.Queue[str]]:
    """`closebot run 2026-10 --auto`, its stderr read line by line into a queue."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "2026-10", "--auto"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **ONE, **env},
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    return proc, lines


def said(lines: queue.Queue[str], words: str, *, within: float) -> str:
    """The first stderr line holding `words`, waited for at most `within` seconds."""
    seen = []
    while True:
        try:
            line = lines.get(timeout=within)
        except queue.Empty:
            raise AssertionError(f"closebot never said {words!r}; it said {seen}") from None
        seen.append(line)
        if words in line:
            return line


def counts(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db) as conn:
        runs = conn.execute("select count(*) from runs").fetchone()[0]
        events = conn.execute("select count(*) from audit_events").fetchone()[0]
    return int(runs), int(events)


@pytest.mark.sqlite_only(
    "another process holds the SQLite file's lock through sqlite3 (on PostgreSQL, closebot run waits on the lock itself)"
)
def test_a_run_against_a_held_database_says_it_waits_and_carries_on_once_let_go(
    db_path: Path,
) -> None:
    made(db_path)
    with held(db_path):
        proc, lines = started({"CLOSEBOT_DB_WAIT_SECONDS": "120"})
        line = said(lines, WAITING, within=TIMEOUT)
        assert "waiting up to 120 s" in line
        assert proc.poll() is None  # still waiting, not failed
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err[-2000:]
    assert "posted" in out.lower()
    assert counts(db_path)[0] == 1


@pytest.mark.sqlite_only(
    "another process holds the SQLite file's lock through sqlite3 (on PostgreSQL, closebot run waits on the lock itself)"
)
def test_a_run_whose_wait_passes_its_bound_exits_2_and_changes_nothing(db_path: Path) -> None:
    made(db_path)
    before = counts(db_path)
    with held(db_path):
        proc, lines = started({"CLOSEBOT_DB_WAIT_SECONDS": "1"})
        said(lines, WAITING, within=TIMEOUT)
        gave_up = said(lines, "still busy after 1 s", within=TIMEOUT)
        proc.wait(timeout=TIMEOUT)  # the lock is held until closebot has given up
    assert proc.returncode == 2
    assert "nothing was changed" in gave_up and "unexpected error" not in gave_up
    assert counts(db_path) == before

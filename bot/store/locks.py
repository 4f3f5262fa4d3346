"""Who may touch the writer connection, and when: this process's lock, the ack path's
bounded waits, each thread's own read connection, and a command's wait for a database
another process holds (wait_for_writer)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from bot.core.errors import BusyError
from bot.store.ack_priority import ACKS

QUICK_BUSY_MS = 400  # the ack path waits at most this long for SQLite's lock, then says "busy"
# ... and at most this long for this process's own lock, whose holders are its other threads'
# short transactions: under a burst of Submits they queue for it, and must not be told "busy".
QUICK_LOCK_MS = 1500


class Locks:
    """The writer connection's lock (re-entrant, per process) and the ack path's quick mode."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._quick = threading.local()
        self._held = threading.local()  # how deep this thread is inside locked()

    @property
    def is_quick(self) -> bool:
        return bool(getattr(self._quick, "on", False))

    @property
    def held(self) -> bool:
        """Whether this thread holds the lock (is inside a transaction or a locked read)."""
        return bool(getattr(self._held, "depth", 0))

    @contextmanager
    def quick(self) -> Iterator[None]:
        """Within this block, this thread waits at most QUICK_BUSY_MS for a lock: BusyError after.

        The ack path runs in here, so a database held by another process (a migration, a
        backup, a second closebot) costs the user a "busy, try again", not a missed ack.
        """
        before = self.is_quick
        self._quick.on = True
        try:
            yield
        finally:
            self._quick.on = before

    @contextmanager
    def locked(self) -> Iterator[None]:
        held = getattr(self._held, "depth", 0)
        if not held:  # never while holding the lock: a request may be waiting for it
            ACKS.checkpoint()  # background work lets a request being answered go first
        if self.is_quick:
            if not self._lock.acquire(timeout=QUICK_LOCK_MS / 1000):
                raise BusyError("the database is busy (another closebot thread is writing)")
        else:
            self._lock.acquire()
        self._held.depth = held + 1
        try:
            yield
        finally:
            self._held.depth = held
            self._lock.release()


class Readers:
    """Each thread's read-only connection: in WAL mode reads need no lock, so they never
    queue behind another thread's transaction."""

    def __init__(
        self, path: str, *, busy_ms: int, connect: Callable[[], Any] | None = None
    ) -> None:
        self._path = path
        self._busy_ms = busy_ms
        self._connect = connect  # another database's read-only connection (PostgreSQL's)
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._opened_lock = threading.Lock()

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._connect is not None:
                conn = cast(sqlite3.Connection, self._connect())
            else:
                conn = sqlite3.connect(
                    self._path, timeout=self._busy_ms / 1000, check_same_thread=False
                )
                conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
            with self._opened_lock:
                self._opened.append(conn)
        return conn

    def close_all(self) -> None:
        """Close every thread's reader (a closed store holds no descriptors); a thread that
        reads again afterwards gets an error, as with the writer."""
        with self._opened_lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()


def wait_for_writer(path: Path, seconds: int, waiting: Callable[[int], None]) -> None:
    """Before a command works on the database at `path`: if another process holds it (a
    transaction that keeps writers out — another closebot, a backup, a shell), call
    `waiting(seconds)` once and wait up to `seconds` for it to let go (issue 31: a run against
    a database held for 12 s failed after a second). BusyError when the bound passes; nothing
    is written either way (the probe's transaction is rolled back at once), and a database
    that does not exist yet is left to be created."""
    if not path.exists():
        return
    conn = sqlite3.connect(str(path), timeout=0, isolation_level=None)
    try:
        if _writable(conn):
            return
        waiting(seconds)
        conn.execute(f"PRAGMA busy_timeout = {int(seconds) * 1000}")
        if not _writable(conn):
            raise BusyError(
                f"the database is still busy after {seconds} s (another closebot, a backup, or "
                "a shell holds it); nothing was changed. Try again once it is free, or wait "
                "longer with CLOSEBOT_DB_WAIT_SECONDS"
            )
    finally:
        conn.close()


def _writable(conn: sqlite3.Connection) -> bool:
    """Whether a write transaction can begin now (within the connection's busy timeout)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as e:
        if "locked" in str(e) or "busy" in str(e):
            return False
        raise
    conn.execute("ROLLBACK")
    return True

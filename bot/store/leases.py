"""Leases: one process advances a run at a time.

A lease row names its owner as `host:pid:start:nonce` (see `lease_owner`): the host and
process that hold it, the process's start time (a pid reused by a later process is not
the same owner) and a nonce. Within a process, holds of one run by one owner are counted:
the row goes only when the last hold ends, so a job handing the run to the next job never
leaves it unleased in between. A lease whose process is gone from this host is dead at
once; another host's lease waits for its expiry.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from bot.core.errors import BusyError
from bot.store.core import StoreCore


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), or None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def lease_owner(label: str = "") -> str:
    """This process as a lease owner: host, pid, start time and a nonce; `label` says what it is."""
    pid = os.getpid()
    owner = f"{socket.gethostname()}:{pid}:{_start_time(pid) or '-'}:{uuid.uuid4().hex[:6]}"
    return f"{owner} {label}" if label else owner


def describe_owner(owner: str) -> str:
    """An owner in words: 'closebot serve, pid 123 on host-a'."""
    ident, _, label = owner.partition(" ")
    parts = ident.split(":")
    if len(parts) < 3 or not parts[1].isdigit():
        return owner
    return f"{label or 'closebot'}, pid {parts[1]} on {parts[0]}"


def owner_is_gone(owner: str) -> bool:
    """True when the owner is a process of this host that no longer runs (a crash, a kill)."""
    parts = owner.partition(" ")[0].split(":")
    if len(parts) < 3 or not parts[1].isdigit() or parts[0] != socket.gethostname():
        return False  # another host's (or an unknown) owner: only its expiry frees it
    pid = int(parts[1])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, someone else's
    start = parts[2] if len(parts) >= 4 else "-"  # releases before this one wrote no start
    now = _start_time(pid)
    return start != "-" and now is not None and now != start  # the pid was reused


@dataclass
class _Hold:
    count: int
    ttl: timedelta


class Leases:
    """`store.leases`: which process advances a run, held and renewed while it does.

    However many leases this process holds, one heartbeat thread renews them all (issue 33:
    a thread per held lease made 10,000 queued runs 9,322 threads)."""

    RENEW_BATCH = 500  # rows renewed per transaction, so the writer is never held for long

    def __init__(self, core: StoreCore) -> None:
        self.core = core
        self._holds: dict[tuple[str, str], _Hold] = {}
        self._holds_guard = threading.Lock()
        self._beat: threading.Thread | None = None
        self._wake = threading.Event()  # a shorter ttl arrived, or the last hold ended

    def acquire(self, run_id: str, *, owner: str, ttl: timedelta) -> str | None:
        """Take or renew the run's lease; None when it is ours, else who holds it. A lease
        left by a process of this host that is gone is taken over at once."""
        if self.core.newer_schema():  # a rolling deploy: the newer closebot advances the run
            return "a newer closebot (this process is older than the database)"
        with self.core.write() as db:
            rows = self.core.query(
                "select owner, expires_at from leases where run_id = ?", (run_id,)
            )
            now = self.core.now()
            if (
                rows
                and rows[0]["owner"] != owner
                and rows[0]["expires_at"] > now
                and not owner_is_gone(rows[0]["owner"])
            ):
                return str(rows[0]["owner"])
            db.execute(
                "insert into leases (run_id, owner, expires_at) values (?, ?, ?) "
                "on conflict(run_id) do update set owner = excluded.owner, expires_at = excluded.expires_at",
                (run_id, owner, self.core.now(after=ttl)),
            )
        return None

    def renew(self, *, owner: str, ttl: timedelta) -> None:
        with self.core.write() as db:
            db.execute(
                "update leases set expires_at = ? where owner = ?",
                (self.core.now(after=ttl), owner),
            )

    def release(self, run_id: str, *, owner: str) -> None:
        with self.core.write() as db:
            db.execute("delete from leases where run_id = ? and owner = ?", (run_id, owner))

    def reclaim_dead(self) -> list[str]:
        """Drop the leases of this host's processes that are gone; the runs they held."""
        rows = self.core.query("select run_id, owner from leases order by run_id")
        dead = [r for r in rows if owner_is_gone(r["owner"])]
        if dead:
            with self.core.write() as db:
                for r in dead:
                    db.execute(
                        "delete from leases where run_id = ? and owner = ?",
                        (r["run_id"], r["owner"]),
                    )
        return [r["run_id"] for r in dead]

    def hold(self, run_id: str, *, owner: str, ttl: timedelta) -> str | None:
        """One more hold of the run's lease by `owner` (taking it if this is the first), kept
        renewed every ttl/3 until the last hold is let go. None when held, else who holds it."""
        key = (run_id, owner)
        with self._holds_guard:
            hold = self._holds.get(key)
            if hold is not None:
                hold.count += 1
                return None
        holder = self.acquire(run_id, owner=owner, ttl=ttl)
        if holder:
            return holder
        self._adopt(run_id, owner=owner, ttl=ttl)
        return None

    def _adopt(self, run_id: str, *, owner: str, ttl: timedelta) -> None:
        """Count a hold of a lease row this owner has just written; the heartbeat renews it."""
        key = (run_id, owner)
        with self._holds_guard:
            hold = self._holds.get(key)
            if hold is not None:
                hold.count += 1
                return
            shorter = all(ttl < h.ttl for h in self._holds.values())
            self._holds[key] = _Hold(count=1, ttl=ttl)
            if self._beat is None or not self._beat.is_alive():
                self._beat = threading.Thread(
                    target=self._heartbeat, name="lease-heartbeat", daemon=True
                )
                self._beat.start()
            elif shorter:
                self._wake.set()  # beat at the new, shorter interval from now on

    def _heartbeat(self) -> None:
        """Every third of the shortest ttl held, renew every held lease; end with the last."""
        while True:
            with self._holds_guard:
                if not self._holds:
                    self._beat = None
                    return
                every = min(h.ttl for h in self._holds.values()).total_seconds() / 3
            if self._wake.wait(every):
                self._wake.clear()
                continue
            # A missed beat is tried again at the next; the lease outlives one miss.
            with suppress(sqlite3.Error, BusyError):
                self.renew_held()

    def renew_held(self) -> int:
        """Renew every lease this process holds (the heartbeat's beat); how many rows it
        renewed. A lease another owner took over after it expired stays theirs."""
        with self._holds_guard:
            held = [(run_id, owner, h.ttl) for (run_id, owner), h in self._holds.items()]
        renewed = 0
        for at in range(0, len(held), self.RENEW_BATCH):
            with self.core.write() as db:
                for run_id, owner, ttl in held[at : at + self.RENEW_BATCH]:
                    renewed += db.execute(
                        "update leases set expires_at = ? where run_id = ? and owner = ?",
                        (self.core.now(after=ttl), run_id, owner),
                    ).rowcount
        return renewed

    def let_go(self, run_id: str, *, owner: str, written: bool = True) -> None:
        """End one hold; the last one releases the lease. `written=False`: the transaction
        that took the lease was rolled back, so there is no row to delete."""
        key = (run_id, owner)
        with self._holds_guard:
            hold = self._holds.get(key)
            if hold is None:
                return
            hold.count -= 1
            if hold.count:
                return
            del self._holds[key]
            if not self._holds:
                self._wake.set()  # the heartbeat ends with the last hold
        if written:
            self.release(run_id, owner=owner)

    @contextmanager
    def held(self, run_id: str, *, owner: str, ttl: timedelta) -> Iterator[str | None]:
        """Hold the run's lease for the block (see hold).

        Yields None when the lease is ours, else who holds it (and the block should not
        advance the run). A process that dies stops renewing: the lease expires after `ttl`,
        or at once for a process of this host (reclaim_dead, acquire).
        """
        holder = self.hold(run_id, owner=owner, ttl=ttl)
        if holder:
            yield holder
            return
        try:
            yield None
        finally:
            self.let_go(run_id, owner=owner)

    def holder(self, run_id: str) -> str | None:
        rows = self.core.query(
            "select owner from leases where run_id = ? and expires_at > ?",
            (run_id, self.core.now()),
        )
        return str(rows[0]["owner"]) if rows else None

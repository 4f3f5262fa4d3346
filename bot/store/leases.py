"""Leases: one process advances a run at a time."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta

from bot.errors import BusyError
from bot.store.runs import Run, Runs


class Leases(Runs):
    # -- leases: one process advances a run at a time -----------------------

    def acquire_lease(self, run_id: str, *, owner: str, ttl: timedelta) -> str | None:
        """Take or renew the run's lease; None when it is ours, else who holds it."""
        with self.write() as db:
            rows = self.query("select owner, expires_at from leases where run_id = ?", (run_id,))
            now = self.now()
            if rows and rows[0]["owner"] != owner and rows[0]["expires_at"] > now:
                return str(rows[0]["owner"])
            db.execute(
                "insert into leases (run_id, owner, expires_at) values (?, ?, ?) "
                "on conflict(run_id) do update set owner = excluded.owner, expires_at = excluded.expires_at",
                (run_id, owner, self.now(after=ttl)),
            )
        return None

    def renew_leases(self, *, owner: str, ttl: timedelta) -> None:
        with self.write() as db:
            db.execute(
                "update leases set expires_at = ? where owner = ?", (self.now(after=ttl), owner)
            )

    def release_lease(self, run_id: str, *, owner: str) -> None:
        with self.write() as db:
            db.execute("delete from leases where run_id = ? and owner = ?", (run_id, owner))

    @contextmanager
    def leased(self, run_id: str, *, owner: str, ttl: timedelta) -> Iterator[str | None]:
        """Hold the run's lease for the block, renewed every ttl/3 by a heartbeat thread.

        Yields None when the lease is ours, else who holds it (and the block should not
        advance the run). A process that dies stops renewing: the lease expires after `ttl`.
        """
        holder = self.acquire_lease(run_id, owner=owner, ttl=ttl)
        if holder:
            yield holder
            return
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(ttl.total_seconds() / 3):
                # A missed beat is tried again at the next; the lease outlives one miss.
                with suppress(sqlite3.Error, BusyError):
                    self.renew_leases(owner=owner, ttl=ttl)

        beat = threading.Thread(target=heartbeat, name=f"lease-{run_id}", daemon=True)
        beat.start()
        try:
            yield None
        finally:
            stop.set()
            beat.join(timeout=5)
            self.release_lease(run_id, owner=owner)

    def lease_holder(self, run_id: str) -> str | None:
        rows = self.query(
            "select owner from leases where run_id = ? and expires_at > ?", (run_id, self.now())
        )
        return str(rows[0]["owner"]) if rows else None

    def stuck_runs(self, *, idle_for: timedelta) -> list[Run]:
        """Runs that should be moving but nothing advances them: no lease, no pending question,
        untouched for `idle_for`."""
        cutoff = self.now(after=-idle_for)
        rows = self.query(
            "select r.id from runs r where r.status in ('running', 'waiting') and r.mode = 'slack' "
            "and r.updated_at <= ? "
            "and not exists (select 1 from leases l where l.run_id = r.id and l.expires_at > ?) "
            "and not exists (select 1 from questions q where q.run_id = r.id and q.status = 'pending') "
            "order by r.created_at",
            (cutoff, self.now()),
        )
        return [self.run(r["id"]) for r in rows]

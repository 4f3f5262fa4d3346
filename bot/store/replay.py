"""Slack replay records: a request (by signature or event id) is handled once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from bot.core.errors import BusyError, ReplayedError, StorageError
from bot.store.core import StoreCore


@dataclass
class Sighting:
    """What store.replay.request found of a Slack request: seen before, or recorded by a twin."""

    first: bool
    duplicate: bool = False


class SlackReplay:
    """`store.replay`: each Slack request recorded once, so a replay of it does nothing."""

    def __init__(self, core: StoreCore) -> None:
        self.core = core

    @contextmanager
    def request(self, event_id: str) -> Iterator[Sighting]:
        """Handle one Slack request (by its signature or event id) on this thread.

        `first` is False when it was seen before (a replay: do nothing). Otherwise the request
        is recorded in the first write transaction made inside the block, so an ack costs one
        transaction; a transaction that finds it recorded already (a duplicate delivered at
        the same moment) raises ReplayedError and changes nothing. A block that writes
        nothing records it at its end, and `duplicate` then says whether another delivery
        recorded it first (so whatever this one queued can be dropped).
        """
        try:
            with self.core.quick():
                seen = self.core.query("select 1 from slack_events where event_id = ?", (event_id,))
        except BusyError:
            seen = []  # the listener will find the database busy too, and say so
        sighting = Sighting(first=not seen)
        if seen:
            yield sighting
            return
        self.core.set_first_write(partial(self._record_sighting, event_id))
        try:
            yield sighting
        finally:
            pending = self.core.set_first_write(None)
            if pending:
                with suppress(StorageError), self.core.quick():
                    sighting.duplicate = not self.first_sighting(event_id)

    def _record_sighting(self, event_id: str, conn: sqlite3.Connection) -> None:
        cursor = conn.execute(
            "insert or ignore into slack_events (event_id, received_at) values (?, ?)",
            (event_id, self.core.now()),
        )
        if cursor.rowcount != 1:
            raise ReplayedError(f"request {event_id[:16]}… was handled already")

    def first_sighting(self, event_id: str) -> bool:
        """True the first time an event id is seen; Slack's retries of it return False."""
        with self.core.write() as db:
            cursor = db.execute(
                "insert or ignore into slack_events (event_id, received_at) values (?, ?)",
                (event_id, self.core.now()),
            )
            return cursor.rowcount == 1

    def forget_sightings(self, *, older_than: timedelta) -> int:
        """Drop request signatures seen longer ago than `older_than` (past Slack's replay window)."""
        with self.core.write() as db:
            cursor = db.execute(
                "delete from slack_events where event_id like 'sig:%' and received_at < ?",
                (self.core.now(after=-older_than),),
            )
            return cursor.rowcount

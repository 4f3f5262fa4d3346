"""Acks first: background work steps aside, briefly, while someone's request is being answered.

Slack waits on an ack; nobody waits on a resume's next few milliseconds. In one Python
process both share one GIL, so without help 16 people clicking Submit while earlier answers
resume get their acks 3–4 times slower than a bare Bolt app. The HTTP edge holds `ACKS.ack()`
around each request; every other thread (turns, forms turning read-only, the watchdog) passes
`ACKS.checkpoint()` before each database call, and there waits — at most `MAX_WAIT_S`, so it is
never starved — while any request is in flight. A thread answering a request never waits here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

MAX_WAIT_S = 0.1  # one wait at a checkpoint; a steady stream of requests slows work, never stops it


class AckFirst:
    def __init__(self, max_wait: float = MAX_WAIT_S) -> None:
        self.max_wait = max_wait
        self._in_flight = 0
        self._changed = threading.Condition()
        self._answering = threading.local()

    @contextmanager
    def ack(self) -> Iterator[None]:
        """Around the answering of one request (parse, authorize, claim, ack)."""
        with self._changed:
            self._in_flight += 1
        self._answering.on = True
        try:
            yield
        finally:
            self._answering.on = False
            with self._changed:
                self._in_flight -= 1
                if not self._in_flight:
                    self._changed.notify_all()

    def checkpoint(self) -> None:
        """Background work: wait (bounded) while a request is being answered."""
        if not self._in_flight or getattr(self._answering, "on", False):
            return
        with self._changed:
            self._changed.wait_for(lambda: not self._in_flight, timeout=self.max_wait)

    @property
    def in_flight(self) -> int:
        return self._in_flight


ACKS = AckFirst()

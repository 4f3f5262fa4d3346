"""The fake Slack's clock: the time its rate tiers and its status line's two minutes run on.

Real time by default (monotonic seconds), plus every skip: `advance(seconds)` moves it on
without waiting, and a test can `freeze()` it so only `advance` moves it. A client that was
answered `ratelimited` waits Retry-After on this clock in tests (`skip_every_clock`, which
tests/conftest.py puts in place of bot.slack.client's real sleep), so Slack's real tiers
cost a test no wall time.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import ClassVar


class FakeClock:
    """Seconds, as the fake Slack reads them; thread-safe."""

    _every: ClassVar[weakref.WeakSet[FakeClock]] = weakref.WeakSet()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._skipped = 0.0
        self._frozen_at: float | None = None
        FakeClock._every.add(self)

    def now(self) -> float:
        with self._lock:
            base = self._frozen_at if self._frozen_at is not None else time.monotonic()
            return base + self._skipped

    def advance(self, seconds: float) -> None:
        """Move the clock on by `seconds` at once (no waiting)."""
        with self._lock:
            self._skipped += max(0.0, seconds)

    def freeze(self) -> None:
        """From now on only `advance` moves the clock."""
        with self._lock:
            if self._frozen_at is None:
                self._frozen_at = time.monotonic()


def skip_every_clock(seconds: float) -> None:
    """A wait (a Retry-After) spent on every fake Slack's clock instead of in real time."""
    for clock in list(FakeClock._every):
        clock.advance(seconds)

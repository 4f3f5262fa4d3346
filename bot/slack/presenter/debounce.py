"""Coalesce repeated updates of one thing into one, sent after a quiet moment or on demand.

A turn moves a run's status message a dozen times in a fraction of a second (each step
running, then done). Sending each as a chat.update costs Slack calls and rate limit for
states nobody sees. Here a touched key (a run) is updated once, `window` seconds after the
first touch, showing the state as it is then; touches meanwhile ride along. `flush` sends a
pending update now (a form just appeared: the status must say "waiting on you" with it), and
`drop` forgets it (the caller sends a final state itself). A fast turn thus moves its status
message once; a long step shows as running within `window`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

WINDOW_S = 1.0


class Debounce:
    def __init__(self, send: Callable[[str], None], *, window: float = WINDOW_S) -> None:
        self._send = send
        self.window = window
        self._due: dict[str, float] = {}  # key → when its folded update goes
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def touch(self, key: str) -> None:
        """The thing changed: it is updated once, `window` from the first such change."""
        with self._changed:
            if key in self._due:
                return  # the update already scheduled will show this change too
            self._due[key] = time.monotonic() + self.window
            self._start()
            self._changed.notify()

    def flush(self, key: str) -> None:
        """Send the pending update of `key` now, if there is one."""
        with self._changed:
            pending = self._due.pop(key, None) is not None
        if pending:
            self._send(key)

    def drop(self, key: str) -> None:
        """Forget a pending update: the caller shows the final state itself."""
        with self._changed:
            self._due.pop(key, None)

    def pending(self) -> int:
        with self._changed:
            return len(self._due)

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="closebot-status", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due:
                    self._changed.wait()
                key, due = min(self._due.items(), key=lambda item: item[1])
                wait = due - time.monotonic()
                if wait > 0:
                    self._changed.wait(wait)
                    continue
                del self._due[key]
            try:
                self._send(key)
            except Exception:  # the next change (or the turn's end) shows the state again
                log.exception("a folded update of %s failed", key)


class Latest:
    """The latest wanted action of each key, done in order off the caller's thread (issue 33).

    `want(key, action)` asks for `action` to be done on `schedule` (a pool's submit): one job
    per key at a time, so a key's actions never overtake each other, and an action not yet
    begun is replaced by a newer one of the same key — a thread's status line set when a turn
    starts and cleared when it ends, both still waiting, costs only the clearing (which finds
    nothing shown and calls nothing). The caller never waits on Slack for it."""

    def __init__(self, schedule: Callable[[Callable[[], None]], None]) -> None:
        self._schedule = schedule
        self._wanted: dict[str, Callable[[], None]] = {}
        self._doing: set[str] = set()  # keys with a job scheduled or running
        self._guard = threading.Lock()

    def want(self, key: str, action: Callable[[], None]) -> None:
        with self._guard:
            self._wanted[key] = action
            if key in self._doing:
                return  # the key's job does the newest action when it gets to it
            self._doing.add(key)
        self._schedule(lambda: self._do(key))

    def _do(self, key: str) -> None:
        while True:
            with self._guard:
                action = self._wanted.pop(key, None)
                if action is None:
                    self._doing.discard(key)
                    return
            try:
                action()
            except Exception:  # a notice only: the next change shows the state again
                log.exception("an update of %s failed", key)

"""Coalesce repeated updates of one thing: the first at once, the rest folded into one.

A turn moves a run's status message a dozen times in a fraction of a second (each step
running, then done). Sending each as a chat.update costs Slack calls and rate limit for
states nobody sees. Here a key (a run) is updated at once when it was not updated within
`window`; later touches within the window become one update at the window's end, which shows
the state as it is then. `flush` sends a pending update now (a form just appeared: the status
must say "waiting on you" with it); `drop` forgets it (the caller sends a final state itself).
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
        self._last: dict[str, float] = {}  # key → when it was last sent
        self._due: dict[str, float] = {}  # key → when its folded update goes
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def touch(self, key: str) -> None:
        """The thing changed: update it now, or once at the end of the current window."""
        now = time.monotonic()
        with self._changed:
            if key in self._due:
                return  # the update already scheduled will show this change too
            last = self._last.get(key)
            if last is not None and now - last < self.window:
                self._due[key] = last + self.window
                self._start()
                self._changed.notify()
                return
            self._last[key] = now
            self._forget_old(now)
        self._send(key)

    def flush(self, key: str) -> None:
        """Send the pending update of `key` now, if there is one."""
        with self._changed:
            pending = self._due.pop(key, None) is not None
            if pending:
                self._last[key] = time.monotonic()
        if pending:
            self._send(key)

    def drop(self, key: str) -> None:
        """Forget a pending update: the caller shows the final state itself."""
        with self._changed:
            self._due.pop(key, None)
            self._last[key] = time.monotonic()

    def pending(self) -> int:
        with self._changed:
            return len(self._due)

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="closebot-status", daemon=True)
            self._thread.start()

    def _forget_old(self, now: float) -> None:
        if len(self._last) > 1000:  # keys sent longer ago than the window have nothing to fold
            for key in [k for k, at in self._last.items() if now - at >= self.window]:
                del self._last[key]

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
                self._last[key] = time.monotonic()
            try:
                self._send(key)
            except Exception:  # the next change (or the turn's end) shows the state again
                log.exception("a folded update of %s failed", key)

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

"""Answering a burst once (issue 31): a person who writes in a close's thread gets one answer
of each kind ("waiting on the question above", "only … can steer it", a status) per window
(CLOSEBOT_THREAD_REPLY_SECONDS), not one per message — 5,000 messages while a form waits were
7,500 replies and notices. The messages themselves are still kept for the close to read;
only the answers are spared. The first answer held back in a window is audited, once."""

from __future__ import annotations

import contextlib
import threading
from datetime import datetime, timedelta

from bot.core.config import DEFAULT_THREAD_REPLY_SECONDS
from bot.core.errors import StorageError
from bot.store import Store

MAX_KEPT = 10_000  # windows remembered before the expired ones are forgotten

Key = tuple[str, str, str, str | None]  # thread (channel:ts), person, kind of answer, run


class ReplyWindow:
    """Which thread messages are answered now: the first of each person's burst, per thread
    and kind of answer; the rest of the window is quiet. Windows are timed by the store's
    clock and kept in memory (a second process answers its own first message)."""

    def __init__(self, store: Store, seconds: int = DEFAULT_THREAD_REPLY_SECONDS) -> None:
        self.store = store
        self.seconds = seconds
        self._lock = threading.Lock()
        self._opened: dict[Key, datetime] = {}  # when the window's answered message came
        self._quieted: set[Key] = set()  # windows whose quiet is audited already

    def admit(self, *, run_id: str | None, thread: str, user: str, kind: str) -> bool:
        """Whether to answer this message: yes for the first of a window (which it opens), no
        for the rest of it — the first one held back audited as `thread_replies_quieted`."""
        if self.seconds <= 0:
            return True
        key = (thread, user, kind, run_id)
        now = datetime.fromisoformat(self.store.now())
        with self._lock:
            opened = self._opened.get(key)
            if opened is None or now - opened >= timedelta(seconds=self.seconds):
                if len(self._opened) >= MAX_KEPT:
                    self._forget(now)
                self._opened[key] = now
                self._quieted.discard(key)
                return True
            first_quiet = key not in self._quieted
            self._quieted.add(key)
        if first_quiet:  # a busy database loses only the record; the quiet stands
            with contextlib.suppress(StorageError):
                self.store.audit.record(
                    run_id=run_id,
                    kind="thread_replies_quieted",
                    actor=user or None,
                    detail={
                        "thread": thread,
                        "answer": kind,
                        "window_seconds": self.seconds,
                        "answered_at": opened.isoformat(timespec="milliseconds"),
                    },
                )
        return False

    def _forget(self, now: datetime) -> None:
        """Drop the windows that have passed (call with the lock held)."""
        gone = [k for k, at in self._opened.items() if now - at >= timedelta(seconds=self.seconds)]
        for key in gone:
            del self._opened[key]
            self._quieted.discard(key)

"""Where work runs: a bounded worker pool, one job at a time per key, later jobs queued.

Bolt listeners never run the agent: they parse, authorize, claim and ack, then hand
the work here (through bot/slack_work.py). Jobs with the same key (a run id) are kept
in order and never run in parallel; jobs with different keys share the pool. Nothing
here knows about Slack, the agent or the database.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger(__name__)

Job = Callable[[], None]


class Runner:
    """Per-key serial job queues drained by a shared, bounded thread pool."""

    def __init__(self, *, max_workers: int = 4) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="closebot-turn")
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queues: dict[str, deque[Job]] = {}
        self._closed = False

    def submit(self, key: str, job: Job) -> None:
        """Queue `job` behind earlier jobs with the same key; never drop it."""
        with self._lock:
            if self._closed:
                log.warning("shutting down: job for %s not started (the store keeps the work)", key)
                return
            queue = self._queues.get(key)
            if queue is not None:
                queue.append(job)
                return
            self._queues[key] = deque([job])
        self._pool.submit(self._drain, key)

    def side(self, job: Job) -> None:
        """A small job with no ordering needs (an ephemeral notice)."""
        self.submit(f"side:{uuid.uuid4().hex}", job)

    def busy(self, key: str) -> bool:
        """True while a job with this key is queued or running."""
        with self._lock:
            return key in self._queues

    def _drain(self, key: str) -> None:
        while True:
            with self._lock:
                queue = self._queues[key]
                if not queue:
                    del self._queues[key]
                    self._idle.notify_all()
                    return
                job = queue[0]
            try:
                job()
            except Exception:  # one failed job must not stop the queue behind it
                log.exception("job for %s failed", key)
            with self._lock:
                queue.popleft()

    def wait_idle(self, timeout: float) -> bool:
        """Block until no job is queued or running (tests, shutdown); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._queues, timeout=timeout)

    def shutdown(self, timeout: float = 30.0) -> bool:
        """Drain: let queued jobs finish (up to `timeout`), take no new ones; True if all did."""
        drained = self.wait_idle(timeout)
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        return drained

"""Where work runs: one job at a time per key, later jobs queued; quick jobs on their own pool.

Bolt listeners never run the agent: they parse, authorize, claim and ack, then hand
the work here (through bot/slack/work.py). Jobs with the same key (a run id) are kept
in order and never run in parallel; jobs with different keys share the turn pool, whose
workers spend most of their time waiting on the model. Quick jobs that people are looking
at (a form turning read-only, a thread opening, a private notice) run on a separate pool,
so they never wait behind someone else's model call. Nothing here knows about Slack, the
agent or the database. RetrySchedule says when a run the model API could not answer tries again.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

log = logging.getLogger(__name__)

Job = Callable[[], None]


def _in_context(job: Job) -> Job:
    """`job`, run in a copy of the context it was queued from (once wrapped, kept as is)."""
    if getattr(job, "in_context", False):
        return job
    context = contextvars.copy_context()

    def run() -> None:
        context.run(job)

    run.in_context = True  # type: ignore[attr-defined]
    return run


class Runner:
    """Per-key serial job queues drained by a shared, bounded thread pool."""

    def __init__(
        self, *, max_workers: int = 4, fast_workers: int = 4, slow_io_workers: int = 4
    ) -> None:
        self.turn_workers = max_workers
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="closebot-turn")
        self._fast = ThreadPoolExecutor(
            max_workers=fast_workers, thread_name_prefix="closebot-fast"
        )
        # downloads from outside (a dropped file): their own pool, so however slowly a server
        # answers, no form's read-only update or private notice waits behind them (issue 31)
        self._slow_io = ThreadPoolExecutor(
            max_workers=slow_io_workers, thread_name_prefix="closebot-io"
        )
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queues: dict[str, deque[Job]] = {}
        self._quick_jobs = 0  # fast jobs queued or running
        self._fast_keys: dict[str, int] = {}  # keys of fast jobs queued or running
        self._closed = False
        self._holding = threading.local()
        self._outstanding = 0  # holds not yet released (their jobs still to start)
        # holds released by the starter thread, not the thread that answered the request
        self._to_start: deque[Held] = deque()
        self._start_wanted = threading.Condition(self._lock)
        self._starter: threading.Thread | None = None

    def hold(self) -> Held:
        """Keep the jobs this thread queues inside `with held:` from starting until
        held.release() (once its HTTP answer is on the wire), so an ack never shares the CPU
        and the GIL with the work it has just queued. Until then the runner is not idle."""
        with self._lock:
            self._outstanding += 1
        return Held(self)

    def release_later(self, held: Held) -> None:
        """Start a request's held jobs from the runner's starter thread (issue 33): the
        thread that answered the request goes back to its connection at once, instead of
        handing each job to a pool itself (a pool's submit wakes a worker, which takes the
        GIL from the request thread: 16 % of an ack's time)."""
        with self._lock:
            self._to_start.append(held)
            self._start_wanted.notify()
            if self._starter is None:
                self._starter = threading.Thread(
                    target=self._start_released, name="closebot-starter", daemon=True
                )
                self._starter.start()

    def _start_released(self) -> None:
        while True:
            with self._lock:
                while not self._to_start:
                    self._start_wanted.wait()
                held = self._to_start.popleft()
            try:
                held.release()
            except Exception:  # one request's jobs must not stop the others'
                log.exception("held jobs not started")

    def _released(self, jobs: list[Job]) -> None:
        try:
            for start in jobs:
                start()
        finally:
            with self._lock:
                self._outstanding -= 1
                self._idle.notify_all()

    def _held(self, start: Job) -> bool:
        held: Held | None = getattr(self._holding, "held", None)
        if held is None:
            return False
        held.jobs.append(start)
        return True

    def submit(self, key: str, job: Job) -> None:
        """Queue `job` behind earlier jobs with the same key; never drop it. It runs in a copy
        of the caller's context (the workspace a request acts for: bot/core/tenancy.py)."""
        job = _in_context(job)
        if self._held(partial(self.submit, key, job)):
            return
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
        """A small job with no ordering needs (an ephemeral notice), on the fast pool."""
        self.fast(job)

    def slow_io(self, job: Job) -> None:
        """A job that waits on someone else's server (a file download), on its own pool."""
        self.fast(job, pool=self._slow_io)

    def fast(
        self, job: Job, *, key: str | None = None, pool: ThreadPoolExecutor | None = None
    ) -> None:
        """A quick job on the fast pool: never behind a model call. With a key, busy(key)
        holds while it runs (a job that hands on to submit(key, …) stays busy throughout)."""
        job = _in_context(job)
        if self._held(partial(self.fast, job, key=key, pool=pool)):
            return
        with self._lock:
            if self._closed:
                log.warning("shutting down: a quick job not started")
                return
            self._quick_jobs += 1
            if key is not None:
                self._fast_keys[key] = self._fast_keys.get(key, 0) + 1
        (pool or self._fast).submit(self._run_fast, job, key)

    def _run_fast(self, job: Job, key: str | None) -> None:
        try:
            job()
        except Exception:
            log.exception("quick job failed")
        finally:
            with self._lock:
                self._quick_jobs -= 1
                if key is not None:
                    self._fast_keys[key] -= 1
                    if not self._fast_keys[key]:
                        del self._fast_keys[key]
                self._idle.notify_all()

    def busy(self, key: str) -> bool:
        """True while a job with this key is queued or running."""
        with self._lock:
            return key in self._queues or key in self._fast_keys

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

    def wait_done(self, key: str, timeout: float) -> bool:
        """Block until no job with this key is held, queued or running (tests: one card's
        redraw, while a slow download keeps the runner busy); False on timeout."""
        with self._idle:
            return self._idle.wait_for(
                lambda: (
                    not self._outstanding and key not in self._queues and key not in self._fast_keys
                ),
                timeout=timeout,
            )

    def wait_idle(self, timeout: float) -> bool:
        """Block until no job is queued or running (tests, shutdown); False on timeout."""
        with self._idle:
            return self._idle.wait_for(
                lambda: not self._queues and not self._quick_jobs and not self._outstanding,
                timeout=timeout,
            )

    def shutdown(self, timeout: float = 30.0) -> bool:
        """Drain: let queued jobs finish (up to `timeout`), take no new ones; True if all did."""
        drained = self.wait_idle(timeout)
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._fast.shutdown(wait=False, cancel_futures=True)
        self._slow_io.shutdown(wait=False, cancel_futures=True)
        return drained


class Held:
    """Jobs kept back by Runner.hold(): `with held:` collects them; release() starts them,
    drop() discards them (a duplicate request's). Either happens once; later calls do nothing."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner
        self.jobs: list[Job] = []
        self._done = False
        self._lock = threading.Lock()

    def __enter__(self) -> Held:
        self._runner._holding.held = self
        return self

    def __exit__(self, *exc: object) -> None:
        self._runner._holding.held = None

    def release(self) -> None:
        self._finish(keep=True)

    def drop(self) -> None:
        self._finish(keep=False)

    def _finish(self, *, keep: bool) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            jobs, self.jobs = (self.jobs if keep else []), []
        self._runner._released(jobs)


@dataclass(frozen=True)
class RetrySchedule:
    """When a run whose model call failed for a passing reason (rate limit, overload, a lost
    connection) tries again by itself: base × 2^(try − 1), capped, never sooner than the API
    asked (`retry-after`); after `tries` it fails and waits for a person's Retry."""

    base: timedelta = timedelta(seconds=30)
    cap: timedelta = timedelta(minutes=15)
    tries: int = 8  # 30 s, 1, 2, 4, 8, 15, 15, 15 min: about an hour in all

    def delay(self, attempt: int, retry_after: float | None = None) -> timedelta | None:
        """How long before try `attempt` (1 = the first retry), or None: no more tries."""
        if attempt > self.tries:
            return None
        wait = min(self.base * 2 ** (attempt - 1), self.cap)
        if retry_after:
            wait = max(wait, timedelta(seconds=retry_after))
        return wait

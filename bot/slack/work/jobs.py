"""One job of a run on the runner's per-run queue, done under the run's lease in the store
(so two processes on one database never advance the same run at once), with the thread's
status line saying what it does while it works — set and cleared on the fast pool, never in
the turn's own thread (issue 33), a run's in order, the newest replacing one not yet sent."""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from bot.slack.presenter.debounce import Latest

if TYPE_CHECKING:
    from bot.slack.work import SlackWork

log = logging.getLogger(__name__)


class RunJobs:
    def __init__(self, work: SlackWork) -> None:
        self.work = work
        self._doing: dict[str, str] = {}
        self.lines = Latest(lambda send: work.runner.fast(send))  # status lines, off the turn

    def job(self, run_id: str, what: str, todo: Callable[[], None], *, held: bool = False) -> None:
        """Queue `todo` for the run, done under its lease. `held`: the caller has taken a hold
        of the lease for this job already (handed on, so the run is never unleased between)."""
        work = self.work
        store = work.store

        def job() -> None:
            with store.runs.acting_for(run_id):  # upkeep's jobs too: for the run's workspace
                in_workspace()

        def in_workspace() -> None:
            if work.paused:  # a dead token: nothing to try until it works again
                log.info("run %s: %s waits, Slack %s", run_id, what, work.slack_status)
                if held:
                    store.leases.let_go(run_id, owner=work.owner)
                return
            holder = (
                None if held else store.leases.hold(run_id, owner=work.owner, ttl=work.lease_ttl)
            )
            if holder:
                log.info("run %s: %s left to %s, which holds its lease", run_id, what, holder)
                return
            try:
                self._doing[run_id] = what
                done = threading.Event()
                self.show_working(run_id)
                timer = threading.Thread(  # in this job's context: its workspace
                    target=contextvars.copy_context().run,
                    args=(self._still_working, run_id, done),
                    daemon=True,
                )
                timer.start()
                started = time.monotonic()
                try:
                    todo()
                finally:
                    done.set()
                    self._doing.pop(run_id, None)
                    self.lines.want(run_id, partial(work.presenter.clear_status, run_id))
                log.info(
                    "run %s: %s → %s in %.1f s",
                    run_id,
                    what,
                    store.runs.get(run_id).status,
                    time.monotonic() - started,
                )
            finally:
                store.leases.let_go(run_id, owner=work.owner)

        work.runner.submit(run_id, job)

    def doing(self, run_id: str) -> str:
        """What the run is busy with, in words, for 'I'm in the middle of …'."""
        running = [
            s for s, state in self.work.store.runs.get(run_id).steps.items() if state == "running"
        ]
        step = f"the {running[-1]} step" if running else None
        return step or self._doing.get(run_id) or "the previous step"

    def show_working(self, run_id: str, *, again: bool = False) -> None:
        """The thread's status line (assistant.threads.setStatus) naming what the run does,
        sent on the fast pool: the turn goes on meanwhile."""
        self.lines.want(run_id, partial(self._set_line, run_id, again))

    def _set_line(self, run_id: str, again: bool) -> None:
        try:
            running = [
                s for s, st in self.work.store.runs.get(run_id).steps.items() if st == "running"
            ]
            self.work.presenter.set_status(run_id, running[-1] if running else None, again=again)
        except Exception as e:  # a notice only
            log.warning("run %s: status not shown: %s", run_id, e)

    def _still_working(self, run_id: str, done: threading.Event) -> None:
        """While a turn works, its status is set again before Slack's two minutes clear it."""
        while not done.wait(self.work.still_working_after):
            self.show_working(run_id, again=True)

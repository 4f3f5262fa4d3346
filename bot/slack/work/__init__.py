"""A run's work in Slack, on the runner's queues: open the thread, resume after an answer,
read thread messages, stop, retry — and the watchdog that heals what a failure left behind.

Every job of a run holds the run's lease in the store while it works (jobs.py), so two
processes on one database (an overlapping deploy, `serve` and `closebot resume`) never
advance the same run at once. Opening a thread is opening.py; a run's turns after it began,
turns.py; whatever a failed Slack call leaves undone is found again from the store by the
watchdog (watchdog.py).
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

from bot.agent_loop import AgentLoop, TurnOutcome
from bot.core.runner import Runner
from bot.slack.installations import Installations
from bot.slack.presenter import Clicked, SlackPresenter
from bot.slack.work.jobs import RunJobs
from bot.slack.work.opening import Opening
from bot.slack.work.turns import Turns
from bot.slack.work.watchdog import DAY, Watchdog
from bot.store import Store
from bot.store.leases import lease_owner

__all__ = ["DAY", "SlackWork", "process_owner"]


def process_owner() -> str:
    """This process as a lease owner (see bot/store/leases.py)."""
    return lease_owner("closebot serve")


class SlackWork:
    """What the listeners and the watchdog ask for, as jobs on the runner's per-run queues.

    Its settings (lease_ttl, still_working_after, stuck_after, retry_base, max_attempts)
    are read by its parts when they act, so a change takes effect at once."""

    def __init__(
        self,
        *,
        store: Store,
        loop: AgentLoop,
        presenter: SlackPresenter,
        runner: Runner,
        data_dir: Path | None = None,
        owner: str | None = None,
        lease_ttl: timedelta = timedelta(seconds=90),
        still_working_after: float = 100.0,  # Slack clears a status line after two minutes
        stuck_after: timedelta = timedelta(minutes=2),
        retry_base: timedelta = timedelta(seconds=30),
        max_attempts: int = 5,
    ) -> None:
        self.store = store
        self.loop = loop
        self.presenter = presenter
        self.runner = runner
        self.data_dir = data_dir
        self.owner = owner or process_owner()
        self.lease_ttl = lease_ttl
        self.still_working_after = still_working_after
        self.stuck_after = stuck_after
        self.retry_base = retry_base
        self.max_attempts = max_attempts
        self.slack_status = "ok"  # auth.test passed when the app was built
        self.paused_by: str | None = None  # tokens_revoked / app_uninstalled, until a token works
        # installed in many workspaces (issue 32): their installation store; None: one workspace
        self.installations: Installations | None = None
        self.jobs = RunJobs(self)
        self.opening = Opening(self)
        self.turns = Turns(self)
        self.watchdog = Watchdog(self)

    @property
    def paused(self) -> bool:
        return self.paused_by is not None

    # -- the lease ------------------------------------------------------------

    def hold(self, run_id: str) -> str | None:
        """Take a hold of the run's lease now (inside the transaction that creates the run, so
        it is leased from its first instruction); start_close(held=True) carries it on."""
        return self.store.leases.hold(run_id, owner=self.owner, ttl=self.lease_ttl)

    def let_go(self, run_id: str, *, written: bool = True) -> None:
        self.store.leases.let_go(run_id, owner=self.owner, written=written)

    def doing(self, run_id: str) -> str:
        return self.jobs.doing(run_id)

    # -- what listeners ask for ---------------------------------------------

    def start_close(
        self,
        run_id: str,
        *,
        response_url: str | None = None,
        held: bool = False,
        again: bool = False,
    ) -> None:
        self.opening.start_close(run_id, response_url=response_url, held=held, again=again)

    def answered(self, run_id: str, question_id: str, via: Clicked | None = None) -> None:
        self.turns.answered(run_id, question_id, via)

    def ask_again(self, run_id: str, question_id: str, *, withdrawn: str | None = None) -> None:
        self.turns.ask_again(run_id, question_id, withdrawn=withdrawn)

    def message(self, run_id: str, *, user: str | None, text: str, answer: bool = True) -> None:
        self.turns.message(run_id, user=user, text=text, answer=answer)

    def deliver_held_messages(self, run_id: str, outcome: TurnOutcome | None) -> None:
        self.turns.deliver_held_messages(run_id, outcome)

    def stop(self, run_id: str, *, by: str) -> None:
        self.turns.stop(run_id, by=by)

    def retry(self, run_id: str) -> None:
        self.turns.retry(run_id)

    # -- the watchdog ----------------------------------------------------------

    def expire_due(self) -> list[str]:
        return self.watchdog.expire_due()

    def remind_due(self) -> list[str]:
        return self.watchdog.remind_due()

    def heal(self) -> dict[str, list[str]]:
        return self.watchdog.heal()

    def check_slack(self) -> str:
        return self.watchdog.check_slack()

    def pause_workspace(self, reason: str) -> list[str]:
        return self.watchdog.pause_workspace(reason)

    def watch(self, stop: threading.Event, every: float = 15.0) -> threading.Thread:
        return self.watchdog.watch(stop, every)

    def recover(self) -> list[str]:
        return self.watchdog.recover()

"""The watchdog: every few seconds, deadlines and reminders of open questions, heal()
(a form that never reached Slack, a settled form that still looks live, a run whose model
call waits to be tried again and is due, a run nothing advances — retried with backoff,
failed after max_attempts), the Slack token's health; and
at start-up, recover() continues the runs a stopped process left."""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING

from slack_sdk.errors import SlackApiError

from bot.agent_loop import ask_of
from bot.core.errors import AlreadyAnsweredError
from bot.core.questions import answer_payload, default_responses, has_defaults
from bot.core.tenancy import current
from bot.slack.presenter import slack_error

if TYPE_CHECKING:
    from bot.slack.work import SlackWork

log = logging.getLogger(__name__)

DAY = timedelta(days=1)


class Watchdog:
    def __init__(self, work: SlackWork) -> None:
        self.work = work
        self._attempts: dict[str, int] = {}
        self._next_try: dict[str, str] = {}

    def expire_due(self) -> list[str]:
        """Settle questions past their deadline: the recommended answers, or 'expired'."""
        store = self.work.store
        settled = []
        for record in store.questions.due():
            ask = ask_of(record)
            try:
                if has_defaults(ask):
                    answer = answer_payload(ask, default_responses(ask))
                    store.questions.claim(
                        record.id, answer=answer, answered_by="timeout", source="timeout_default"
                    )
                else:
                    store.questions.expire(record.id)
            except AlreadyAnsweredError:
                continue  # a person got there first
            settled.append(record.id)
            self.work.answered(record.run_id, record.id)
        return settled

    def remind_due(self) -> list[str]:
        """Ping who may answer each question whose reminder time has come; the next one in a day."""
        store = self.work.store
        reminded = []
        for record in store.questions.due_reminders():
            store.questions.set_remind_at(record.id, store.now(after=DAY))
            try:
                with store.runs.acting_for(record.run_id):  # its workspace's token
                    self.work.presenter.remind(record)
            except SlackApiError as e:
                log.warning("question %s: reminder not posted: %s", record.id, slack_error(e))
                continue
            reminded.append(record.id)
        return reminded

    def _due(self, key: str) -> bool:
        """Backoff: whether `key` may be tried again now (30 s, 1 min, 2 min … apart)."""
        return self._next_try.get(key, "") <= self.work.store.now()

    def _tried(self, key: str) -> int:
        attempts = self._attempts.get(key, 0) + 1
        self._attempts[key] = attempts
        self._next_try[key] = self.work.store.now(after=self.work.retry_base * 2 ** (attempts - 1))
        return attempts

    def heal(self) -> dict[str, list[str]]:
        """One watchdog pass: re-post forms that never reached Slack, turn settled forms
        read-only, and resume (or, after max_attempts, fail with a message) runs nothing advances."""
        work = self.work
        store, runner, turns = work.store, work.runner, work.turns
        healed: dict[str, list[str]] = {"forms": [], "settled": [], "runs": [], "failed": []}
        if work.paused:
            return healed  # attempts are not spent on a token Slack took back
        unposted, unsettled = store.questions.forms_to_repair()
        for q in unposted:
            if runner.busy(q.run_id) or not self._due(q.id):
                continue
            self._tried(q.id)
            healed["forms"].append(q.id)
            work.jobs.job(q.run_id, "posting a question", partial(turns.post_form_again, q.id))
        for q in unsettled:
            if runner.busy(q.run_id) or not self._due(q.id):
                continue
            self._tried(q.id)
            healed["settled"].append(q.id)
            # no lease needed, and never behind the run's turn; for the run's workspace
            with store.runs.acting_for(q.run_id):
                runner.fast(partial(turns.settle_form_again, q.id))
        for run in store.runs.due_retries():  # the model API could not answer: try again now
            if runner.busy(run.id):
                continue
            healed["runs"].append(run.id)
            work.jobs.job(run.id, "retrying the model", partial(turns.resume, run.id))
        for run in store.runs.stuck(idle_for=work.stuck_after):
            if runner.busy(run.id) or not self._due(run.id) or work.loop.parked(run.id):
                continue  # (a run parked on questions put off waits for Decide, not for us)
            if self._tried(run.id) > work.max_attempts:
                healed["failed"].append(run.id)
                with store.runs.acting_for(run.id):
                    work.loop.fail(
                        run.id,
                        f"I could not continue this close after {work.max_attempts} attempts "
                        "(Slack or the model kept failing)",
                    )
                continue
            healed["runs"].append(run.id)
            if not run.status_ts:
                work.start_close(run.id, again=True)
            else:
                work.jobs.job(run.id, "resuming", partial(turns.resume, run.id))
        if any(healed.values()):
            log.info("watchdog: %s", {k: v for k, v in healed.items() if v})
        return healed

    def check_slack(self) -> str:
        work = self.work
        status = work.presenter.slack_auth()
        if work.paused_by and status == "ok":
            log.info(
                "Slack takes the token again (after %s): the paused runs continue", work.paused_by
            )
            work.paused_by = None
            work.presenter.revoke(None)
            work.slack_status = status
            self.recover()
        elif not work.paused_by:
            work.slack_status = status
        return work.slack_status

    def pause_workspace(self, reason: str) -> list[str]:
        """Slack took the token back (tokens_revoked, app_uninstalled): no run's work is tried
        until a token works again (the watchdog's auth.test), and healthz says why. Each live
        run records the pause in its audit trail; its state is kept as it was.

        Installed in many workspaces, only the workspace that took it back pauses: its
        tokens are deleted from the installation store, its runs wait (a reinstall brings
        them back), and the process stays healthy for the others."""
        work = self.work
        tenant = current()
        if work.installations is not None and tenant is not None:
            work.installations.uninstalled(tenant)
            paused = self._audit_paused(reason)  # the store reaches this workspace's runs only
            log.warning("workspace %s: Slack %s: %d run(s) wait", tenant, reason, len(paused))
            return paused
        work.slack_status = work.paused_by = reason
        work.presenter.revoke(reason)  # no call goes out with the dead token
        paused = self._audit_paused(reason)
        log.warning("Slack %s: %d run(s) paused until a token works again", reason, len(paused))
        return paused

    def _audit_paused(self, reason: str) -> list[str]:
        """Each live Slack run records the pause in its audit trail."""
        work = self.work
        paused = []
        for run in work.store.runs.with_status("running", "waiting"):
            if run.mode != "slack":
                continue
            work.store.audit.record(
                run_id=run.id, kind="paused", actor=None, detail={"reason": reason}
            )
            paused.append(run.id)
        return paused

    def watch(self, stop: threading.Event, every: float = 15.0) -> threading.Thread:
        """The watchdog thread: deadlines, reminders, heal(), Slack auth — every `every` seconds."""
        work = self.work
        store = work.store

        def watch() -> None:
            while not stop.wait(every):
                if store.newer_schema():
                    continue  # a newer closebot migrated the database: it does this work now
                for name, step in (
                    ("leases", lambda: store.leases.renew(owner=work.owner, ttl=work.lease_ttl)),
                    # a killed `closebot resume` (or another server) on this host: at once
                    ("dead leases", store.leases.reclaim_dead),
                    ("deadlines", work.expire_due),
                    ("reminders", work.remind_due),
                    ("heal", work.heal),
                    ("plans", work.presenter.draw_owed_plans),  # status.PLAN_GAP
                    ("slack", work.check_slack),
                    ("sightings", lambda: store.replay.forget_sightings(older_than=DAY)),
                ):
                    try:
                        step()
                    except Exception:
                        log.exception("watchdog: %s failed", name)

        thread = threading.Thread(target=watch, name="closebot-watchdog", daemon=True)
        thread.start()
        return thread

    def recover(self) -> list[str]:
        """At start-up: continue runs that were mid-turn when the process stopped; their ids."""
        work = self.work
        store, turns = work.store, work.turns
        recovered = []
        reclaimed = store.leases.reclaim_dead()  # ours from before a crash: free at once
        if reclaimed:
            log.info("reclaimed the leases a stopped process left on %s", ", ".join(reclaimed))
        for run in store.runs.with_status("running", "waiting"):
            if not run.channel or run.mode != "slack":
                continue  # a console run: `closebot resume` continues it
            if store.leases.holder(run.id):
                continue  # another process is advancing it
            if not run.status_ts:  # stopped before its thread was (fully) opened
                recovered.append(run.id)
                work.start_close(run.id, again=True)
                continue
            pending = store.questions.pending(run.id)
            if pending is not None:
                if pending.message_ts is None:  # the process stopped before its form was posted
                    work.jobs.job(
                        run.id, "posting a question", partial(turns.post_form_again, pending.id)
                    )
                continue  # its form still works: answers resolve through the store
            if work.loop.parked(run.id):
                continue  # it waits on questions put off: Decide brings them back
            if run.retry_at and run.retry_at > store.now():
                continue  # it waits to retry the model: heal() continues it on schedule
            recovered.append(run.id)
            work.jobs.job(run.id, "resuming", partial(turns.resume, run.id))
        if recovered:
            log.info("recovering %d run(s): %s", len(recovered), ", ".join(recovered))
        return recovered

"""A run's work in Slack, on the runner's queues: open the thread, resume after an answer,
read thread messages, stop, retry — and the watchdog that heals what a failure left behind.

Every job of a run holds the run's lease in the store while it works, so two processes on
one database (an overlapping deploy, `serve` and `closebot resume`) never advance the same
run at once. Whatever a failed Slack call leaves undone is found again from the store by
heal(): a form that never reached Slack, a settled form that still looks live, a run that
nothing advances.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path

from slack_sdk.errors import SlackApiError

from bot.agent_loop import AgentLoop, Failed, Paused, Stopped, TurnOutcome, ask_of
from bot.close.prompts import start_prompt
from bot.core.errors import AlreadyAnsweredError
from bot.core.questions import answer_payload, default_responses, has_defaults
from bot.core.runner import Runner
from bot.slack.presenter import CANNOT_POST, SlackPresenter, slack_error
from bot.store import Store
from bot.store.leases import lease_owner

log = logging.getLogger(__name__)

DAY = timedelta(days=1)


def process_owner() -> str:
    """This process as a lease owner (see bot/store/leases.py)."""
    return lease_owner("closebot serve")


class SlackWork:
    """What the listeners and the watchdog ask for, as jobs on the runner's per-run queues."""

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
        still_working_after: float = 45.0,
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
        self._doing: dict[str, str] = {}
        self._attempts: dict[str, int] = {}
        self._next_try: dict[str, str] = {}

    # -- one job of a run, under its lease -----------------------------------

    def _job(self, run_id: str, what: str, work: Callable[[], None], *, held: bool = False) -> None:
        """Queue `work` for the run, done under its lease. `held`: the caller has taken a hold
        of the lease for this job already (handed on, so the run is never unleased between)."""

        def job() -> None:
            if self.paused:  # a dead token: nothing to try until it works again
                log.info("run %s: %s waits, Slack %s", run_id, what, self.slack_status)
                if held:
                    self.store.let_go(run_id, owner=self.owner)
                return
            holder = (
                None
                if held
                else self.store.hold_lease(run_id, owner=self.owner, ttl=self.lease_ttl)
            )
            if holder:
                log.info("run %s: %s left to %s, which holds its lease", run_id, what, holder)
                return
            try:
                self._doing[run_id] = what
                done = threading.Event()
                self._show_working(run_id)
                timer = threading.Thread(
                    target=self._still_working, args=(run_id, done), daemon=True
                )
                timer.start()
                started = time.monotonic()
                try:
                    work()
                finally:
                    done.set()
                    self._doing.pop(run_id, None)
                    self.presenter.clear_status(run_id)
                log.info(
                    "run %s: %s → %s in %.1f s",
                    run_id,
                    what,
                    self.store.run(run_id).status,
                    time.monotonic() - started,
                )
            finally:
                self.store.let_go(run_id, owner=self.owner)

        self.runner.submit(run_id, job)

    def doing(self, run_id: str) -> str:
        """What the run is busy with, in words, for 'I'm in the middle of …'."""
        running = [s for s, state in self.store.run(run_id).steps.items() if state == "running"]
        step = f"the {running[-1]} step" if running else None
        return step or self._doing.get(run_id) or "the previous step"

    def _show_working(self, run_id: str) -> None:
        """The thread's status line (assistant.threads.setStatus) naming what the run does."""
        try:
            running = [s for s, st in self.store.run(run_id).steps.items() if st == "running"]
            self.presenter.set_status(run_id, running[-1] if running else None)
        except Exception as e:  # a notice only
            log.warning("run %s: status not shown: %s", run_id, e)

    def _still_working(self, run_id: str, done: threading.Event) -> None:
        """While a turn works, its status is set again before Slack's two minutes clear it."""
        while not done.wait(self.still_working_after):
            self._show_working(run_id)

    # -- what listeners ask for ---------------------------------------------

    def hold(self, run_id: str) -> str | None:
        """Take a hold of the run's lease now (inside the transaction that creates the run, so
        it is leased from its first instruction); start_close(held=True) carries it on."""
        return self.store.hold_lease(run_id, owner=self.owner, ttl=self.lease_ttl)

    def let_go(self, run_id: str, *, written: bool = True) -> None:
        self.store.let_go(run_id, owner=self.owner, written=written)

    def start_close(
        self,
        run_id: str,
        *,
        response_url: str | None = None,
        held: bool = False,
        again: bool = False,
    ) -> None:
        """Open the run's thread in Slack and begin the close (or carry on, if it had begun).

        The thread opens on the runner's fast pool, so a new close shows at once however
        many turns are waiting on the model; the turn itself then queues as usual. The
        run's lease is held throughout: from `hold()` (`held`) or taken here, and handed
        from the opening to the turn. `again`: a retry or recovery, which first looks for
        a root message already posted.
        """

        def open_thread() -> None:
            holder = None if held else self.hold(run_id)
            if holder:
                log.info("run %s: opening left to %s, which holds its lease", run_id, holder)
                return
            try:
                try:
                    self.presenter.open_thread(run_id, again=again)
                except SlackApiError as e:
                    code = slack_error(e)
                    if code in CANNOT_POST:
                        self._fail_unposted(run_id, code, response_url)
                        return
                    log.warning(
                        "run %s: thread not opened (%s); the watchdog tries again", run_id, code
                    )
                    return
                self.hold(run_id)  # one more hold, handed to the turn's job
                self._job(run_id, "starting the close", begin, held=True)
            finally:
                self.store.let_go(run_id, owner=self.owner)

        def begin() -> None:
            run = self.store.run(run_id)  # its data is checked by the close's first step
            if self.store.messages(run_id):
                if run.status not in ("running", "waiting") or self.store.pending_question(run_id):
                    return  # begun elsewhere already, and not stuck
                outcome = self.loop.advance(run_id)
            else:
                outcome = self.loop.start(run_id, start_prompt(run.period))
            self.deliver_held_messages(run_id, outcome)

        self.runner.fast(open_thread, key=run_id)

    def _fail_unposted(self, run_id: str, code: str, response_url: str | None) -> None:
        run = self.store.run(run_id)
        self.store.set_run_status(run_id, "failed", error=f"could not post in the channel: {code}")
        self.presenter.respond(response_url, CANNOT_POST[code], [run.started_by or ""])
        log.warning("run %s: cannot post in %s (%s); the run is closed", run_id, run.channel, code)

    def answered(self, run_id: str, question_id: str) -> None:
        """A form was settled (answered or cancelled): show it read-only, then go on.

        A failed chat.update never holds the run up: the form is remembered as still
        looking live, and heal() updates it later.
        """

        # The form turns read-only on the fast pool: at once, even while every turn worker
        # waits on the model. The turn continues in the run's queue.
        if not self.paused:  # else turned read-only when the runs continue (recover → _resume)
            self.runner.fast(partial(self._settle_form_again, question_id))
        self._job(
            run_id,
            "continuing after the answer",
            lambda: self.deliver_held_messages(run_id, self.loop.advance(run_id)),
        )

    def ask_again(self, run_id: str, question_id: str, *, withdrawn: str | None = None) -> None:
        """A question brought back (Decide) or a decision asked again (Change a decision):
        post its fresh form; a withdrawn approval turns read-only. The run goes on when it is
        answered (answered())."""

        def work() -> None:
            if withdrawn:
                self.presenter.settle_form(withdrawn)
            record = self.store.question(question_id)
            if record.status == "pending" and record.message_ts is None:
                self.presenter.post_form(record)
            self.presenter.update_status(run_id)

        self._job(run_id, "asking again", work)

    def message(self, run_id: str, *, user: str | None, text: str) -> None:
        """A person wrote in the run's thread: kept in the store at once, read when the run is free."""
        self.store.hold_message(run_id, user=user, text=text)
        self._extend(run_id, user)
        self.runner.fast(partial(self.presenter.note_message, run_id))  # an approval says so
        if self.runner.busy(run_id):
            what = self.doing(run_id)
            self.runner.side(
                lambda: self.presenter.say(
                    run_id, f"I'm in the middle of {what} — I'll read this when that's done."
                )
            )
        self._job(run_id, "reading your message", lambda: self._deliver(run_id))

    def _extend(self, run_id: str, user: str | None) -> None:
        """A message from someone who may answer gives a timed question its full wait again
        (seed 001: typing pauses the countdown); the form shows the new deadline."""
        pending = self.store.pending_question(run_id)
        if pending is None or not pending.expires_at:
            return
        wait = self.loop.question_wait(ask_of(pending))
        if wait and self.store.extend_question(pending.id, self.store.now(after=wait), by=user):
            self.runner.side(lambda: self.presenter.refresh_form(pending.id))

    def _deliver(self, run_id: str) -> None:
        run = self.store.run(run_id)
        if run.status == "cancelled":
            who = f" by <@{run.stop_requested_by}>" if run.stop_requested_by else ""
            self.presenter.post(
                run_id, f"This close was stopped{who}; start a new one with `/close`."
            )
            return
        pending = self.store.pending_question(run_id)
        if pending is not None:
            if pending.message_ts is None:  # its form never reached Slack: post it now
                self.presenter.post_form(pending, again=True)
                return
            self.presenter.post(
                run_id,
                "I'm waiting on the question above; I'll read your message as soon as it is answered.",
            )
            return
        # An unfinished turn (a failure, a crash, an answer not yet resumed) is completed first.
        unfinished = run.status in ("failed", "running", "waiting")
        self.deliver_held_messages(run_id, self.loop.advance(run_id) if unfinished else None)

    def deliver_held_messages(self, run_id: str, outcome: TurnOutcome | None) -> None:
        """After a turn that finished, hand over the messages held meanwhile.

        A pause keeps them for after the answer; a failure keeps them for the retry; a run
        in the middle of a turn keeps them until the turn is done — none is ever dropped.
        """
        while not isinstance(outcome, (Paused, Failed, Stopped)):
            if not self.loop.can_hear(run_id):
                return
            held = self.store.take_messages(run_id)
            if not held:
                return
            said = "\n\n".join(
                f"<@{m['user']}>: {m['text']}" if m["user"] else m["text"] for m in held
            )
            outcome = self.loop.say(run_id, said)

    def stop(self, run_id: str, *, by: str) -> None:
        """Stop: the turn in flight ends at its next step boundary; open questions are cancelled."""
        self.store.request_stop(run_id, by=by)

        def work() -> None:
            if self.store.run(run_id).status in ("running", "waiting"):
                self.loop.stop(run_id, by)

        self._job(run_id, "stopping", work)

    def retry(self, run_id: str) -> None:
        """Continue a failed run from where it stopped."""

        def work() -> None:
            run = self.store.run(run_id)
            if run.status != "failed":
                return
            if not run.status_ts:
                self.presenter.open_thread(run_id)
            self.deliver_held_messages(run_id, self.loop.advance(run_id))

        self._job(run_id, "retrying", work)

    # -- deadlines, reminders and the watchdog --------------------------------

    def expire_due(self) -> list[str]:
        """Settle questions past their deadline: the recommended answers, or 'expired'."""
        settled = []
        for record in self.store.due_questions():
            ask = ask_of(record)
            try:
                if has_defaults(ask):
                    answer = answer_payload(ask, default_responses(ask))
                    self.store.claim_answer(
                        record.id, answer=answer, answered_by="timeout", source="timeout_default"
                    )
                else:
                    self.store.expire_question(record.id)
            except AlreadyAnsweredError:
                continue  # a person got there first
            settled.append(record.id)
            self.answered(record.run_id, record.id)
        return settled

    def remind_due(self) -> list[str]:
        """Ping who may answer each question whose reminder time has come; the next one in a day."""
        reminded = []
        for record in self.store.due_reminders():
            self.store.set_remind_at(record.id, self.store.now(after=DAY))
            try:
                self.presenter.remind(record)
            except SlackApiError as e:
                log.warning("question %s: reminder not posted: %s", record.id, slack_error(e))
                continue
            reminded.append(record.id)
        return reminded

    def _due(self, key: str) -> bool:
        """Backoff: whether `key` may be tried again now (30 s, 1 min, 2 min … apart)."""
        return self._next_try.get(key, "") <= self.store.now()

    def _tried(self, key: str) -> int:
        attempts = self._attempts.get(key, 0) + 1
        self._attempts[key] = attempts
        self._next_try[key] = self.store.now(after=self.retry_base * 2 ** (attempts - 1))
        return attempts

    def heal(self) -> dict[str, list[str]]:
        """One watchdog pass: re-post forms that never reached Slack, turn settled forms
        read-only, and resume (or, after max_attempts, fail with a message) runs nothing advances."""
        healed: dict[str, list[str]] = {"forms": [], "settled": [], "runs": [], "failed": []}
        if self.paused:
            return healed  # attempts are not spent on a token Slack took back
        unposted, unsettled = self.store.forms_to_repair()
        for q in unposted:
            if self.runner.busy(q.run_id) or not self._due(q.id):
                continue
            self._tried(q.id)
            healed["forms"].append(q.id)
            self._job(q.run_id, "posting a question", partial(self._post_form_again, q.id))
        for q in unsettled:
            if self.runner.busy(q.run_id) or not self._due(q.id):
                continue
            self._tried(q.id)
            healed["settled"].append(q.id)
            # no lease needed, and never behind the run's turn
            self.runner.fast(partial(self._settle_form_again, q.id))
        for run in self.store.stuck_runs(idle_for=self.stuck_after):
            if self.runner.busy(run.id) or not self._due(run.id) or self.loop.parked(run.id):
                continue  # (a run parked on questions put off waits for Decide, not for us)
            if self._tried(run.id) > self.max_attempts:
                healed["failed"].append(run.id)
                self.loop.fail(
                    run.id,
                    f"I could not continue this close after {self.max_attempts} attempts "
                    "(Slack or the model kept failing)",
                )
                continue
            healed["runs"].append(run.id)
            if not run.status_ts:
                self.start_close(run.id, again=True)
            else:
                self._job(run.id, "resuming", partial(self._resume, run.id))
        if any(healed.values()):
            log.info("watchdog: %s", {k: v for k, v in healed.items() if v})
        return healed

    def _settle_form_again(self, question_id: str) -> None:
        self.presenter.settle_form(question_id)

    def _post_form_again(self, question_id: str) -> None:
        record = self.store.question(question_id)
        if record.status == "pending" and record.message_ts is None:
            self.presenter.post_form(record, again=True)

    def check_slack(self) -> str:
        status = self.presenter.slack_auth()
        if self.paused_by and status == "ok":
            log.info(
                "Slack takes the token again (after %s): the paused runs continue", self.paused_by
            )
            self.paused_by = None
            self.slack_status = status
            self.recover()
        elif not self.paused_by:
            self.slack_status = status
        return self.slack_status

    def pause_workspace(self, reason: str) -> list[str]:
        """Slack took the token back (tokens_revoked, app_uninstalled): no run's work is tried
        until a token works again (the watchdog's auth.test), and healthz says why. Each live
        run records the pause in its audit trail; its state is kept as it was."""
        self.slack_status = self.paused_by = reason
        paused = []
        for run in self.store.runs_with_status("running", "waiting"):
            if run.mode != "slack":
                continue
            self.store.audit(run_id=run.id, kind="paused", actor=None, detail={"reason": reason})
            paused.append(run.id)
        log.warning("Slack %s: %d run(s) paused until a token works again", reason, len(paused))
        return paused

    @property
    def paused(self) -> bool:
        return self.paused_by is not None

    def watch(self, stop: threading.Event, every: float = 15.0) -> threading.Thread:
        """The watchdog thread: deadlines, reminders, heal(), Slack auth — every `every` seconds."""

        def watch() -> None:
            while not stop.wait(every):
                if self.store.newer_schema():
                    continue  # a newer closebot migrated the database: it does this work now
                for name, step in (
                    (
                        "leases",
                        lambda: self.store.renew_leases(owner=self.owner, ttl=self.lease_ttl),
                    ),
                    # a killed `closebot resume` (or another server) on this host: at once
                    ("dead leases", self.store.reclaim_dead_leases),
                    ("deadlines", self.expire_due),
                    ("reminders", self.remind_due),
                    ("heal", self.heal),
                    ("slack", self.check_slack),
                    ("sightings", lambda: self.store.forget_sightings(older_than=DAY)),
                ):
                    try:
                        step()
                    except Exception:
                        log.exception("watchdog: %s failed", name)

        thread = threading.Thread(target=watch, name="closebot-watchdog", daemon=True)
        thread.start()
        return thread

    def _resume(self, run_id: str) -> None:
        run = self.store.run(run_id)
        if run.status not in ("running", "waiting") or self.store.pending_question(run_id):
            return  # another process (or an earlier job) already moved it on
        for q in self.store.questions(run_id):
            # The process may have stopped between the claim and turning the form read-only.
            if q.status != "pending" and q.message_ts and not q.settled_shown_at:
                self.presenter.settle_form(q.id)
        self.deliver_held_messages(run_id, self.loop.advance(run_id))

    def recover(self) -> list[str]:
        """At start-up: continue runs that were mid-turn when the process stopped; their ids."""
        recovered = []
        reclaimed = self.store.reclaim_dead_leases()  # ours from before a crash: free at once
        if reclaimed:
            log.info("reclaimed the leases a stopped process left on %s", ", ".join(reclaimed))
        for run in self.store.runs_with_status("running", "waiting"):
            if not run.channel or run.mode != "slack":
                continue  # a console run: `closebot resume` continues it
            if self.store.lease_holder(run.id):
                continue  # another process is advancing it
            if not run.status_ts:  # stopped before its thread was (fully) opened
                recovered.append(run.id)
                self.start_close(run.id, again=True)
                continue
            pending = self.store.pending_question(run.id)
            if pending is not None:
                if pending.message_ts is None:  # the process stopped before its form was posted
                    self._job(
                        run.id, "posting a question", partial(self._post_form_again, pending.id)
                    )
                continue  # its form still works: answers resolve through the store
            if self.loop.parked(run.id):
                continue  # it waits on questions put off: Decide brings them back
            recovered.append(run.id)
            self._job(run.id, "resuming", partial(self._resume, run.id))
        if recovered:
            log.info("recovering %d run(s): %s", len(recovered), ", ".join(recovered))
        return recovered

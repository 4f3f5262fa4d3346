"""A run's turns after it began: resumed after an answer, a question asked again, a thread
message kept and read when the run is free, stop and retry. Messages held while a turn
works are handed over after it — none is ever dropped."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from bot.agent_loop import Failed, Paused, Retrying, Stopped, TurnOutcome, ask_of
from bot.slack.presenter import Clicked

if TYPE_CHECKING:
    from bot.slack.work import SlackWork

log = logging.getLogger(__name__)


class Turns:
    def __init__(self, work: SlackWork) -> None:
        self.work = work
        self._queued: set[tuple[str, str]] = set()  # (run, job) queued and not started yet
        self._queued_lock = threading.Lock()

    def answered(self, run_id: str, question_id: str, via: Clicked | None = None) -> None:
        """A form was settled (answered or cancelled): show it read-only, then go on. The copy
        answered on (`via`, the interaction) is replaced through its response_url.

        A failed chat.update never holds the run up: the form is remembered as still
        looking live, and heal() updates it later.
        """
        work = self.work
        # The form turns read-only on the fast pool: at once, even while every turn worker
        # waits on the model. The turn continues in the run's queue.
        if not work.paused:  # else turned read-only when the runs continue (recover → resume)
            work.runner.fast(partial(self.settle_form_again, question_id, via))
        work.jobs.job(
            run_id,
            "continuing after the answer",
            lambda: self.deliver_held_messages(run_id, work.loop.advance(run_id)),
        )

    def ask_again(self, run_id: str, question_id: str, *, withdrawn: str | None = None) -> None:
        """A question brought back (Decide) or a decision asked again (Change a decision):
        post its fresh form; a withdrawn approval turns read-only. The run goes on when it is
        answered (answered())."""
        work = self.work

        def todo() -> None:
            if withdrawn:
                work.presenter.settle_form(withdrawn)
            record = work.store.questions.get(question_id)
            if record.status == "pending" and record.message_ts is None:
                work.presenter.post_form(record)
            work.presenter.update_status(run_id)

        work.jobs.job(run_id, "asking again", todo)

    def message(self, run_id: str, *, user: str | None, text: str, answer: bool = True) -> None:
        """A person wrote in the run's thread: kept in the store at once, read when the run is
        free. `answer` False: a message of a burst already answered (issue 31) — kept and read
        the same, but not answered again; and a flood queues one delivery, not one each."""
        work = self.work
        work.store.inbox.hold(run_id, user=user, text=text)
        if answer:  # typing gives a timed question its wait again: once per burst is enough
            self._extend(run_id, user)
        if self._queue_once(run_id, "note"):
            work.runner.fast(partial(self._once, run_id, "note", work.presenter.note_message))
        if answer and work.runner.busy(run_id):
            what = work.jobs.doing(run_id)
            work.runner.side(
                lambda: work.presenter.say(
                    run_id, f"I'm in the middle of {what} — I'll read this when that's done."
                )
            )
        if self._queue_once(run_id, "deliver") or answer:
            work.jobs.job(
                run_id,
                "reading your message",
                partial(self._once, run_id, "deliver", partial(self._deliver, answer=answer)),
            )

    def _queue_once(self, run_id: str, what: str) -> bool:
        """Whether no `what` job of the run waits to start (and now one does): a job that has
        not started yet reads every message held so far, so one queued is enough."""
        with self._queued_lock:
            if (run_id, what) in self._queued:
                return False
            self._queued.add((run_id, what))
            return True

    def _once(self, run_id: str, what: str, todo: Callable[[str], None]) -> None:
        with self._queued_lock:  # started: a message held from now on queues another
            self._queued.discard((run_id, what))
        todo(run_id)

    def _extend(self, run_id: str, user: str | None) -> None:
        """A message from someone who may answer gives a timed question its full wait again
        (seed 001: typing pauses the countdown); the form shows the new deadline."""
        work = self.work
        pending = work.store.questions.pending(run_id)
        if pending is None or not pending.expires_at:
            return
        wait = work.loop.question_wait(ask_of(pending))
        if wait and work.store.questions.extend(pending.id, work.store.now(after=wait), by=user):
            work.runner.side(lambda: work.presenter.refresh_form(pending.id))

    def _deliver(self, run_id: str, *, answer: bool = True) -> None:
        work = self.work
        run = work.store.runs.get(run_id)
        if run.status == "cancelled":
            who = f" by <@{run.stop_requested_by}>" if run.stop_requested_by else ""
            if answer:
                work.presenter.post(
                    run_id, f"This close was stopped{who}; start a new one with `/close`."
                )
            return
        pending = work.store.questions.pending(run_id)
        if pending is not None:
            if pending.message_ts is None:  # its form never reached Slack: post it now
                work.presenter.post_form(pending, again=True)
                return
            if answer:
                work.presenter.post(
                    run_id,
                    "I'm waiting on the question above; I'll read your message as soon as it is answered.",
                )
            return
        # An unfinished turn (a failure, a crash, an answer not yet resumed) is completed first.
        unfinished = run.status in ("failed", "running", "waiting")
        self.deliver_held_messages(run_id, work.loop.advance(run_id) if unfinished else None)

    def deliver_held_messages(self, run_id: str, outcome: TurnOutcome | None) -> None:
        """After a turn that finished, hand over the messages held meanwhile.

        A pause keeps them for after the answer; a failure (or a wait to retry) keeps them
        for the retry; a run
        in the middle of a turn keeps them until the turn is done — none is ever dropped.
        """
        loop, store = self.work.loop, self.work.store
        while not isinstance(outcome, (Paused, Failed, Stopped, Retrying)):
            if not loop.can_hear(run_id):
                return
            held = store.inbox.take(run_id)
            if not held:
                return
            said = "\n\n".join(
                f"<@{m['user']}>: {m['text']}" if m["user"] else m["text"] for m in held
            )
            outcome = loop.say(run_id, said)

    def stop(self, run_id: str, *, by: str) -> None:
        """Stop: the turn in flight ends at its next step boundary; open questions are cancelled."""
        work = self.work
        work.store.runs.request_stop(run_id, by=by)

        def todo() -> None:
            if work.store.runs.get(run_id).status in ("running", "waiting"):
                work.loop.stop(run_id, by)

        work.jobs.job(run_id, "stopping", todo)

    def retry(self, run_id: str) -> None:
        """Continue a failed run from where it stopped."""
        work = self.work

        def todo() -> None:
            run = work.store.runs.get(run_id)
            if run.status != "failed":
                return
            if not run.status_ts:
                work.presenter.open_thread(run_id)
            self.deliver_held_messages(run_id, work.loop.advance(run_id))

        work.jobs.job(run_id, "retrying", todo)

    def resume(self, run_id: str) -> None:
        """Carry on a run nothing advances (after a restart, or found stuck)."""
        work = self.work
        run = work.store.runs.get(run_id)
        if run.status not in ("running", "waiting") or work.store.questions.pending(run_id):
            return  # another process (or an earlier job) already moved it on
        for q in work.store.questions.of_run(run_id):
            # The process may have stopped between the claim and turning the form read-only.
            if q.status != "pending" and q.message_ts and not q.settled_shown_at:
                work.presenter.settle_form(q.id)
        self.deliver_held_messages(run_id, work.loop.advance(run_id))

    def settle_form_again(self, question_id: str, via: Clicked | None = None) -> None:
        self.work.presenter.settle_form(question_id, via)

    def post_form_again(self, question_id: str) -> None:
        record = self.work.store.questions.get(question_id)
        if record.status == "pending" and record.message_ts is None:
            self.work.presenter.post_form(record, again=True)

"""Where turns run: a bounded worker pool, one turn at a time per run, later work queued.

Bolt listeners never run the agent: they parse, authorize, claim and ack, then hand
the work here. Jobs for the same run are kept in order and never run in parallel;
jobs for different runs share the pool. On start-up, recover() continues runs that
were mid-turn when the process died.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from bot.agent_loop import AgentLoop, Failed, Paused, TurnOutcome, ask_of
from bot.close.prompts import start_prompt
from bot.errors import AlreadyAnsweredError
from bot.questions import answer_payload, default_responses, has_defaults
from bot.slack_presenter import SlackPresenter
from bot.store import Store

log = logging.getLogger(__name__)

Job = Callable[[], None]


class Runner:
    """Per-run serial job queues drained by a shared, bounded thread pool."""

    def __init__(
        self, *, store: Store, loop: AgentLoop, presenter: SlackPresenter, max_workers: int = 4
    ) -> None:
        self.store = store
        self.loop = loop
        self.presenter = presenter
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="closebot-turn")
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queues: dict[str, deque[Job]] = {}

    # -- scheduling ------------------------------------------------------

    def submit(self, key: str, job: Job) -> None:
        """Queue `job` behind earlier jobs with the same key; never drop it."""
        with self._lock:
            queue = self._queues.get(key)
            if queue is not None:
                queue.append(job)
                return
            self._queues[key] = deque([job])
        self._pool.submit(self._drain, key)

    def side(self, job: Job) -> None:
        """A small job with no ordering needs (an ephemeral notice)."""
        self.submit(f"side:{uuid.uuid4().hex}", job)

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

    def shutdown(self, timeout: float = 30.0) -> None:
        self.wait_idle(timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- the work --------------------------------------------------------

    def start_close(self, run_id: str) -> None:
        """Open the run's thread in Slack and begin the close."""

        def job() -> None:
            run = self.presenter.open_thread(run_id)
            self._then(run_id, self.loop.start(run_id, start_prompt(run.period)))

        self.submit(run_id, job)

    def answered(self, run_id: str, question_id: str) -> None:
        """A form was settled (answered or cancelled): show it read-only, then go on."""

        def job() -> None:
            self.presenter.settle_form(question_id)
            self._then(run_id, self.loop.advance(run_id))

        self.submit(run_id, job)

    def message(self, run_id: str, *, user: str | None, text: str) -> None:
        """A person wrote in the run's thread: the agent reads it when the run is free."""

        def job() -> None:
            self.store.hold_message(run_id, user=user, text=text)
            if self.store.pending_question(run_id) is not None:
                self.presenter.post(
                    run_id,
                    "I'm waiting on the question above; I'll read your message as soon as it is answered.",
                )
                return
            # An unfinished turn (a failure, or a crash) is completed before the message is read.
            unfinished = self.store.run(run_id).status in ("failed", "running")
            self._then(run_id, self.loop.advance(run_id) if unfinished else None)

        self.submit(run_id, job)

    def _then(self, run_id: str, outcome: TurnOutcome | None) -> None:
        """After a turn that finished, hand over the messages held meanwhile.

        A pause keeps them for after the answer; a failure keeps them for the retry.
        """
        while not isinstance(outcome, (Paused, Failed)):
            held = self.store.take_messages(run_id)
            if not held:
                return
            said = "\n\n".join(
                f"<@{m['user']}>: {m['text']}" if m["user"] else m["text"] for m in held
            )
            outcome = self.loop.say(run_id, said)

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

    def watch_deadlines(self, stop: threading.Event, every: float = 30.0) -> threading.Thread:
        """A thread that calls expire_due() every `every` seconds until `stop` is set."""

        def watch() -> None:
            while not stop.wait(every):
                try:
                    self.expire_due()
                except Exception:
                    log.exception("checking question deadlines failed")

        thread = threading.Thread(target=watch, name="closebot-deadlines", daemon=True)
        thread.start()
        return thread

    def _resume(self, run_id: str) -> None:
        settled = [q for q in self.store.questions(run_id) if q.status != "pending"]
        if settled:
            # The process may have stopped between the claim and turning the form read-only.
            self.presenter.settle_form(settled[-1].id)
        self._then(run_id, self.loop.advance(run_id))

    def recover(self) -> list[str]:
        """Continue runs that were mid-turn when the process stopped; their ids."""
        recovered = []
        for run in self.store.runs_with_status("running", "waiting"):
            if not run.thread_ts:
                continue  # never reached Slack; nothing to continue in
            pending = self.store.pending_question(run.id)
            if pending is not None:
                if pending.message_ts is None:  # the process stopped before its form was posted
                    self.submit(run.id, lambda q=pending: self.presenter.post_form(q))  # type: ignore[misc]
                continue  # its form still works: answers resolve through the store
            recovered.append(run.id)
            self.submit(run.id, lambda run_id=run.id: self._resume(run_id))  # type: ignore[misc]
        if recovered:
            log.info("recovering %d run(s): %s", len(recovered), ", ".join(recovered))
        return recovered

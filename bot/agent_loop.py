"""The agent loop: model ⇄ tools until the work is done or a person must answer.

Everything lives in the store: `advance(run_id)` works out where a run stands from
its transcript alone, so a new process (or a new Store) resumes exactly there.

Behind it in bot/core/: replies (a model reply read as data), prose_questions,
transcript, tool_calls (settling one message's tool calls) and question_records."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from bot.core.errors import AlreadyAnsweredError, ModelError, ModelTransientError
from bot.core.models import Model, real_model_name, usage_line
from bot.core.prose_questions import NUDGE, RESTATE, asks_in_prose
from bot.core.question_records import ask_of, outcome_of
from bot.core.questions import TOOL_SCHEMA, Ask, late_answer_text
from bot.core.replies import narration_of, objectified, reply_problem, text_of, tool_uses
from bot.core.runner import RetrySchedule
from bot.core.tool_calls import ToolCalls
from bot.core.tools import ToolRegistry
from bot.core.transcript import Transcript, kept_prompt, thread_messages
from bot.store import QuestionRecord, RunPrompt, Store

log = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 60


class Presenter(Protocol):
    """Where a run shows what happens: Slack, a terminal, or a test's recorder."""

    def text(self, run_id: str, text: str) -> None: ...

    def progress(self, run_id: str, steps: dict[str, str]) -> None: ...

    def question(self, run_id: str, question: QuestionRecord) -> None: ...

    def finished(self, run_id: str, text: str) -> None: ...

    def failed(self, run_id: str, error: str) -> None: ...

    def stopped(self, run_id: str, by: str) -> None: ...

    def waiting(self, run_id: str, text: str) -> None: ...


@dataclass(frozen=True)
class Paused:
    """A question is pending; the turn returned. Answer it, then call advance()."""

    question_id: str


@dataclass(frozen=True)
class Finished:
    text: str


@dataclass(frozen=True)
class Failed:
    error: str


@dataclass(frozen=True)
class Stopped:
    """A person pressed Stop: the turn ended at a step boundary, pending questions cancelled."""

    by: str


@dataclass(frozen=True)
class Waiting:
    """The turn ended with questions put off (Cancel: "not now"): the run waits on them, and
    Decide brings each back. Not finished: some steps wait on those decisions."""

    text: str
    deferred: tuple[str, ...]


@dataclass(frozen=True)
class Retrying:
    """The model API could not answer for a passing reason (rate limit, overload, a lost
    connection): the run waits and tries again at `at` by itself (the watchdog, or the
    console, continues it then)."""

    at: str
    error: str


TurnOutcome = Paused | Finished | Failed | Stopped | Waiting | Retrying


class AgentLoop:
    """One loop serves every mode; what differs is the presenter and who answers."""

    def __init__(
        self,
        *,
        store: Store,
        model: Model,
        tools: ToolRegistry,
        presenter: Presenter,
        system_prompt: str,
        max_steps: int = DEFAULT_MAX_STEPS,
        question_ttl: timedelta | None = None,
        retry: RetrySchedule | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.tools = tools
        self.presenter = presenter
        self.system_prompt = system_prompt
        self.max_steps = max_steps
        self.question_ttl = question_ttl  # None: questions wait for a person indefinitely
        self.retry = retry or RetrySchedule()
        self.tool_calls = ToolCalls(
            store=store, tools=tools, presenter=presenter, question_ttl=question_ttl
        )

    def start(self, run_id: str, prompt: str) -> TurnOutcome:
        """Begin a run with the user's request."""
        self.store.transcript.append(
            run_id, role="user", content=[{"type": "text", "text": prompt}]
        )
        return self.advance(run_id)

    def can_hear(self, run_id: str) -> bool:
        """Whether a person's message can enter the transcript now (no tool call awaits a result)."""
        last = self.store.transcript.last(run_id)
        return not (last and last.role == "assistant" and tool_uses(last.content))

    def stop(self, run_id: str, by: str) -> Stopped:
        """End the run now: pending questions cancelled, status cancelled, who stopped it shown."""
        return self._stop(run_id, by)

    def fail(self, run_id: str, error: str) -> Failed:
        """End the turn as failed with a reason the person can act on (Retry continues it)."""
        return self._fail(run_id, error)

    def say(self, run_id: str, text: str) -> TurnOutcome:
        """A person's message in an idle run's conversation."""
        last = self.store.transcript.last(run_id)
        if last and last.role == "assistant" and tool_uses(last.content):
            raise ValueError(
                "the run is in the middle of a turn; its question must be answered first"
            )
        self.store.transcript.append(run_id, role="user", content=[{"type": "text", "text": text}])
        return self.advance(run_id)

    def advance(self, run_id: str) -> TurnOutcome:
        """Take the run forward from what the store holds, until done or a question is pending.

        The transcript is read from the store once, at the start of the turn; each message
        this turn adds is written to the store first and then appended to that copy, so a
        model step costs the same with ten messages as with a thousand.
        """
        waited = self.store.runs.get(run_id).retries  # tries since the last answered call
        self.store.runs.set_status(run_id, "running")
        if waited:
            self.store.runs.retrying_now(run_id)
        prompt = self._prompt_for(run_id)
        transcript = Transcript(self.store, run_id, stale_before=prompt.stale_thinking_before)
        steps = 0  # model calls in this turn
        paused_turn = False  # the API paused a long turn (pause_turn): call again to continue
        restate = False  # the turn ended on a question in prose: the next call must ask it
        restated = False  # ...once a turn
        model: Model | None = None
        while True:
            stop_by = self.store.runs.stop_requested(run_id)
            if stop_by:
                return self._stop(run_id, stop_by)
            last = transcript.last
            if last is None:
                return self._fail(run_id, "the run has no messages to work from")
            if last.role == "user" or paused_turn:
                if steps >= self.max_steps:
                    return self._fail(
                        run_id, f"stopped after {self.max_steps} steps without finishing"
                    )
                steps += 1
                model = model or self._model_for(run_id)  # once a turn: a run keeps its model
                try:
                    reply = model.respond(
                        system=prompt.system,
                        messages=transcript.api(),
                        tools=prompt.tools,
                        **({"tool_choice": NUDGE} if restate else {}),  # never forced
                    )
                except ModelTransientError as e:
                    return self._wait_to_retry(run_id, e)
                except ModelError as e:
                    return self._fail(run_id, str(e))
                if waited:  # answered: the count of tries starts again
                    self.store.runs.answered(run_id)
                    waited = None
                if reply.usage:  # tokens are spent whether or not the reply is usable
                    self.store.transcript.record_model_call(
                        run_id, model=model.name, stop_reason=reply.stop_reason, usage=reply.usage
                    )
                problem = reply_problem(reply)
                if problem:  # nothing of an unusable reply enters the transcript
                    return self._fail(run_id, problem)
                paused_turn = reply.stop_reason == "pause_turn"
                restate = False
                content = objectified(reply.content)
                if not content:
                    continue  # a paused turn with nothing yet: ask again
                transcript.append("assistant", content)
                if (tool_uses(content) or paused_turn) and (text := narration_of(content)):
                    self.presenter.text(run_id, text)
                continue
            uses = tool_uses(last.content)
            if not uses and self.store.questions.untold_answers(run_id):
                # a question put off and decided now, or a decision changed: the agent is told
                with self.store.write():
                    transcript.append("user", self._tell_late_answers(run_id))
                continue
            if not uses:
                said = text_of(last.content)
                if not restated and asks_in_prose(said):
                    # Seed 001's question detector: a question in prose would end the run with
                    # nobody asked. Ask the model once to restate it as a form.
                    restate = restated = True
                    transcript.append("user", [{"type": "text", "text": RESTATE}])
                    continue
                return self._finish(run_id, said)
            pending = self.tool_calls.settle(run_id, uses, transcript)
            if pending is not None:
                return Paused(question_id=pending)
            results = []
            for use in uses:
                stored = self.store.transcript.tool_result(use["id"])
                assert stored is not None
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": use["id"],
                    "content": stored.content,
                }
                if stored.is_error:
                    block["is_error"] = True
                results.append(block)
            with self.store.write():  # messages are taken with the results they go with
                heard = self.store.inbox.take(run_id)
                if heard:  # written in the thread meanwhile: read at this step, not after it
                    results.append({"type": "text", "text": thread_messages(heard)})
                results += self._tell_late_answers(run_id)  # a decision changed meanwhile
                transcript.append("user", results)

    def _tell_late_answers(self, run_id: str) -> list[dict[str, Any]]:
        """Late answers not told to the agent yet, as text blocks of its next message, marked
        told (call inside the write that appends them)."""
        out = []
        for q in self.store.questions.untold_answers(run_id):
            text = late_answer_text(ask_of(q), outcome_of(q), question_id=q.id, changes=q.changes)
            out.append({"type": "text", "text": text})
            self.store.questions.mark_told(q.id)
        return out

    def parked(self, run_id: str) -> bool:
        """Whether the run waits on questions put off, with nothing to do until a person
        presses Decide (the watchdog leaves it alone): its turn ended, nothing is pending and
        no late answer waits to be told."""
        run = self.store.runs.get(run_id)
        if run.status != "waiting" or self.store.questions.pending(run_id) is not None:
            return False
        last = self.store.transcript.last(run_id)
        return (
            last is not None
            and last.role == "assistant"
            and not tool_uses(last.content)
            and not self.store.questions.untold_answers(run_id)
        )

    def _model_for(self, run_id: str) -> Model:
        """The model the run was started on (a paused run resumes on it), when the adapter can.
        Only a real model's name is pinned: a run begun offline (or under another stand-in)
        and resumed with a key goes on with the configured model, and the run says so."""
        pinned = self.store.runs.get(run_id).model
        switch: Any = getattr(self.model, "pinned", None)
        if real_model_name(pinned) and pinned != self.model.name and callable(switch):
            return switch(pinned)
        if not real_model_name(pinned) and real_model_name(self.model.name):
            self.store.runs.set_model(run_id, self.model.name)
        return self.model

    def _prompt_for(self, run_id: str) -> RunPrompt:
        """The system prompt and tools the run started with (bot/core/transcript.py)."""
        return kept_prompt(
            self.store, run_id, self.system_prompt, [*self.tools.schemas(), TOOL_SCHEMA]
        )

    def _wait_to_retry(self, run_id: str, error: ModelTransientError) -> TurnOutcome:
        """Wait and try again by itself, later each time; the thread says why and when. After
        the schedule's last try the run fails (a person's Retry continues it)."""
        tries = (self.store.runs.get(run_id).retries or 0) + 1
        delay = self.retry.delay(tries, error.retry_after)
        if delay is None:
            self.store.runs.answered(run_id)  # a person's Retry starts the count again
            return self._fail(
                run_id,
                f"{error} (tried again {self.retry.tries} times, the last {_duration(self.retry.delay(self.retry.tries) or timedelta())} apart)",
            )
        at = self.store.now(after=delay)
        self.store.runs.schedule_retry(run_id, at=at, retries=tries, error=str(error))
        when = at[11:16]
        # a presenter that tells it apart (Slack: a reply in the thread) says it so; else narration
        tell: Any = getattr(self.presenter, "retrying", None) or self.presenter.text
        tell(
            run_id,
            f"Waiting to retry: {error}. I'll try again by myself at {when} UTC "
            f"(in {_duration(delay)}; try {tries} of {self.retry.tries}). Nothing is lost.",
        )
        log.info("run %s waits to retry at %s: %s", run_id, at, error)
        return Retrying(at=at, error=str(error))

    def question_wait(self, ask: Ask) -> timedelta | None:
        """How long a question waits when timeouts are on: its complexity's wait (seed 001's
        mapping), else the configured one."""
        return self.tool_calls.question_wait(ask)

    def _finish(self, run_id: str, text: str) -> TurnOutcome:
        steps = self.store.runs.get(run_id).steps
        failed = [s for s in self.tools.steps if steps.get(s) == "failed"]
        if failed:  # a step that failed is never success, whatever the model says
            names = [t.name for t in self.tools.by_step(failed[0])]
            error = self.store.transcript.last_tool_error(run_id, names) or "see the thread"
            return self._fail(run_id, f"the step '{failed[0]}' failed: {error}")
        deferred = self.store.questions.deferred(run_id)
        if deferred:  # questions put off: the run waits on them, it is not finished
            with self.store.write():
                steps = self.store.runs.park_steps(run_id)
                self.store.runs.set_status(run_id, "waiting")
                self.store.audit.record(
                    run_id=run_id,
                    kind="run_waiting",
                    actor=None,
                    detail={"deferred": [q.id for q in deferred]},
                )
            self.presenter.progress(run_id, steps)
            self.presenter.waiting(run_id, text)
            return Waiting(text=text, deferred=tuple(q.id for q in deferred))
        self.presenter.progress(run_id, self.store.runs.finish_steps(run_id))
        self.store.runs.set_status(run_id, "done")
        calls, _ = self.store.transcript.usage(run_id)
        if calls:
            used = self.store.transcript.usage_by_model(run_id)
            text = f"{text}\n\n{usage_line(used, calls)}".strip()
        sealed = self.store.audit.seal(run_id)
        # the summary shows the head as the run finished, to compare with `audit --verify`
        shown = f"{text}\n\nAudit seal: {sealed.short()}." if sealed else text
        self.presenter.finished(run_id, shown)
        return Finished(text=text)

    def _stop(self, run_id: str, by: str) -> Stopped:
        for record in self.store.questions.of_run(run_id):
            if record.status in ("pending", "deferred"):  # Stop ends it: nothing waits
                with contextlib.suppress(AlreadyAnsweredError):  # settled meanwhile
                    self.store.questions.cancel(record.id, cancelled_by=by, source="stop")
        self.store.runs.set_status(run_id, "cancelled", error=f"stopped by {by}")
        self.presenter.stopped(run_id, by)
        return Stopped(by=by)

    def _fail(self, run_id: str, error: str) -> Failed:
        log.warning("run %s failed: %s", run_id, error)
        self.store.runs.set_status(run_id, "failed", error=error)
        self.presenter.failed(run_id, error)
        return Failed(error=error)


def _duration(delay: timedelta) -> str:
    seconds = int(delay.total_seconds())
    return f"{seconds} s" if seconds < 90 else f"about {round(seconds / 60)} min"


__all__ = [
    "DEFAULT_MAX_STEPS",
    "RESTATE",
    "AgentLoop",
    "Failed",
    "Finished",
    "Paused",
    "Presenter",
    "Retrying",
    "Stopped",
    "Transcript",
    "TurnOutcome",
    "Waiting",
    "ask_of",
    "asks_in_prose",
    "outcome_of",
]

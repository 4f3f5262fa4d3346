"""The agent loop: model ⇄ tools until the work is done or a person must answer.

Everything lives in the store: `advance(run_id)` works out where a run stands from
its transcript alone, so a new process (or a new Store) resumes exactly there.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from bot.core.errors import AlreadyAnsweredError, ModelError
from bot.core.models import Model, Reply, usage_line
from bot.core.questions import (
    TOOL_NAME,
    TOOL_SCHEMA,
    Ask,
    AskInvalid,
    Outcome,
    late_answer_text,
    parse_ask,
    timeout_minutes,
    tool_result_content,
)
from bot.core.tools import ToolContext, ToolRegistry
from bot.store import Message, QuestionRecord, Store

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


TurnOutcome = Paused | Finished | Failed | Stopped | Waiting

NARRATION_LIMIT = 1500  # summarized thinking shown in the thread is cut to this


RESTATE = (
    "(closebot) You ended your turn with a question in plain text, which nobody can answer "
    "there. Ask it now with ask_user_question: the situation and its figures in `context`, "
    "the choices as options with what each books, your recommendation and why."
)
_QUESTION_END = re.compile(r"\?[\s\*_)\]\"'”’»]*$")


def asks_in_prose(text: str) -> bool:
    """Whether a turn's last words put a question to the person (its last sentence ends in
    '?'): then the loop has the model restate it as a form."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return bool(lines) and bool(_QUESTION_END.search(lines[-1]))


def reply_problem(reply: Reply) -> str | None:
    """Why a model reply cannot be used as the next assistant message, or None if it can."""
    content = reply.content
    if reply.stop_reason == "refusal":
        return "the model refused to continue this close (stop_reason: refusal)"
    if reply.stop_reason == "max_tokens":
        return (
            "the model's reply was cut off at its output limit (stop_reason: max_tokens); "
            "retry continues from the last complete step"
        )
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        return "the model returned a malformed reply (content is not a list of blocks)"
    for block in _tool_uses(content):
        if not (
            isinstance(block.get("id"), str) and block["id"] and isinstance(block.get("name"), str)
        ):
            return "the model returned a malformed tool call (no id or no name)"
    useful = [
        b
        for b in content
        if b.get("type") in ("tool_use", "thinking", "redacted_thinking")
        or (b.get("type") == "text" and str(b.get("text", "")).strip())
    ]
    if not useful and reply.stop_reason != "pause_turn":
        return "the model returned an empty reply"
    if reply.stop_reason == "end_turn" and not _tool_uses(content) and not _text_of(content):
        return "the model ended its turn without a word (only thinking)"
    return None


NOT_AN_OBJECT = "not_an_object"  # a tool_use's input that was not a JSON object, kept here


def objectified(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reply with each tool_use's input an object, as the Messages API takes it back: an
    input that was not one (a list, say) is kept as {NOT_AN_OBJECT: input}, and the tool's
    result tells the model to call it again with an object (tool_input_problem)."""
    return [
        {**b, "input": {NOT_AN_OBJECT: b.get("input")}}
        if b.get("type") == "tool_use" and not isinstance(b.get("input", {}), dict)
        else b
        for b in content
    ]


def tool_input_problem(name: str, raw: Any) -> str | None:
    """Why a tool_use's input cannot be used at all (it was not a JSON object), or None."""
    if isinstance(raw, dict) and set(raw) == {NOT_AN_OBJECT}:
        sent = json.dumps(raw[NOT_AN_OBJECT], ensure_ascii=False)
        kind = type(raw[NOT_AN_OBJECT]).__name__
        return (
            f"{name}: the input must be a JSON object with the tool's arguments, not a {kind} "
            f"({sent[:200]}); nothing was done — call {name} again with an object"
        )
    return None


def thread_messages(held: list[dict[str, Any]]) -> str:
    """Messages people wrote in the run's thread, as the model reads them."""
    said = "\n\n".join(f"<@{m['user']}>: {m['text']}" if m["user"] else m["text"] for m in held)
    return (
        "Written in the thread while you were working (read this before your next step):\n\n" + said
    )


def _tool_uses(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in content if b.get("type") == "tool_use"]


def _text_of(content: list[dict[str, Any]]) -> str:
    return "\n\n".join(
        b["text"].strip()
        for b in content
        if b.get("type") == "text" and str(b.get("text", "")).strip()
    )


def narration_of(content: list[dict[str, Any]]) -> str:
    """What the thread shows between tool calls: the text, else the summarized thinking."""
    text = _text_of(content)
    if text:
        return text
    thought = "\n\n".join(
        str(b.get("thinking", "")).strip()
        for b in content
        if b.get("type") == "thinking" and str(b.get("thinking", "")).strip()
    )
    if not thought:
        return ""
    cut = thought if len(thought) <= NARRATION_LIMIT else thought[: NARRATION_LIMIT - 1] + "…"
    return f"_{cut}_" if "_" not in cut else cut


class Transcript:
    """A turn's copy of the run's transcript: read once, then appended to as the store is.

    The store stays the source of truth: every message is written there before it joins
    this copy, and a copy that finds the store ahead of it (someone else appended) reads
    the store again.
    """

    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self._messages = store.messages(run_id)
        self._api = [m.api() for m in self._messages]

    @property
    def last(self) -> Message | None:
        return self._messages[-1] if self._messages else None

    @property
    def messages(self) -> list[Message]:
        return self._messages

    def api(self) -> list[dict[str, Any]]:
        """The messages as the Messages API takes them (a new list; the dicts are shared)."""
        return list(self._api)

    def append(self, role: str, content: list[dict[str, Any]]) -> None:
        seq = self.store.append_message(self.run_id, role=role, content=content)
        expected = (self._messages[-1].seq if self._messages else 0) + 1
        if seq != expected:  # another writer got in between: take the store's word
            self._messages = self.store.messages(self.run_id)
            self._api = [m.api() for m in self._messages]
            return
        message = Message(seq=seq, role=role, content=content)
        self._messages.append(message)
        self._api.append(message.api())


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
    ) -> None:
        self.store = store
        self.model = model
        self.tools = tools
        self.presenter = presenter
        self.system_prompt = system_prompt
        self.max_steps = max_steps
        self.question_ttl = question_ttl  # None: questions wait for a person indefinitely

    def start(self, run_id: str, prompt: str) -> TurnOutcome:
        """Begin a run with the user's request."""
        self.store.append_message(run_id, role="user", content=[{"type": "text", "text": prompt}])
        return self.advance(run_id)

    def can_hear(self, run_id: str) -> bool:
        """Whether a person's message can enter the transcript now (no tool call awaits a result)."""
        last = self.store.last_message(run_id)
        return not (last and last.role == "assistant" and _tool_uses(last.content))

    def stop(self, run_id: str, by: str) -> Stopped:
        """End the run now: pending questions cancelled, status cancelled, who stopped it shown."""
        return self._stop(run_id, by)

    def fail(self, run_id: str, error: str) -> Failed:
        """End the turn as failed with a reason the person can act on (Retry continues it)."""
        return self._fail(run_id, error)

    def say(self, run_id: str, text: str) -> TurnOutcome:
        """A person's message in an idle run's conversation."""
        last = self.store.last_message(run_id)
        if last and last.role == "assistant" and _tool_uses(last.content):
            raise ValueError(
                "the run is in the middle of a turn; its question must be answered first"
            )
        self.store.append_message(run_id, role="user", content=[{"type": "text", "text": text}])
        return self.advance(run_id)

    def advance(self, run_id: str) -> TurnOutcome:
        """Take the run forward from what the store holds, until done or a question is pending.

        The transcript is read from the store once, at the start of the turn; each message
        this turn adds is written to the store first and then appended to that copy, so a
        model step costs the same with ten messages as with a thousand.
        """
        self.store.set_run_status(run_id, "running")
        schemas = [*self.tools.schemas(), TOOL_SCHEMA]
        transcript = Transcript(self.store, run_id)
        steps = 0  # model calls in this turn
        paused_turn = False  # the API paused a long turn (pause_turn): call again to continue
        restate = False  # the turn ended on a question in prose: the next call must ask it
        restated = False  # ...once a turn
        model: Model | None = None
        while True:
            stop_by = self.store.stop_requested(run_id)
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
                        system=self.system_prompt,
                        messages=transcript.api(),
                        tools=schemas,
                        **({"tool_choice": {"type": "tool", "name": TOOL_NAME}} if restate else {}),
                    )
                except ModelError as e:
                    return self._fail(run_id, str(e))
                if reply.usage:  # tokens are spent whether or not the reply is usable
                    self.store.record_model_call(
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
                if (_tool_uses(content) or paused_turn) and (text := narration_of(content)):
                    self.presenter.text(run_id, text)
                continue
            uses = _tool_uses(last.content)
            if not uses and self.store.untold_answers(run_id):
                # a question put off and decided now, or a decision changed: the agent is told
                with self.store.write():
                    transcript.append("user", self._tell_late_answers(run_id))
                continue
            if not uses:
                said = _text_of(last.content)
                if not restated and asks_in_prose(said):
                    # Seed 001's question detector: a question in prose would end the run with
                    # nobody asked. Ask the model once to restate it as a form.
                    restate = restated = True
                    transcript.append("user", [{"type": "text", "text": RESTATE}])
                    continue
                return self._finish(run_id, said)
            pending = self._settle(run_id, uses, transcript)
            if pending is not None:
                return pending
            results = []
            for use in uses:
                stored = self.store.tool_result(use["id"])
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
                heard = self.store.take_messages(run_id)
                if heard:  # written in the thread meanwhile: read at this step, not after it
                    results.append({"type": "text", "text": thread_messages(heard)})
                results += self._tell_late_answers(run_id)  # a decision changed meanwhile
                transcript.append("user", results)

    def _tell_late_answers(self, run_id: str) -> list[dict[str, Any]]:
        """Late answers not told to the agent yet, as text blocks of its next message, marked
        told (call inside the write that appends them)."""
        out = []
        for q in self.store.untold_answers(run_id):
            text = late_answer_text(ask_of(q), outcome_of(q), question_id=q.id, changes=q.changes)
            out.append({"type": "text", "text": text})
            self.store.mark_told(q.id)
        return out

    def parked(self, run_id: str) -> bool:
        """Whether the run waits on questions put off, with nothing to do until a person
        presses Decide (the watchdog leaves it alone): its turn ended, nothing is pending and
        no late answer waits to be told."""
        run = self.store.run(run_id)
        if run.status != "waiting" or self.store.pending_question(run_id) is not None:
            return False
        last = self.store.last_message(run_id)
        return (
            last is not None
            and last.role == "assistant"
            and not _tool_uses(last.content)
            and not self.store.untold_answers(run_id)
        )

    def _model_for(self, run_id: str) -> Model:
        """The model the run was started on (a paused run resumes on it), when the adapter can."""
        pinned = self.store.run(run_id).model
        switch: Any = getattr(self.model, "pinned", None)
        if pinned and pinned != self.model.name and callable(switch):
            return switch(pinned)
        return self.model

    def _settle(
        self, run_id: str, uses: list[dict[str, Any]], transcript: Transcript
    ) -> Paused | None:
        """Give every tool_use of one assistant message a stored result, or pause on a question."""
        ctx = ToolContext(
            run_id=run_id, store=self.store, progress=lambda text: self.presenter.text(run_id, text)
        )
        # Ordinary tools first, each result stored before anything else happens.
        for use in uses:
            if use["name"] == TOOL_NAME or self.store.tool_result(use["id"]) is not None:
                continue
            tool = self.tools.get(use["name"])
            if tool is not None and tool.step:
                self.presenter.progress(run_id, self.store.set_step(run_id, tool.step, "running"))
            problem = tool_input_problem(use["name"], use.get("input"))
            content, is_error = (
                (problem, True) if problem else self.tools.call(use["name"], ctx, use.get("input"))
            )
            with self.store.write():  # the result and the step's state: one commit
                self.store.record_tool_result(
                    run_id,
                    tool_use_id=use["id"],
                    name=use["name"],
                    input=use.get("input") or {},
                    content=content,
                    is_error=is_error,
                )
                steps = (
                    self.store.set_step(run_id, tool.step, "failed" if is_error else "done")
                    if tool is not None and tool.step
                    else None
                )
            if steps is not None:
                self.presenter.progress(run_id, steps)
        for use in uses:
            if use["name"] != TOOL_NAME or self.store.tool_result(use["id"]) is not None:
                continue
            waiting = self._settle_question(run_id, use, transcript)
            if waiting is not None:
                return waiting  # one pending question per run: the next is shown once this one is settled
        return None

    def _settle_question(
        self, run_id: str, use: dict[str, Any], transcript: Transcript
    ) -> Paused | None:
        raw = use.get("input")
        try:
            if problem := tool_input_problem(TOOL_NAME, raw):
                raise AskInvalid([problem])
            ask = parse_ask(raw)
        except AskInvalid as e:
            content = (
                "ask_user_question input is invalid, nothing was shown to the user. Fix these and ask again:\n- "
                + "\n- ".join(e.problems)
            )
            self.store.record_tool_result(
                run_id,
                tool_use_id=use["id"],
                name=TOOL_NAME,
                input=raw if isinstance(raw, dict) else {},
                content=content,
                is_error=True,
            )
            return None
        expires_at = self.store.now(after=self.question_wait(ask)) if self.question_ttl else None
        steps: dict[str, str] | None = None
        with self.store.write():  # the question, the run waiting and its step: one commit
            record, new = self.store.create_question(
                run_id,
                question_id=use["id"],
                context=ask.context,
                questions=ask.questions_json(),
                expires_at=expires_at,
            )
            if record.status == "pending":
                self.store.set_run_status(run_id, "waiting")
                if new:
                    steps = self._mark_waiting(run_id, transcript)
        if record.status == "pending":
            if new:
                if steps is not None:
                    self.presenter.progress(run_id, steps)
                self.presenter.question(run_id, record)
            return Paused(question_id=record.id)
        outcome = outcome_of(record)
        moved: list[dict[str, str]] = []
        with self.store.write():  # the answer as the tool's result, and the step going on
            self.store.record_tool_result(
                run_id,
                tool_use_id=use["id"],
                name=TOOL_NAME,
                input=raw if isinstance(raw, dict) else {},
                content=tool_result_content(ask, outcome),
                is_error=False,
            )
            if (
                record.status == "answered"
            ):  # the step that waited goes on; one put off waits for Decide
                steps_now = self.store.run(run_id).steps
                waiting = [s for s, state in steps_now.items() if state == "waiting"]
                moved = [self.store.set_step(run_id, step, "running") for step in waiting]
        for steps_then in moved:
            self.presenter.progress(run_id, steps_then)
        return None

    def question_wait(self, ask: Ask) -> timedelta | None:
        """How long a question waits when timeouts are on: its complexity's wait (seed 001's
        mapping), else the configured one."""
        if self.question_ttl is None:
            return None
        minutes = timeout_minutes(ask)
        return timedelta(minutes=minutes) if minutes else self.question_ttl

    def _mark_waiting(self, run_id: str, transcript: Transcript) -> dict[str, str] | None:
        """The step of the latest step tool called now waits on a person."""
        for message in reversed(transcript.messages):
            for use in reversed(_tool_uses(message.content) if message.role == "assistant" else []):
                tool = self.tools.get(use["name"])
                if tool is not None and tool.step:
                    return self.store.set_step(run_id, tool.step, "waiting")
        return None

    def _finish(self, run_id: str, text: str) -> TurnOutcome:
        steps = self.store.run(run_id).steps
        failed = [s for s in self.tools.steps if steps.get(s) == "failed"]
        if failed:  # a step that failed is never success, whatever the model says
            names = [t.name for t in self.tools.by_step(failed[0])]
            error = self.store.last_tool_error(run_id, names) or "see the thread"
            return self._fail(run_id, f"the step '{failed[0]}' failed: {error}")
        deferred = self.store.deferred_questions(run_id)
        if deferred:  # questions put off: the run waits on them, it is not finished
            with self.store.write():
                steps = self.store.park_steps(run_id)
                self.store.set_run_status(run_id, "waiting")
                self.store.audit(
                    run_id=run_id,
                    kind="run_waiting",
                    actor=None,
                    detail={"deferred": [q.id for q in deferred]},
                )
            self.presenter.progress(run_id, steps)
            self.presenter.waiting(run_id, text)
            return Waiting(text=text, deferred=tuple(q.id for q in deferred))
        self.presenter.progress(run_id, self.store.finish_steps(run_id))
        self.store.set_run_status(run_id, "done")
        calls, usage = self.store.usage(run_id)
        if calls:
            text = f"{text}\n\n{usage_line(self.store.run(run_id).model, usage, calls)}".strip()
        sealed = self.store.seal_of(run_id)
        # the summary shows the head as the run finished, to compare with `audit --verify`
        shown = f"{text}\n\nAudit seal: {sealed.short()}." if sealed else text
        self.presenter.finished(run_id, shown)
        return Finished(text=text)

    def _stop(self, run_id: str, by: str) -> Stopped:
        for record in self.store.questions(run_id):
            if record.status in ("pending", "deferred"):  # Stop ends it: nothing waits
                with contextlib.suppress(AlreadyAnsweredError):  # settled meanwhile
                    self.store.cancel_question(record.id, cancelled_by=by, source="stop")
        self.store.set_run_status(run_id, "cancelled", error=f"stopped by {by}")
        self.presenter.stopped(run_id, by)
        return Stopped(by=by)

    def _fail(self, run_id: str, error: str) -> Failed:
        log.warning("run %s failed: %s", run_id, error)
        self.store.set_run_status(run_id, "failed", error=error)
        self.presenter.failed(run_id, error)
        return Failed(error=error)


def outcome_of(record: QuestionRecord) -> Outcome:
    """How a settled question ended: status, who, how, when, and the answers."""
    return Outcome(
        status=record.status,
        source=record.source,
        by=record.answered_by,
        at=record.answered_at,
        answers=record.answer,
        rationale=record.rationale,
    )


def ask_of(record: QuestionRecord) -> Ask:
    """The validated Ask a stored question was made from."""
    return Ask.from_record(record.context, record.questions)

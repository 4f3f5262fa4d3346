"""Settling one assistant message's tool calls: each ordinary tool run and its result
stored with its step's state; each ask_user_question validated and made a pending
question (the run waits), or, once it is settled, its answer stored as the result."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Protocol

from bot.core.errors import NotFoundError
from bot.core.question_records import ask_of, outcome_of
from bot.core.questions import (
    TOOL_NAME,
    Ask,
    AskInvalid,
    parse_ask,
    timeout_minutes,
    tool_result_content,
)
from bot.core.questions.refs import asks_by_reference, by_reference, expand
from bot.core.replies import tool_input_problem, tool_uses
from bot.core.tools import ToolContext, ToolError, ToolRegistry
from bot.core.transcript import Transcript
from bot.store import QuestionRecord, Store


class ToolCallPresenter(Protocol):
    """What settling tool calls shows (a part of the loop's Presenter)."""

    def text(self, run_id: str, text: str) -> None: ...

    def progress(self, run_id: str, steps: dict[str, str]) -> None: ...

    def question(self, run_id: str, question: QuestionRecord) -> None: ...


class ToolCalls:
    """Gives every tool_use a stored result, or leaves one question pending."""

    def __init__(
        self,
        *,
        store: Store,
        tools: ToolRegistry,
        presenter: ToolCallPresenter,
        question_ttl: timedelta | None,
    ) -> None:
        self.store = store
        self.tools = tools
        self.presenter = presenter
        self.question_ttl = question_ttl  # None: questions wait for a person indefinitely
        # run → (the last message read for its latest step tool, that tool's step)
        self._latest_step: dict[str, tuple[int, str | None]] = {}

    def settle(self, run_id: str, uses: list[dict[str, Any]], transcript: Transcript) -> str | None:
        """Give every tool_use of one assistant message a stored result; the id of the
        question that now waits on a person, if one does."""
        ctx = ToolContext(
            run_id=run_id, store=self.store, progress=lambda text: self.presenter.text(run_id, text)
        )
        # Ordinary tools first, each result stored before anything else happens.
        for use in uses:
            if use["name"] == TOOL_NAME or self.store.transcript.tool_result(use["id"]) is not None:
                continue
            tool = self.tools.get(use["name"])
            if tool is not None and tool.step:
                self.presenter.progress(
                    run_id, self.store.runs.set_step(run_id, tool.step, "running")
                )
            problem = tool_input_problem(use["name"], use.get("input"))
            content, is_error = (
                (problem, True) if problem else self.tools.call(use["name"], ctx, use.get("input"))
            )
            with self.store.write():  # the result and the step's state: one commit
                self.store.transcript.record_tool_result(
                    run_id,
                    tool_use_id=use["id"],
                    name=use["name"],
                    input=use.get("input") or {},
                    content=content,
                    is_error=is_error,
                )
                steps = (
                    self.store.runs.set_step(run_id, tool.step, "failed" if is_error else "done")
                    if tool is not None and tool.step
                    else None
                )
            if steps is not None:
                self.presenter.progress(run_id, steps)
        for use in uses:
            if use["name"] != TOOL_NAME or self.store.transcript.tool_result(use["id"]) is not None:
                continue
            waiting = self._settle_question(run_id, use, transcript)
            if waiting is not None:
                return waiting  # one pending question per run: the next is shown once this one is settled
        return None

    def _settle_question(
        self, run_id: str, use: dict[str, Any], transcript: Transcript
    ) -> str | None:
        raw = use.get("input")
        try:
            # a question already stored is read back as it was shown (its refs rendered then)
            ask = ask_of(self.store.questions.get(use["id"]))
        except NotFoundError:
            ask = None
        try:
            if ask is None:
                if problem := tool_input_problem(TOOL_NAME, raw):
                    raise AskInvalid([problem])
                ask = parse_ask(expand(raw, self._render(run_id)))
        except AskInvalid as e:
            content = (
                "ask_user_question input is invalid, nothing was shown to the user. Fix these and ask again:\n- "
                + "\n- ".join(e.problems)
            )
            self.store.transcript.record_tool_result(
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
            record, new = self.store.questions.create(
                run_id,
                question_id=use["id"],
                context=ask.context,
                questions=ask.questions_json(),
                expires_at=expires_at,
            )
            if record.status == "pending":
                self.store.runs.set_status(run_id, "waiting")
                if new:
                    steps = self._mark_waiting(run_id, transcript)
        if record.status == "pending":
            if new:
                if steps is not None:
                    self.presenter.progress(run_id, steps)
                self.presenter.question(run_id, record)
            return record.id
        outcome = outcome_of(record)
        recorded = self._record_answers(run_id, record, raw)
        moved: list[dict[str, str]] = []
        with self.store.write():  # the answer as the tool's result, and the step going on
            self.store.transcript.record_tool_result(
                run_id,
                tool_use_id=use["id"],
                name=TOOL_NAME,
                input=raw if isinstance(raw, dict) else {},
                content=tool_result_content(ask, outcome, recorded),
                is_error=False,
            )
            if (
                record.status == "answered"
            ):  # the step that waited goes on; one put off waits for Decide
                steps_now = self.store.runs.get(run_id).steps
                waiting = [s for s, state in steps_now.items() if state == "waiting"]
                moved = [self.store.runs.set_step(run_id, step, "running") for step in waiting]
        for steps_then in moved:
            self.presenter.progress(run_id, steps_then)
        return None

    def _record_answers(
        self, run_id: str, record: QuestionRecord, raw: Any
    ) -> list[dict[str, Any]] | None:
        """The answers to the questions asked by reference, recorded by the domain (no round
        trip only to record them); None when none was asked so, or nothing was answered."""
        record_answers = self.tools.record_answers
        if record_answers is None or record.status != "answered" or not asks_by_reference(raw):
            return None
        asked = [
            (n, ref)
            for n, item in enumerate(raw["questions"], start=1)
            if (ref := by_reference(item)) is not None
        ]
        ctx = ToolContext(run_id=run_id, store=self.store)
        return record_answers(ctx, record.id, asked)

    def _render(self, run_id: str) -> Callable[[str], list[dict[str, Any]]] | None:
        """The domain's prepared questions by ref, for this run (ValueError for an unknown ref)."""
        prepared = self.tools.prepared
        if prepared is None:
            return None
        ctx = ToolContext(run_id=run_id, store=self.store)

        def render(ref: str) -> list[dict[str, Any]]:
            try:
                return prepared(ctx, ref)
            except ToolError as e:
                raise ValueError(str(e)) from None

        return render

    def question_wait(self, ask: Ask) -> timedelta | None:
        """How long a question waits when timeouts are on: its complexity's wait (seed 001's
        mapping), else the configured one."""
        if self.question_ttl is None:
            return None
        minutes = timeout_minutes(ask)
        return timedelta(minutes=minutes) if minutes else self.question_ttl

    def _mark_waiting(self, run_id: str, transcript: Transcript) -> dict[str, str] | None:
        """The step of the latest step tool called now waits on a person (found among the
        messages past those read last time: the transcript is append-only — issue 31)."""
        read, step = self._latest_step.get(run_id, (0, None))
        for message in reversed(transcript.messages):
            if message.seq <= read:
                break
            uses = tool_uses(message.content) if message.role == "assistant" else []
            found = [t.step for u in uses if (t := self.tools.get(u["name"])) and t.step]
            if found:
                step = found[-1]
                break
        if transcript.messages:
            self._latest_step[run_id] = (transcript.messages[-1].seq, step)
        return self.store.runs.set_step(run_id, step, "waiting") if step else None

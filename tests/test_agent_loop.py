"""The loop with a scripted model: pause, durable resume, ordering, statuses, bounds."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.agent_loop import AgentLoop, Failed, Finished, Paused, Retrying
from bot.core.errors import ModelOverloadedError, ModelRequestError, ModelUnavailableError
from bot.core.runner import RetrySchedule
from bot.core.tools import ToolContext, ToolError, ToolRegistry
from bot.store import Store
from tests.conftest import (
    WI_QUESTION,
    RecordingPresenter,
    ScriptedModel,
    ask_input,
    scripted_loop,
    text,
    tool_use,
)


class Ledger:
    """Two small tools that count how often they really ran."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def registry(self) -> ToolRegistry:
        reg = ToolRegistry(["Intake", "Checks"])
        reg.add(self.load, step="Intake")
        reg.add(self.explode, step="Checks")
        return reg

    def load(self, ctx: ToolContext, period: str) -> dict[str, Any]:
        """Load a period.

        Args:
          period: YYYY-MM
        """
        self.calls.append(period)
        return {"period": period, "wells": 12}

    def explode(self, ctx: ToolContext, why: str = "") -> str:
        """Always fails."""
        if why == "refuse":
            raise ToolError("refused: not allowed")
        raise RuntimeError("boom")


def make_loop(
    store: Store, model: ScriptedModel, ledger: Ledger | None = None, **kw: Any
) -> tuple[AgentLoop, RecordingPresenter]:
    return scripted_loop(store, model, (ledger or Ledger()).registry(), **kw)


def new_run(store: Store) -> str:
    return store.runs.create(
        period="2026-10", mode="console", started_by="alice", model="scripted"
    ).id


def last_user_results(model: ScriptedModel) -> list[dict[str, Any]]:
    return model.history[-1]["messages"][-1]["content"]


def test_pause_is_persisted_and_a_fresh_store_and_loop_resume_with_the_labels(
    db_path: Path,
) -> None:
    store = Store(db_path)
    model = ScriptedModel()
    model.enqueue(text("Checking."), tool_use("t1", "ask_user_question", **ask_input(WI_QUESTION)))
    loop, presenter = make_loop(store, model)
    run_id = new_run(store)
    outcome = loop.start(run_id, "close 2026-10")
    assert outcome == Paused("t1")
    assert store.runs.get(run_id).status == "waiting"
    assert presenter.kinds() == ["text", "question"]
    store.close()

    # A new process: new Store, new model, new loop — only the file carries over.
    store2 = Store(db_path)
    store2.questions.claim(
        "t1",
        answer={
            "1": {
                "question": WI_QUESTION["question"],
                "selected": [1],
                "labels": ["Accept operator's decimal"],
            }
        },
        answered_by="U1",
        source="user",
    )
    model2 = ScriptedModel()
    model2.enqueue(text("Booked as billed."))
    loop2, presenter2 = make_loop(store2, model2)
    assert loop2.advance(run_id) == Finished("Booked as billed.")
    (result,) = last_user_results(model2)
    assert (
        result["type"] == "tool_result"
        and result["tool_use_id"] == "t1"
        and "is_error" not in result
    )
    body = json.loads(result["content"])
    assert body["status"] == "answered" and body["answered_by"] == "U1" and body["source"] == "user"
    assert body["answers"]["1"]["labels"] == ["Accept operator's decimal"]
    assert store2.runs.get(run_id).status == "done"
    assert presenter2.kinds()[-1] == "finished"


def test_tool_and_question_in_one_message_make_one_user_message_in_order(store: Store) -> None:
    ledger = Ledger()
    model = ScriptedModel()
    model.enqueue(
        tool_use("a", "load", period="2026-10"),
        tool_use("q", "ask_user_question", **ask_input(WI_QUESTION)),
        tool_use("b", "load", period="2026-09"),
    )
    loop, _ = make_loop(store, model, ledger)
    run_id = new_run(store)
    assert loop.start(run_id, "go") == Paused("q")
    assert ledger.calls == [
        "2026-10",
        "2026-09",
    ]  # ordinary tools ran and were stored before the pause
    assert (
        store.transcript.tool_result("a") is not None
        and store.transcript.tool_result("b") is not None
    )
    store.questions.claim(
        "q",
        answer={"1": {"question": "x", "selected": [2], "labels": ["Short-pay and dispute"]}},
        answered_by="U1",
        source="user",
    )
    model.enqueue(text("done"))
    loop.advance(run_id)
    assert ledger.calls == ["2026-10", "2026-09"]  # nothing ran twice on resume
    results = last_user_results(model)
    assert [r["tool_use_id"] for r in results] == ["a", "q", "b"]
    assert json.loads(results[0]["content"]) == {"period": "2026-10", "wells": 12}
    assert json.loads(results[1]["content"])["answers"]["1"]["labels"] == ["Short-pay and dispute"]
    roles = [m.role for m in store.transcript.messages(run_id)]
    assert roles == ["user", "assistant", "user", "assistant"]


@pytest.mark.parametrize("how", ["cancelled", "expired"])
def test_cancel_and_expiry_reach_the_model_as_explicit_statuses(store: Store, how: str) -> None:
    model = ScriptedModel()
    model.enqueue(tool_use("q", "ask_user_question", **ask_input(WI_QUESTION)))
    loop, _ = make_loop(store, model)
    run_id = new_run(store)
    loop.start(run_id, "go")
    if how == "cancelled":
        store.questions.cancel("q", cancelled_by="U1", source="user")
    else:
        store.questions.expire("q")
    model.enqueue(text("Left open."))
    loop.advance(run_id)
    body = json.loads(last_user_results(model)[0]["content"])
    assert body["status"] == how
    assert "answers" not in body and "Do not assume an answer" in body["message"]


def test_advance_while_still_pending_stays_paused_without_calling_the_model(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue(tool_use("q", "ask_user_question", **ask_input(WI_QUESTION)))
    loop, presenter = make_loop(store, model)
    run_id = new_run(store)
    loop.start(run_id, "go")
    assert loop.advance(run_id) == Paused("q")
    assert len(model.history) == 1
    assert presenter.kinds().count("question") == 1  # shown once, not again


def test_an_invalid_ask_goes_back_to_the_model_as_an_error(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue(
        tool_use(
            "q",
            "ask_user_question",
            context="c",
            questions=[{"question": "x", "options": [{"label": "only one"}]}],
        )
    )
    model.enqueue(text("fixed"))
    loop, presenter = make_loop(store, model)
    run_id = new_run(store)
    assert loop.start(run_id, "go") == Finished("fixed")
    (result,) = last_user_results(model)
    assert result["is_error"] is True
    assert "questions[1].options: 1 options, a choice question takes 2 to 100" in result["content"]
    assert "question" not in presenter.kinds() and store.questions.of_run(run_id) == []


def test_tool_failures_and_unknown_tools_are_results_the_model_reads(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue(
        tool_use("x1", "explode"),
        tool_use("x2", "explode", why="refuse"),
        tool_use("x3", "no_such_tool"),
        tool_use("x4", "load"),
        tool_use("x5", "load", period=2026, extra=True),
    )
    model.enqueue(text("ok"))
    loop, presenter = make_loop(store, model)
    run_id = new_run(store)
    loop.start(run_id, "go")
    results = {r["tool_use_id"]: r for r in last_user_results(model)}
    assert all(r["is_error"] for r in results.values())
    assert "RuntimeError: boom" in results["x1"]["content"]
    assert results["x2"]["content"] == "refused: not allowed"
    assert "unknown tool 'no_such_tool'" in results["x3"]["content"]
    assert "missing argument `period`" in results["x4"]["content"]
    assert (
        "unknown argument `extra`" in results["x5"]["content"]
        and "`period` must be a string" in results["x5"]["content"]
    )
    assert ("progress", {"Checks": "failed"}) in presenter.events


def test_steps_are_bounded(store: Store) -> None:
    model = ScriptedModel()
    for i in range(5):
        model.enqueue(tool_use(f"l{i}", "load", period="2026-10"))
    loop, presenter = make_loop(store, model, max_steps=3)
    run_id = new_run(store)
    outcome = loop.start(run_id, "go")
    assert isinstance(outcome, Failed) and "stopped after 3 steps" in outcome.error
    assert len(model.history) == 3
    assert store.runs.get(run_id).status == "failed" and presenter.kinds()[-1] == "failed"


def test_a_model_failure_fails_the_run_and_keeps_the_transcript_for_resume(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue(tool_use("l1", "load", period="2026-10"))
    model.enqueue_error(ModelRequestError("the Anthropic API rejected the request (413): too big"))
    loop, _ = make_loop(store, model)
    run_id = new_run(store)
    outcome = loop.start(run_id, "go")
    assert isinstance(outcome, Failed) and "413" in outcome.error
    assert store.runs.get(run_id).error == outcome.error
    model.enqueue(text("back"))
    assert loop.advance(run_id) == Finished("back")
    assert [m.role for m in store.transcript.messages(run_id)] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_an_overloaded_api_makes_the_run_wait_to_retry_with_backoff_not_fail(
    store: Store,
) -> None:
    model = ScriptedModel()
    model.enqueue(tool_use("l1", "load", period="2026-10"))
    model.enqueue_error(ModelOverloadedError("the Anthropic API is overloaded (529) after retries"))
    model.enqueue_error(
        ModelOverloadedError("the Anthropic API is overloaded (529) after retries", retry_after=600)
    )
    loop, presenter = make_loop(store, model)
    run_id = new_run(store)
    first = loop.start(run_id, "go")
    assert isinstance(first, Retrying) and "529" in first.error
    run = store.runs.get(run_id)
    assert run.status == "waiting" and run.retries == 1 and run.retry_at == first.at
    wait = datetime.fromisoformat(first.at) - datetime.fromisoformat(store.now())
    assert timedelta(seconds=25) < wait <= timedelta(seconds=30)  # the first wait: 30 s
    said = presenter.events[-1]
    assert said[0] == "text" and f"try again by myself at {first.at[11:16]} UTC" in said[1]
    assert "failed" not in presenter.kinds()
    second = loop.advance(run_id)  # the next try: twice the wait, or what the API asked
    assert isinstance(second, Retrying) and store.runs.get(run_id).retries == 2
    wait = datetime.fromisoformat(second.at) - datetime.fromisoformat(store.now())
    assert timedelta(seconds=595) < wait <= timedelta(seconds=600)  # retry-after: 600 s
    model.enqueue(text("back"))
    assert loop.advance(run_id) == Finished("back")
    run = store.runs.get(run_id)
    assert run.retries is None and run.retry_at is None  # answered: the count starts again
    assert [m.role for m in store.transcript.messages(run_id)] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    kinds = [e.kind for e in store.audit.events(run_id)]
    assert kinds.count("retry_scheduled") == 2


def test_after_the_last_scheduled_try_the_run_fails_and_waits_for_a_person(
    store: Store,
) -> None:
    model = ScriptedModel()
    for _ in range(3):
        model.enqueue_error(ModelUnavailableError("could not reach the Anthropic API"))
    loop, _ = make_loop(store, model, retry=RetrySchedule(tries=2))
    run_id = new_run(store)
    store.transcript.append(run_id, role="user", content=[text("go")])
    assert isinstance(loop.advance(run_id), Retrying)
    assert isinstance(loop.advance(run_id), Retrying)
    third = loop.advance(run_id)
    assert isinstance(third, Failed) and "could not reach the Anthropic API" in third.error
    assert "tried again 2 times" in third.error
    assert store.runs.get(run_id).status == "failed" and store.runs.get(run_id).retries is None


def test_progress_marks_the_step_in_hand_as_waiting_on_a_person(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue(tool_use("l1", "load", period="2026-10"))
    model.enqueue(tool_use("q", "ask_user_question", **ask_input(WI_QUESTION)))
    loop, presenter = make_loop(store, model)
    run_id = new_run(store)
    loop.start(run_id, "go")
    progress = [e for k, e in presenter.events if k == "progress"]
    assert progress == [{"Intake": "running"}, {"Intake": "done"}, {"Intake": "waiting"}]


def test_tools_get_their_schema_from_hints_and_docstring() -> None:
    schema = {s["name"]: s for s in Ledger().registry().schemas()}["load"]
    assert schema["description"] == "Load a period."
    assert schema["input_schema"] == {
        "type": "object",
        "properties": {"period": {"type": "string", "description": "YYYY-MM"}},
        "required": ["period"],
    }


def test_say_refuses_while_a_question_is_pending(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue(tool_use("q", "ask_user_question", **ask_input(WI_QUESTION)))
    loop, _ = make_loop(store, model)
    run_id = new_run(store)
    loop.start(run_id, "go")
    with pytest.raises(ValueError, match="must be answered first"):
        loop.say(run_id, "hello?")
    assert len(store.transcript.messages(run_id)) == 2


def test_two_asks_in_one_message_are_shown_one_at_a_time(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue(
        tool_use("q1", "ask_user_question", **ask_input(WI_QUESTION)),
        tool_use("q2", "ask_user_question", **ask_input(WI_QUESTION, context="Second.")),
    )
    loop, presenter = make_loop(store, model)
    run_id = new_run(store)
    assert loop.start(run_id, "go") == Paused("q1")
    assert [q.id for q in store.questions.of_run(run_id)] == ["q1"]  # the second is not asked yet
    store.questions.claim(
        "q1",
        answer={"1": {"question": "x", "selected": [1], "labels": ["Accept operator's decimal"]}},
        answered_by="U1",
        source="user",
    )
    assert loop.advance(run_id) == Paused("q2")
    assert presenter.kinds().count("question") == 2 and len(model.history) == 1
    store.questions.claim(
        "q2",
        answer={"1": {"question": "x", "selected": [2], "labels": ["Short-pay and dispute"]}},
        answered_by="U1",
        source="user",
    )
    model.enqueue(text("both done"))
    assert loop.advance(run_id) == Finished("both done")
    assert [r["tool_use_id"] for r in last_user_results(model)] == ["q1", "q2"]


def test_a_question_put_off_leaves_the_run_waiting_and_its_late_answer_reaches_the_model(
    store: Store,
) -> None:
    from bot.agent_loop import Finished, Waiting
    from bot.core.questions import late_answer_of

    model = ScriptedModel()
    model.enqueue(tool_use("q", "ask_user_question", **ask_input(WI_QUESTION)))
    loop, presenter = make_loop(store, model)
    run_id = new_run(store)
    loop.start(run_id, "go")
    store.questions.defer("q", deferred_by="U1", source="user")  # Cancel: not now
    model.enqueue(text("The WI question waits; nothing is drafted."))
    outcome = loop.advance(run_id)
    told = json.loads(last_user_results(model)[0]["content"])
    assert told["status"] == "deferred" and "Do not assume an answer" in told["message"]
    assert outcome == Waiting(text="The WI question waits; nothing is drafted.", deferred=("q",))
    assert store.runs.get(run_id).status == "waiting" and loop.parked(run_id)
    assert presenter.kinds()[-1] == "waiting" and "finished" not in presenter.kinds()
    calls = len(model.history)
    assert isinstance(loop.advance(run_id), Waiting) and len(model.history) == calls  # no model
    # Decide: the same question pending again, then answered
    store.questions.reopen("q", by="U1")
    assert not loop.parked(run_id) and store.questions.pending(run_id) is not None
    store.questions.claim(
        "q", answer={"1": {"labels": ["Hold in suspense"]}}, answered_by="U1", source="user"
    )
    model.enqueue(text("Recorded: held in suspense."))
    assert isinstance(loop.advance(run_id), Finished)
    late = model.history[-1]["messages"][-1]
    assert late["role"] == "user" and len(late["content"]) == 1
    body = late_answer_of(late["content"][0]["text"])
    assert body is not None and body["question_id"] == "q" and body["status"] == "answered"
    assert body["answers"]["1"]["labels"] == ["Hold in suspense"]
    assert store.questions.untold_answers(run_id) == []  # told once
    assert store.runs.get(run_id).status == "done"

"""Real Claude's rules (issue 28): the strict fake refuses what the documented API refuses, and
a Claude-driven close keeps to those rules — its prompt and tools kept for its whole life, a
run from before that resumes without its stale thinking, replies streamed, truncation taken
as such, only real model names pinned, passing API failures waited out and retried."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anthropic as sdk
import pytest

from bot.agent_loop import AgentLoop, Failed, Finished, Paused, Retrying
from bot.console.cli import main
from bot.core.errors import ModelOverloadedError
from bot.core.models import ClaudeModel
from bot.core.questions import TOOL_SCHEMA
from bot.core.tools import ToolContext, ToolRegistry
from bot.sandbox.slack_api import FakeSlack
from bot.store import Store
from tests.conftest import (
    WI_QUESTION,
    Clock,
    RecordingPresenter,
    ScriptedModel,
    ask_input,
    text,
)
from tests.fake_anthropic import BINDING_BETA, FakeAnthropic, fake_anthropic
from tests.slack_harness import Harness

MODEL = "claude-sonnet-5-5"
THOUGHT = {"type": "thinking", "thinking": "The WI differs from the DOI: ask."}
ASK = {
    "type": "tool_use",
    "id": "toolu_ask",
    "name": "ask_user_question",
    "input": ask_input(WI_QUESTION),
}
ANSWER = {"1": {"question": WI_QUESTION["question"], "selected": [1], "labels": ["Accept"]}}


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with fake_anthropic() as f:
        yield f


def claude(fake: FakeAnthropic, **kw: Any) -> ClaudeModel:
    return ClaudeModel(
        model=MODEL, api_key="sk-ant-test", base_url=fake.url, **{"max_retries": 0, **kw}
    )


def count_wells(ctx: ToolContext) -> str:
    """How many wells the period has."""
    return "13 wells"


def list_owners(ctx: ToolContext) -> str:
    """The owners of the period's wells (a tool a later release added)."""
    return "3 owners"


def loop_of(
    store: Store, model: Any, *, system: str = "You close books (v1).", extra: bool = False
) -> tuple[AgentLoop, RecordingPresenter]:
    registry = ToolRegistry()
    registry.add(count_wells)
    if extra:
        registry.add(list_owners)
    presenter = RecordingPresenter()
    loop = AgentLoop(
        store=store, model=model, tools=registry, presenter=presenter, system_prompt=system
    )
    return loop, presenter


def new_run(store: Store, model: str = MODEL) -> str:
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model=model)
    store.transcript.append(run.id, role="user", content=[text("Close 2026-10.")])
    return run.id


# -- the strict fake refuses what the API refuses ------------------------------------------

USER = [{"role": "user", "content": "hi"}]


def raw(fake: FakeAnthropic) -> sdk.Anthropic:
    return sdk.Anthropic(api_key="sk-ant-test", base_url=fake.url, max_retries=0)


@pytest.mark.parametrize(
    ("extra", "status", "says"),
    [
        ({"tool_choice": {"type": "tool", "name": "ask_user_question"}}, 400, "forced tool use"),
        ({"tool_choice": {"type": "any"}}, 400, "forced tool use"),
        ({"model": "offline-playbook"}, 404, "model: offline-playbook"),
        ({"thinking": {"type": "disabled"}}, 400, "thinking"),
        ({"thinking": {"type": "enabled", "budget_tokens": 2000}}, 400, "thinking"),
        ({"extra_body": {"temperature": 0.2}}, 400, "temperature"),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": " "}]}]},
            400,
            "must be non-empty",
        ),
        (
            {
                "messages": [
                    *USER,
                    {"role": "assistant", "content": [{**ASK, "input": {}}]},
                    {"role": "user", "content": "go on"},
                ]
            },
            400,
            "without `tool_result`",
        ),
        (
            {
                "system": [
                    {"type": "text", "text": f"s{i}", "cache_control": {"type": "ephemeral"}}
                    for i in range(5)
                ]
            },
            400,
            "maximum of 4 blocks with cache_control",
        ),
    ],
)
def test_the_fake_refuses_what_the_documented_api_refuses(
    api: FakeAnthropic, extra: dict[str, Any], status: int, says: str
) -> None:
    api.reply(text("never sent"))
    request: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 100,
        "messages": USER,
        "tools": [TOOL_SCHEMA],
        **extra,
    }
    with pytest.raises(sdk.APIStatusError) as refused:
        raw(api).messages.create(**request)
    assert refused.value.status_code == status and says in str(refused.value)
    assert len(api.answers) == 1  # the scripted reply is still there: the rules answered


def test_a_thinking_block_is_bound_to_system_tools_and_the_messages_before_it(
    api: FakeAnthropic,
) -> None:
    api.reply(THOUGHT, text("Thirteen."))
    first = raw(api).messages.create(model=MODEL, max_tokens=100, system="v1", messages=USER)
    thought = first.content[0].model_dump(exclude_none=True)
    assert thought["signature"].startswith(MODEL + ":")
    history = [
        *USER,
        {"role": "assistant", "content": [thought, {"type": "text", "text": "Thirteen."}]},
    ]
    history.append({"role": "user", "content": "and owners?"})
    for _ in range(3):
        api.reply(text("Three."))
    same = raw(api).messages.create(model=MODEL, max_tokens=100, system="v1", messages=history)
    assert same.content[0].model_dump()["text"] == "Three."
    with pytest.raises(sdk.BadRequestError, match="bound to a different conversation"):
        raw(api).messages.create(model=MODEL, max_tokens=100, system="v2", messages=history)
    # the documented way out for a changed prefix: drop the block (with the beta header)
    dropped = raw(api).messages.create(
        model=MODEL,
        max_tokens=100,
        system="v2",
        messages=history,
        thinking={"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}},  # type: ignore[typeddict-unknown-key]
        extra_headers={"anthropic-beta": BINDING_BETA},
    )
    assert dropped.content[0].model_dump()["text"] == "Three."


# -- the prompt a run keeps ------------------------------------------------------------------


def test_a_paused_claude_run_resumes_after_an_upgrade_changed_its_prompt_and_tools(
    db_path: Path, api: FakeAnthropic
) -> None:
    store = Store(db_path)
    run_id = new_run(store)
    api.reply(THOUGHT, ASK, stop_reason="tool_use")
    loop, _ = loop_of(store, claude(api))
    assert loop.advance(run_id) == Paused("toolu_ask")
    store.close()

    # The upgrade: a new release with a new system prompt and one more tool; then the answer.
    store = Store(db_path)
    store.questions.claim("toolu_ask", answer=ANSWER, answered_by="UALICE", source="user")
    api.reply(text("Booked as billed; October is closed."))
    loop, _ = loop_of(store, claude(api), system="You close books (v2).", extra=True)
    outcome = loop.advance(run_id)
    assert isinstance(outcome, Finished), outcome
    assert api.refused == []
    first, second = api.requests
    assert second["system"][0]["text"] == "You close books (v1)."  # the copy it started with
    assert [t["name"] for t in second["tools"]] == [t["name"] for t in first["tools"]]
    assert second["messages"][1]["content"][0]["type"] == "thinking"  # sent back, and accepted
    store.close()


def test_a_run_from_before_prompts_were_kept_resumes_without_its_stale_thinking(
    db_path: Path, api: FakeAnthropic
) -> None:
    store = Store(db_path)
    run_id = new_run(store)
    api.reply(THOUGHT, ASK, stop_reason="tool_use")
    loop, _ = loop_of(store, claude(api))
    assert loop.advance(run_id) == Paused("toolu_ask")
    with store.write() as db:  # as an earlier release left it: no copy of its prompt kept
        db.execute("delete from run_prompts where run_id = ?", (run_id,))
    store.questions.claim("toolu_ask", answer=ANSWER, answered_by="UALICE", source="user")
    api.reply(THOUGHT, text("Booked as billed."), stop_reason="end_turn")
    loop, _ = loop_of(store, claude(api), system="You close books (v2).", extra=True)
    assert isinstance(loop.advance(run_id), Finished)
    assert api.refused == []
    sent = api.requests[1]["messages"]
    assert [b["type"] for b in sent[1]["content"]] == ["tool_use"]  # the stale thinking left out
    kept = store.runs.prompt(run_id)
    assert kept is not None and kept.system == "You close books (v2)."
    assert kept.stale_thinking_before == 3  # after the 2 messages there were when it resumed
    # the stored transcript keeps everything: only what is sent leaves the thinking out
    assert store.transcript.messages(run_id)[1].content[0]["type"] == "thinking"
    store.close()


# -- replies: streamed, truncated, pinned --------------------------------------------------


def test_a_slow_reply_is_streamed_and_never_abandoned_for_time(api: FakeAnthropic) -> None:
    # the whole reply takes ~2.4 s; each event arrives within the 1 s timeout
    api.reply(THOUGHT, text("All thirteen wells reconciled."), gap=0.2)
    reply = claude(api, timeout=1.0).respond(system="s", messages=USER, tools=[])
    assert reply.content[-1] == {"type": "text", "text": "All thirteen wells reconciled."}
    assert api.requests[0]["stream"] is True and len(api.requests) == 1
    assert reply.usage["thinking_tokens"] == 7 and reply.usage["output_tokens"] == 12


def test_a_reply_cut_off_by_the_context_window_is_not_a_finished_close(
    store: Store, api: FakeAnthropic
) -> None:
    api.reply(text("October is clo"), stop_reason="model_context_window_exceeded")
    loop, presenter = loop_of(store, claude(api))
    outcome = loop.advance(new_run(store))
    assert isinstance(outcome, Failed) and "model_context_window_exceeded" in outcome.error
    assert "finished" not in presenter.kinds()


def test_pause_turn_through_the_sdk_continues_the_turn_with_the_paused_reply_sent_back(
    store: Store, api: FakeAnthropic
) -> None:
    api.reply(THOUGHT, text("Reconciling the long JIB…"), stop_reason="pause_turn")
    api.reply(text("October is closed."))
    loop, _ = loop_of(store, claude(api))
    outcome = loop.advance(new_run(store))
    assert isinstance(outcome, Finished) and outcome.text.startswith("October is closed.")
    again = api.requests[1]["messages"][-1]
    assert again["role"] == "assistant" and again["content"][0]["type"] == "thinking"
    assert api.refused == []  # the paused reply, thinking and all, went back as it came


def test_a_run_begun_offline_and_resumed_with_a_key_goes_on_with_the_real_model(
    store: Store, api: FakeAnthropic
) -> None:
    run_id = new_run(store, model="offline-playbook")
    api.reply(text("October is closed."))
    loop, _ = loop_of(store, claude(api))
    assert isinstance(loop.advance(run_id), Finished)
    assert api.requests[0]["model"] == MODEL and api.refused == []
    assert store.runs.get(run_id).model == MODEL  # its cost is priced on the model it used


def test_transient_failures_through_the_sdk_make_the_run_wait_with_the_apis_retry_after(
    store: Store, api: FakeAnthropic
) -> None:
    api.fail(529, "overloaded_error", "Overloaded", retry_after=45)
    loop, _ = loop_of(store, claude(api))
    run_id = new_run(store)
    outcome = loop.advance(run_id)
    assert isinstance(outcome, Retrying) and "overloaded (529)" in outcome.error
    assert store.runs.get(run_id).status == "waiting" and len(api.requests) == 1
    wait = datetime.fromisoformat(outcome.at) - datetime.fromisoformat(store.now())
    assert timedelta(seconds=40) < wait <= timedelta(seconds=45)  # as the API asked, not 30 s
    out = io.StringIO()
    assert main(["runs"], out=out) == 0
    assert "waiting   console  alice" in out.getvalue()
    assert f"(retrying the model at {outcome.at[11:16]} UTC)" in out.getvalue()


# -- in Slack: the thread says so and when; it resumes by itself, across a restart ---------


def test_an_overloaded_api_in_slack_waits_says_when_and_resumes_by_itself(
    fake: FakeSlack, db_path: Path
) -> None:
    clock = Clock()
    model = ScriptedModel()
    model.enqueue_error(ModelOverloadedError("the Anthropic API is overloaded (529) after retries"))
    model.enqueue(text("October is closed."))
    h = Harness(fake, db_path, model=model, clock=clock)
    try:
        run = h.start()
        waiting = h.store.runs.get(run.id)
        assert waiting.status == "waiting" and waiting.retry_at is not None
        when = waiting.retry_at[11:16]
        shown = " ".join(h.thread_texts(run))
        assert f"try again by myself at {when} UTC" in shown
        assert f"waiting to retry at {when} UTC" in h.status(run)  # not "waiting on you"
        assert "waiting on you" not in h.status(run)
        root = json.dumps(h.message(run.thread_ts or "")["blocks"], ensure_ascii=False)
        assert f"Waiting to retry the model at {when} UTC" in root and "Waiting on" not in root
        assert "The close stopped" not in shown
        assert h.service.work.heal()["runs"] == []  # not yet due
    finally:
        h.close()

    # A restart before it is due keeps the schedule: nothing is tried early.
    h = Harness(fake, db_path, model=model, clock=clock)
    try:
        assert run.id not in h.service.work.recover()
        h.idle()
        assert h.store.runs.get(run.id).status == "waiting" and len(model.replies) == 1
        clock.advance(seconds=31)
        assert h.service.work.heal()["runs"] == [run.id]
        h.idle()
        done = h.store.runs.get(run.id)
        assert done.status == "done" and done.retry_at is None and done.retries is None
    finally:
        h.close()

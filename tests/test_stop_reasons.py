"""The model's own signals: stop reasons, empty and malformed replies, thinking, the pinned model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.agent_loop import Failed, Finished
from bot.core.models import DEFAULT_MAX_TOKENS, ClaudeModel
from bot.sandbox.slack_api import FakeSlack
from bot.store import Store
from tests.conftest import ScriptedModel, scripted_loop, text, tool_use
from tests.fake_anthropic import FakeAnthropic, fake_anthropic
from tests.slack_harness import Harness

THINKING = {
    "type": "thinking",
    "thinking": "Compare the JIB decimal with the DOI.",
    "signature": "sig-abc",
}


def new_run(store: Store, model: str = "scripted") -> str:
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model=model)
    store.transcript.append(run.id, role="user", content=[text("Close 2026-10.")])
    return run.id


@pytest.mark.parametrize(
    ("content", "stop_reason", "reason"),
    [
        (
            [text("Half a sentence")],
            "max_tokens",
            "cut off at its output limit (stop_reason: max_tokens)",
        ),
        (
            [text("I can't help with that.")],
            "refusal",
            "refused to continue this close (stop_reason: refusal)",
        ),
        ([], "end_turn", "empty reply"),
        ([text("   ")], "end_turn", "empty reply"),
        ([THINKING], "end_turn", "ended its turn without a word"),
        (
            [{"type": "tool_use", "name": "no_such_tool", "input": {}}],
            "tool_use",
            "malformed tool call",
        ),
        ([{"type": "tool_use", "id": "toolu_1", "input": {}}], "tool_use", "malformed tool call"),
    ],
)
def test_an_unusable_reply_fails_the_run_with_its_reason_and_is_not_kept(
    store: Store, content: list[dict[str, Any]], stop_reason: str, reason: str
) -> None:
    model = ScriptedModel()
    model.enqueue_reply(*content, stop_reason=stop_reason)
    model.enqueue(text("Done properly."))
    loop, presenter = scripted_loop(store, model)
    run_id = new_run(store)
    outcome = loop.advance(run_id)
    assert isinstance(outcome, Failed) and reason in outcome.error
    assert "finished" not in presenter.kinds()  # never "finished" with a ✅
    assert [m.role for m in store.transcript.messages(run_id)] == [
        "user"
    ]  # nothing of it was stored
    assert store.runs.get(run_id).status == "failed"
    assert isinstance(loop.advance(run_id), Finished)  # a retry asks the model again


def test_pause_turn_continues_the_turn(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue_reply(text("Working on the long part…"), stop_reason="pause_turn")
    model.enqueue(text("Finished the long part."))
    loop, presenter = scripted_loop(store, model)
    run_id = new_run(store)
    outcome = loop.advance(run_id)
    assert isinstance(outcome, Finished) and outcome.text == "Finished the long part."
    assert model.history[1]["messages"][-1]["role"] == "assistant"  # continued, not restarted
    assert ("text", "Working on the long part…") in presenter.events


def test_thinking_between_tool_calls_is_narrated_and_kept_intact(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue(THINKING, tool_use("toolu_1", "no_such_tool"))
    model.enqueue(text("Done."))
    loop, presenter = scripted_loop(store, model)
    run_id = new_run(store)
    assert isinstance(loop.advance(run_id), Finished)
    assert ("text", "_Compare the JIB decimal with the DOI._") in presenter.events
    assert store.transcript.messages(run_id)[1].content[0] == THINKING  # signature and all
    assert model.history[1]["messages"][1]["content"][0] == THINKING  # sent back untouched


# -- through the real SDK --------------------------------------------------------------


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with fake_anthropic() as f:
        yield f


def claude(
    fake: FakeAnthropic, name: str = "claude-sonnet-5-5", effort: str = "medium"
) -> ClaudeModel:
    return ClaudeModel(
        model=name,
        api_key="sk-ant-test",
        base_url=fake.url,
        max_retries=0,
        timeout=10,
        effort=effort,
    )


def test_a_tool_use_without_an_id_from_the_api_is_a_model_error_not_a_dead_job(
    store: Store, anthropic: FakeAnthropic
) -> None:
    anthropic.reply(
        {"type": "tool_use", "name": "load_period", "input": {}}, stop_reason="tool_use"
    )
    loop, _ = scripted_loop(store, ScriptedModel())
    loop.model = claude(anthropic)
    run_id = new_run(store, model="claude-sonnet-5-5")
    outcome = loop.advance(run_id)
    assert isinstance(outcome, Failed) and "malformed tool call" in outcome.error


def test_refusal_and_max_tokens_from_the_api_fail_the_run(
    store: Store, anthropic: FakeAnthropic
) -> None:
    anthropic.reply({"type": "text", "text": "No."}, stop_reason="refusal")
    anthropic.reply({"type": "text", "text": "The summary is"}, stop_reason="max_tokens")
    loop, _ = scripted_loop(store, ScriptedModel())
    loop.model = claude(anthropic)
    run_id = new_run(store, model="claude-sonnet-5-5")
    first, second = loop.advance(run_id), loop.advance(run_id)
    assert isinstance(first, Failed) and "refusal" in first.error
    assert isinstance(second, Failed) and "max_tokens" in second.error


def test_the_model_thinks_with_room_and_the_configured_effort(anthropic: FakeAnthropic) -> None:
    anthropic.reply({"type": "text", "text": "ok"})
    claude(anthropic, effort="high").respond(
        system="s", messages=[{"role": "user", "content": "hi"}], tools=[]
    )
    (sent,) = anthropic.requests
    assert sent["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert sent["output_config"] == {"effort": "high"}
    assert sent["max_tokens"] == DEFAULT_MAX_TOKENS >= 16_000


def test_a_run_resumes_on_the_model_that_began_it(store: Store, anthropic: FakeAnthropic) -> None:
    anthropic.reply({"type": "text", "text": "Done on the old model."})
    loop, _ = scripted_loop(store, ScriptedModel())
    loop.model = claude(anthropic, name="claude-sonnet-5-5")  # the deploy moved on
    run_id = new_run(store, model="claude-opus-4-7")  # the run began on this one
    assert isinstance(loop.advance(run_id), Finished)
    assert anthropic.requests[0]["model"] == "claude-opus-4-7"


# -- in Slack: no ✅ for a refusal ---------------------------------------------------------


def test_a_refusal_in_slack_gets_no_checkmark_but_a_reason_and_retry(
    fake: FakeSlack, db_path: Path
) -> None:
    model = ScriptedModel()
    model.enqueue_reply(text("I won't."), stop_reason="refusal")
    h = Harness(fake, db_path, model=model)
    try:
        run = h.start()
        assert h.store.runs.get(run.id).status == "failed"
        assert fake.to("reactions.add") == [] and fake.to("files.completeUploadExternal") == []
        failure = next(
            m for m in fake.thread(run.thread_ts or "") if "The close stopped" in m["text"]
        )
        assert (
            "refusal" in failure["text"]
            and failure["blocks"][-1]["elements"][0]["text"]["text"] == "Retry"
        )
    finally:
        h.close()


@pytest.mark.parametrize("tool", ["load_period", "ask_user_question", "no_such_tool"])
def test_a_tool_use_whose_input_is_a_list_gets_an_error_result_the_model_can_fix(
    store: Store, anthropic: FakeAnthropic, tool: str
) -> None:
    anthropic.reply(
        {"type": "tool_use", "id": "toolu_1", "name": tool, "input": ["2026-10"]},
        stop_reason="tool_use",
    )
    anthropic.reply({"type": "text", "text": "Fixed and done."})
    loop, _ = scripted_loop(store, ScriptedModel())
    loop.model = claude(anthropic)
    run_id = new_run(store, model="claude-sonnet-5-5")
    outcome = loop.advance(run_id)
    assert isinstance(outcome, Finished) and outcome.text.startswith("Fixed and done.")
    (result,) = anthropic.requests[1]["messages"][-1]["content"]
    assert result["type"] == "tool_result" and result["is_error"] is True
    assert "must be a JSON object" in result["content"] or "unknown tool" in result["content"]
    sent_back = anthropic.requests[1]["messages"][-2]["content"][0]
    assert isinstance(sent_back["input"], dict)  # the API takes only an object back
    assert store.questions.pending(run_id) is None  # nothing was asked of anyone

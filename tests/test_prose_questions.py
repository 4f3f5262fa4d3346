"""Seed 001's question detector: a turn that ends on a question in prose becomes a form, the
model asked once more to use ask_user_question — nudged (tool_choice auto), never forced, which
the default model refuses with a 400 (through the real SDK, against the strict fake)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.agent_loop import RESTATE, Finished, Paused, asks_in_prose
from bot.core.models import ClaudeModel
from bot.core.questions import COMPLEXITY_MINUTES
from bot.sandbox.slack_api import FakeSlack
from bot.store import Store
from tests.conftest import ScriptedModel, ask_input, scripted_loop, text, tool_use
from tests.fake_anthropic import FakeAnthropic, fake_anthropic
from tests.slack_harness import Harness

ASK = {
    "context": "Reyes 9-2H is a new well: September production, no check yet.",
    "questions": [
        {
            "question": "Accrue Reyes 9-2H's September oil on operator volumes?",
            "options": [
                {
                    "label": "Accrue",
                    "description": "Dr 1210 / Cr 4010 $41,210.00",
                    "confidence": 0.8,
                },
                {"label": "Wait for the first check", "confidence": 0.2},
            ],
            "recommended": 1,
            "reasoning": "Production is reported; revenue is earned.",
        }
    ],
}


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with fake_anthropic() as f:
        yield f


def claude(fake: FakeAnthropic) -> ClaudeModel:
    return ClaudeModel(
        model="claude-sonnet-5-5", api_key="sk-ant-test", base_url=fake.url, max_retries=0
    )


def new_run(store: Store) -> str:
    run = store.runs.create(
        period="2026-10", mode="console", started_by="alice", model="claude-sonnet-5-5"
    )
    store.transcript.append(run.id, role="user", content=[text("Close 2026-10.")])
    return run.id


def test_a_question_in_prose_becomes_a_form(store: Store, anthropic: FakeAnthropic) -> None:
    anthropic.reply(text("Reyes 9-2H has production but no check. Should I accrue Reyes 9-2H?"))
    anthropic.reply(
        {"type": "tool_use", "id": "toolu_ask", "name": "ask_user_question", "input": ASK},
        stop_reason="tool_use",
    )
    loop, presenter = scripted_loop(store, ScriptedModel())
    loop.model = claude(anthropic)
    run_id = new_run(store)
    outcome = loop.advance(run_id)
    assert isinstance(outcome, Paused) and outcome.question_id == "toolu_ask"
    first, second = anthropic.requests
    assert "tool_choice" not in first and "thinking" in first
    # asked once more, nudged with auto and still thinking: forced tool choice returns a 400
    # on the default model (the strict fake refuses it as the API does)
    assert second["tool_choice"] == {"type": "auto"}
    assert second["thinking"] == first["thinking"]
    assert anthropic.refused == []
    assert second["messages"][-1]["content"][0]["text"] == RESTATE
    assert second["messages"][-2]["content"][0]["text"].endswith("Should I accrue Reyes 9-2H?")
    record = store.questions.get("toolu_ask")
    assert record.status == "pending" and record.questions[0]["options"][0]["confidence"] == 0.8
    assert store.runs.get(run_id).status == "waiting"
    assert "question" in presenter.kinds()


def test_it_is_asked_once_and_a_statement_just_finishes(
    store: Store, anthropic: FakeAnthropic
) -> None:
    anthropic.reply(text("Shall I go on?"))
    anthropic.reply(text("Nothing to ask after all; the close is done."))  # ignores the nudge
    anthropic.reply(text("October is closed."))
    loop, _ = scripted_loop(store, ScriptedModel())
    loop.model = claude(anthropic)
    first = loop.advance(new_run(store))
    assert isinstance(first, Finished) and len(anthropic.requests) == 2
    second = loop.advance(new_run(store))
    assert isinstance(second, Finished) and len(anthropic.requests) == 3
    assert "tool_choice" not in anthropic.requests[2]


@pytest.mark.parametrize(
    ("said", "asks"),
    [
        ("Should I accrue Reyes 9-2H?", True),
        ("Two options:\n- accrue\n- wait\n\nWhich do you prefer?**", True),
        ("Done. Was it right to wait? Yes, per the JOA.", False),
        ("October is closed.", False),
        ("", False),
    ],
)
def test_the_detector_reads_the_last_words(said: str, asks: bool) -> None:
    assert asks_in_prose(said) is asks


def test_complexity_sets_the_wait_shown_as_a_deadline_and_a_message_extends_it(
    fake: FakeSlack, db_path: Path
) -> None:
    """Timeouts on: a high-complexity question waits its complexity's time, the form shows
    the deadline as a Slack date, and a message from someone who may answer moves it later."""
    now = [datetime(2026, 11, 2, 9, 0, tzinfo=UTC)]
    model = ScriptedModel()
    question = {**ASK["questions"][0], "complexity": "high"}
    model.enqueue(tool_use("toolu_q", "ask_user_question", **ask_input(question)))
    h = Harness(
        fake, db_path, model=model, clock=lambda: now[0], CLOSEBOT_QUESTION_TIMEOUT_MINUTES="60"
    )
    try:
        run = h.start()
        record = h.store.questions.get("toolu_q")
        due = now[0] + timedelta(minutes=COMPLEXITY_MINUTES["high"])
        assert datetime.fromisoformat(record.expires_at or "") == due
        form = json.dumps(h.form_of("toolu_q")["blocks"])
        assert f"<!date^{int(due.timestamp())}^" in form
        now[0] += timedelta(minutes=100)
        h.say(run, "Checking the operator's production report first.")
        h.idle()
        later = h.store.questions.get("toolu_q").expires_at or ""
        assert datetime.fromisoformat(later) == now[0] + timedelta(
            minutes=COMPLEXITY_MINUTES["high"]
        )
        moved = now[0] + timedelta(minutes=COMPLEXITY_MINUTES["high"])
        assert f"<!date^{int(moved.timestamp())}^" in json.dumps(h.form_of("toolu_q")["blocks"])
        h.say(run, "stranger", user="UMALLORY")  # someone who may not answer moves nothing
        h.idle()
        assert h.store.questions.get("toolu_q").expires_at == later
    finally:
        h.close()

"""The Claude adapter, through the real anthropic SDK, against a loopback Messages API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.agent_loop import AgentLoop, Paused
from bot.close.prompts import SYSTEM_PROMPT
from bot.close.toolset import CloseTools
from bot.core.errors import ModelAuthError, ModelOverloadedError, ModelRequestError
from bot.core.models import ClaudeModel
from bot.core.questions import TOOL_SCHEMA
from bot.store import Store
from tests.conftest import RecordingPresenter
from tests.fake_anthropic import FakeAnthropic, fake_anthropic

TOOLS = [
    {
        "name": "load_period",
        "description": "d",
        "input_schema": {"type": "object", "properties": {}},
    },
    TOOL_SCHEMA,
]
MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "Run the close for 2026-10."}]}]


def model_for(fake: FakeAnthropic, retries: int = 2) -> ClaudeModel:
    return ClaudeModel(
        model="claude-sonnet-5-5",
        api_key="sk-ant-test",
        base_url=fake.url,
        max_retries=retries,
        timeout=10,
    )


def test_a_reply_comes_back_as_plain_blocks_and_cache_control_is_sent() -> None:
    with fake_anthropic() as fake:
        fake.reply(
            {"type": "text", "text": "Loading."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "load_period",
                "input": {"period": "2026-10"},
            },
            stop_reason="tool_use",
        )
        reply = model_for(fake).respond(system="You close books.", messages=MESSAGES, tools=TOOLS)
    assert reply.content == [
        {"type": "text", "text": "Loading."},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "load_period",
            "input": {"period": "2026-10"},
        },
    ]
    assert reply.stop_reason == "tool_use" and reply.usage["cache_creation_input_tokens"] == 8
    (sent,) = fake.requests
    assert sent["model"] == "claude-sonnet-5-5"
    # The conversation is cached too: a breakpoint on the last block of the last message.
    assert sent["messages"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "Run the close for 2026-10.",
                    "cache_control": {"type": "ephemeral", "ttl": "1h"},
                }
            ],
        }
    ]
    assert "cache_control" not in MESSAGES[0]["content"][0]  # the transcript is not mutated
    assert sent["system"] == [
        {
            "type": "text",
            "text": "You close books.",
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        }
    ]
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "cache_control" not in sent["tools"][0]
    assert "cache_control" not in TOOLS[-1]  # the caller's schemas are not mutated
    assert "sk-ant-test" in (
        fake.headers[0].get("x-api-key", "") + fake.headers[0].get("authorization", "")
    )


def test_529_overloaded_is_answered_by_a_retry() -> None:
    with fake_anthropic() as fake:
        fake.fail(529, "overloaded_error", "Overloaded")
        fake.reply({"type": "text", "text": "Back."})
        reply = model_for(fake).respond(system="s", messages=MESSAGES, tools=TOOLS)
    assert reply.content == [{"type": "text", "text": "Back."}]
    assert len(fake.requests) == 2
    assert fake.headers[1].get("x-stainless-retry-count") == "1"


def test_529_past_the_retries_is_a_named_error() -> None:
    with fake_anthropic() as fake:
        for _ in range(3):
            fake.fail(529, "overloaded_error", "Overloaded")
        with pytest.raises(
            ModelOverloadedError, match=r"overloaded \(529\) after retries: Overloaded"
        ):
            model_for(fake, retries=2).respond(system="s", messages=MESSAGES, tools=TOOLS)
    assert len(fake.requests) == 3


@pytest.mark.parametrize(
    ("status", "kind", "error"),
    [
        (401, "authentication_error", ModelAuthError),
        (400, "invalid_request_error", ModelRequestError),
    ],
)
def test_client_errors_map_to_the_hierarchy_without_retrying(
    status: int, kind: str, error: type[Exception]
) -> None:
    with fake_anthropic() as fake:
        fake.fail(status, kind, "nope")
        with pytest.raises(error, match="nope"):
            model_for(fake).respond(system="s", messages=MESSAGES, tools=TOOLS)
    assert len(fake.requests) == 1


def test_an_unreachable_api_is_a_named_error() -> None:
    from bot.core.errors import ModelUnavailableError

    model = ClaudeModel(
        model="m", api_key="k", base_url="http://127.0.0.1:9", max_retries=0, timeout=2
    )
    with pytest.raises(ModelUnavailableError, match="could not reach"):
        model.respond(system="s", messages=MESSAGES, tools=TOOLS)


def test_claude_drives_the_loop_to_a_question_through_the_sdk(db_path: Path) -> None:
    store = Store(db_path)
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="claude")
    with fake_anthropic() as fake:
        fake.reply(
            {
                "type": "tool_use",
                "id": "toolu_a",
                "name": "load_period",
                "input": {"period": "2026-10"},
            },
            stop_reason="tool_use",
        )
        fake.reply(
            {"type": "text", "text": "One question."},
            {
                "type": "tool_use",
                "id": "toolu_q",
                "name": "ask_user_question",
                "input": {
                    "context": "WI check",
                    "questions": [
                        {"question": "Post?", "options": [{"label": "Approve"}, {"label": "Keep"}]}
                    ],
                },
            },
            stop_reason="tool_use",
        )
        loop = AgentLoop(
            store=store,
            model=model_for(fake),
            tools=CloseTools().registry(),
            presenter=RecordingPresenter(),
            system_prompt=SYSTEM_PROMPT,
        )
        assert loop.start(run.id, "Run the close for 2026-10.") == Paused("toolu_q")
    second = fake.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    (result,) = second[2]["content"]
    assert result["tool_use_id"] == "toolu_a" and json.loads(result["content"])["wells"] == 13
    assert {t["name"] for t in fake.requests[0]["tools"]} >= {
        "load_period",
        "validate_interests",
        "ask_user_question",
    }

"""Token usage: recorded per model call and per run, shown in the summary and `closebot runs`;
the conversation carries a cache breakpoint on its last message."""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path

import pytest

from bot.agent_loop import AgentLoop, Finished
from bot.console.cli import main
from bot.core.models import ClaudeModel, estimated_cost, with_conversation_breakpoint
from bot.core.prices import cost, cost_by_model, dollars
from bot.core.tools import ToolContext, ToolRegistry
from bot.store import Store
from tests.conftest import RecordingPresenter
from tests.fake_anthropic import fake_anthropic


def count_wells(ctx: ToolContext) -> str:
    """How many wells the period has."""
    return "13 wells"


def test_a_claude_close_records_its_tokens_and_the_summary_and_runs_show_them(
    db_path: Path,
) -> None:
    store = Store(db_path)
    registry = ToolRegistry()
    registry.add(count_wells)
    run = store.runs.create(
        period="2026-10", mode="console", started_by="alice", model="claude-sonnet-5-5"
    )
    presenter = RecordingPresenter()
    with fake_anthropic() as fake:
        fake.reply(
            {"type": "tool_use", "id": "toolu_1", "name": "count_wells", "input": {}},
            stop_reason="tool_use",
            usage={"input_tokens": 1000, "output_tokens": 500, "cache_write": 8000},
        )
        fake.reply(
            {"type": "thinking", "thinking": "Thirteen wells, done."},  # 3 thinking tokens
            {"type": "text", "text": "October is closed."},
            usage={"input_tokens": 2000, "output_tokens": 700, "cache_read": 100_000}
            | {"cache_5m": 1000, "cache_1h": 50_000},
        )
        loop = AgentLoop(
            store=store,
            model=ClaudeModel(
                model="claude-sonnet-5-5", api_key="sk-ant-test", base_url=fake.url, timeout=10
            ),
            tools=registry,
            presenter=presenter,
            system_prompt="You close books.",
        )
        outcome = loop.start(run.id, "Close October.")

    # As the API reported them: thinking inside output_tokens, the 1-hour writes inside
    # cache_creation_input_tokens (the first call's 8,000 went to the 1-hour cache its
    # breakpoints asked for; the second wrote 1,000 to the 5-minute one and 50,000 to the hour).
    usage = {
        "input_tokens": 3000,
        "output_tokens": 1203,
        "cache_read_input_tokens": 100_000,
        "cache_creation_input_tokens": 59_000,
        "cache_write_1h_input_tokens": 58_000,
        "thinking_tokens": 3,
    }
    assert store.transcript.usage(run.id) == (2, usage)
    assert isinstance(outcome, Finished)
    assert outcome.text.startswith("October is closed.")
    # Claude Sonnet 5.5 at the documented prices (US$ per million tokens): input 2, output 10
    # (thinking too), 5-minute cache write 2.50, 1-hour cache write 4, cache read 0.10.
    expected = (3000 * 2 + 1203 * 10 + 1000 * 2.5 + 58_000 * 4 + 100_000 * 0.10) / 1_000_000
    assert expected == 0.262530
    assert estimated_cost("claude-sonnet-5-5", usage) == expected
    assert (
        "Model use: 2 calls, 162,000 input tokens, 62% of input read from cache, "
        "1,203 output tokens (3 of them thinking); cost $0.26 at list price"
    ) in outcome.text
    shown = [text for kind, text in presenter.events if kind == "finished"]
    assert len(shown) == 1 and shown[0].startswith(outcome.text)  # then the audit seal
    assert "\n\nAudit seal: 2 events" in shown[0]

    # The second call marks the tool_result (the conversation's end) for caching, and the
    # stored transcript carries no breakpoint.
    last = fake.requests[1]["messages"][-1]["content"][-1]
    assert last["type"] == "tool_result" and last["cache_control"] == {
        "type": "ephemeral",
        "ttl": "1h",
    }
    assert all(
        "cache_control" not in b for m in store.transcript.messages(run.id) for b in m.content
    )
    store.close()

    out = io.StringIO()
    assert main(["runs"], out=out) == 0
    assert "2 calls, 162,000 in (62% cached) / 1,203 out, $0.26" in out.getvalue()


M = 1_000_000


@pytest.mark.parametrize(
    ("model", "input", "output", "write_5m", "write_1h", "read"),
    [
        # https://platform.claude.com/docs/en/about-claude/pricing and each model's page
        ("claude-sonnet-5-5", "2", "10", "2.50", "4", "0.10"),
        ("claude-sonnet-5", "2", "10", "2.50", "4", "0.20"),
        ("claude-opus-5-5", "4", "20", "5", "8", "0.20"),
        ("claude-opus-5", "5", "25", "6.25", "10", "0.50"),
        ("claude-fable-5-1", "10", "50", "12.50", "20", "0.25"),
        ("claude-haiku-4-5", "1", "5", "1.25", "2", "0.10"),
        ("claude-sonnet-4-6", "3", "15", "3.75", "6", "0.30"),
        ("claude-sonnet-5-5-20260928", "2", "10", "2.50", "4", "0.10"),  # a dated id
    ],
)
def test_the_price_table_is_the_documented_one(
    model: str, input: str, output: str, write_5m: str, write_1h: str, read: str
) -> None:
    assert cost(model, {"input_tokens": M}) == Decimal(input)
    assert cost(model, {"output_tokens": M, "thinking_tokens": M // 2}) == Decimal(output)
    assert cost(model, {"cache_creation_input_tokens": M}) == Decimal(write_5m)
    hour = {"cache_creation_input_tokens": M, "cache_write_1h_input_tokens": M}
    assert cost(model, hour) == Decimal(write_1h)
    assert cost(model, {"cache_read_input_tokens": M}) == Decimal(read)


def test_a_run_on_two_models_is_priced_at_each_ones_rates(store: Store) -> None:
    run = store.runs.create(period="2026-10", mode="console", started_by="a", model=None)
    for model, tokens in (("claude-opus-5", 1000), ("claude-sonnet-5-5", 3000)):
        store.transcript.record_model_call(
            run.id, model=model, stop_reason="end_turn", usage={"output_tokens": tokens}
        )
    by_model = store.transcript.usage_by_model(run.id)
    assert cost_by_model(by_model) == Decimal(1000 * 25 + 3000 * 10) / M  # $0.055
    assert dollars(Decimal("0.055")) == "$0.06" and dollars(Decimal("0.001")) == "<$0.01"


def test_a_thinking_block_at_the_end_gets_no_breakpoint() -> None:
    thinking = [{"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]}]
    assert with_conversation_breakpoint(thinking) == thinking
    assert with_conversation_breakpoint([]) == []


def test_an_offline_close_records_no_model_calls(store: Store) -> None:
    run = store.runs.create(period="2026-10", mode="console", started_by="a", model="offline")
    assert store.transcript.usage(run.id) == (
        0,
        {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_write_1h_input_tokens": 0,
            "thinking_tokens": 0,
        },
    )

"""Token usage: recorded per model call and per run, shown in the summary and `closebot runs`;
the conversation carries a cache breakpoint on its last message."""

from __future__ import annotations

import io
from pathlib import Path

from bot.agent_loop import AgentLoop, Finished
from bot.console.cli import main
from bot.core.models import ClaudeModel, estimated_cost, with_conversation_breakpoint
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
        )
        fake.reply({"type": "text", "text": "October is closed."})
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

    # Each fake reply used 10 input, 5 output, 0 cache-read and 8 cache-write tokens.
    usage = {
        "input_tokens": 20,
        "output_tokens": 10,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 16,
    }
    assert store.transcript.usage(run.id) == (2, usage)
    assert isinstance(outcome, Finished)
    assert outcome.text.startswith("October is closed.")
    cost = estimated_cost("claude-sonnet-5-5", usage)
    assert cost == (20 * 3 + 10 * 15 + 16 * 3 * 1.25) / 1_000_000
    assert "Model use: 2 calls, 36 input tokens, 0% of input read from cache, 10 output tokens" in (
        outcome.text
    )
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
    assert "2 calls, 36 in (0% cached) / 10 out, ~$0.00" in out.getvalue()


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
        },
    )

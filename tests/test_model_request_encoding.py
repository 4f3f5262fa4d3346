"""The request to the model is built incrementally (issue 33): each message of the transcript
is JSON-encoded once and its encoding reused at every later step, so the bot's work per model
step does not grow with the transcript. Counted in bytes encoded, through the real SDK against
the strict fake Messages API."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from bot.agent_loop import AgentLoop, Finished
from bot.core.models import ClaudeModel
from bot.core.tools import ToolContext, ToolRegistry
from bot.store import Store
from tests.conftest import RecordingPresenter, text, tool_use
from tests.fake_anthropic import fake_anthropic

STEPS = 40


def size(request: dict[str, Any]) -> int:
    """The bytes of a request's JSON (compact, as the SDK writes it)."""
    return len(json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode())


def lookup(ctx: ToolContext, n: int) -> str:
    """A tool with a result of about 1.3 KB of JSON."""
    rows = ",".join(['"well-0000 ok 12345.67"'] * 50)
    return f'{{"item": {n}, "rows": [{rows}]}}'


def test_each_message_is_encoded_once_not_the_whole_request_at_every_step(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoded: list[int] = []  # bytes of JSON made in this thread (the bot's, not the fake's)
    me = threading.get_ident()
    encode = json.JSONEncoder.encode

    def counting(self: json.JSONEncoder, o: Any) -> str:
        out = encode(self, o)
        if threading.get_ident() == me:
            encoded.append(len(out.encode()))
        return out

    registry = ToolRegistry()
    registry.add(lookup)
    store = Store(db_path)
    run = store.runs.create(period="2026-10", mode="console", started_by="t", model="m")
    with fake_anthropic() as fake:
        for n in range(STEPS):
            fake.reply(
                text(f"Checking item {n}."),
                tool_use(f"toolu_{n:03d}", "lookup", n=n),
                stop_reason="tool_use",
            )
        fake.reply(text("Done."))
        loop = AgentLoop(
            store=store,
            model=ClaudeModel(
                model="claude-sonnet-5-5", api_key="sk-ant-test", base_url=fake.url, timeout=10
            ),
            tools=registry,
            presenter=RecordingPresenter(),
            system_prompt="Look things up.",
            max_steps=STEPS + 5,
        )
        monkeypatch.setattr(json.JSONEncoder, "encode", counting)
        outcome = loop.start(run.id, "Look up every item.")
        monkeypatch.undo()
        assert fake.refused == []  # every request was one the API accepts
        requests = list(fake.requests)
    store.close()
    assert isinstance(outcome, Finished) and outcome.text.startswith("Done.")
    assert len(requests) == STEPS + 1
    # what the API received is the transcript, whole, at every step
    last = requests[-1]
    assert len(last["messages"]) == 2 * STEPS + 1
    assert [m["role"] for m in last["messages"]] == ["user", "assistant"] * STEPS + ["user"]
    sent = sum(size(r) for r in requests)  # the bytes of every request, as sent
    final = size(last)
    # Encoding every request whole at every step (before issue 33) makes as many bytes as
    # were sent, some 20 final requests' worth here. Each message encoded once (and once
    # more as it is stored, and again as the last message, which carries the cache
    # breakpoint) plus each step's system prompt and tools is a few final requests' worth.
    assert sum(encoded) < 5 * final < sent / 3

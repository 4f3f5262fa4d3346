"""The turn's in-memory transcript: what the model is sent is always what the store holds."""

from __future__ import annotations

import json

from bot.agent_loop import Finished, Transcript
from bot.core.tools import ToolContext, ToolRegistry
from bot.store import Store
from tests.conftest import ScriptedModel, scripted_loop, text, tool_use


def lookup(ctx: ToolContext, n: int) -> str:
    """Look an item up.

    Args:
      n: the item
    """
    return json.dumps({"item": n, "ok": True})


def test_every_request_is_the_stored_transcript_up_to_that_step(store: Store) -> None:
    registry = ToolRegistry()
    registry.add(lookup)
    model = ScriptedModel()
    for n in range(12):
        model.enqueue(text(f"Item {n}."), tool_use(f"t{n}", "lookup", n=n))
    model.enqueue(text("Done."))
    loop, _ = scripted_loop(store, model, registry)
    run = store.runs.create(period="2026-10", mode="console", started_by="a", model="scripted")

    assert isinstance(loop.start(run.id, "go"), Finished)

    stored = [m.api() for m in store.transcript.messages(run.id)]
    assert len(model.history) == 13
    for request in model.history:
        sent = request["messages"]
        assert sent == stored[: len(sent)]
    assert len(model.history[-1]["messages"]) == len(stored) - 1  # all but the final reply
    assert stored[-2]["content"][0]["content"] == json.dumps({"item": 11, "ok": True})


def test_a_transcript_that_finds_the_store_ahead_reads_it_again(store: Store) -> None:
    run = store.runs.create(period="2026-10", mode="console", started_by="a", model="x")
    store.transcript.append(run.id, role="user", content=[text("one")])
    transcript = Transcript(store, run.id)
    store.transcript.append(run.id, role="assistant", content=[text("written elsewhere")])

    transcript.append("user", [text("three")])

    assert transcript.api() == [m.api() for m in store.transcript.messages(run.id)]
    assert [m["content"][0]["text"] for m in transcript.api()] == [
        "one",
        "written elsewhere",
        "three",
    ]
    last = transcript.last
    assert last is not None and last.seq == 3

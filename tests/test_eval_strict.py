"""`closebot eval`'s scenarios with Claude's side against the strict fake Anthropic API
(tests/fake_anthropic.py: the documented rules — thinking bound to system, tools and prefix,
no forced tool choice, streaming, breakpoints — each cited there): the scripted model answers
each request as it comes, and every close must pass without one request the API would
refuse, the upgrade between question and answer included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.console.eval_api import ClaudeScript
from bot.console.eval_run import run_scenario
from bot.console.eval_scenarios import scenarios
from tests.fake_anthropic import USAGE, FakeAnthropic, Scripted, fake_anthropic


class Answering(list[Scripted]):
    """The fake's queue of answers, never empty: each is the scripted model's reply to the
    request just received (the fake takes the next answer after checking the request)."""

    def __init__(self, fake: FakeAnthropic) -> None:
        super().__init__()
        self.fake = fake
        self.script = ClaudeScript()

    def __bool__(self) -> bool:
        return True

    def pop(self, index: Any = -1) -> Scripted:
        request = self.fake.requests[-1]
        messages = [
            {
                "role": m["role"],
                "content": [
                    {k: v for k, v in b.items() if k != "cache_control"}
                    for b in m["content"]
                    if b.get("type") != "thinking"
                ]
                if isinstance(m["content"], list)
                else m["content"],
            }
            for m in request["messages"]
        ]
        reply = self.script.respond(system="", messages=messages, tools=request["tools"])
        thinking = {"type": "thinking", "thinking": "Deciding the next step.", "signature": ""}
        body = {
            "id": f"msg_{len(self.fake.requests)}",
            "type": "message",
            "role": "assistant",
            "model": request["model"],
            "content": [thinking, *json.loads(json.dumps(reply.content))],
            "stop_reason": reply.stop_reason or "end_turn",
            "stop_sequence": None,
        }
        return Scripted(200, body, usage={**USAGE, "thinking": 4})


def test_every_scenario_passes_against_the_strict_fake_with_nothing_refused(
    tmp_path: Path,
) -> None:
    with fake_anthropic() as fake:
        fake.answers = Answering(fake)
        results = [
            run_scenario(s, claude=True, base_url=fake.url, api_key="sk-test", workdir=tmp_path)
            for s in scenarios()
        ]
    assert fake.refused == []
    failed = [(r.scenario, r.outcome, r.problems) for r in results if not r.passed]
    assert not failed, failed
    assert len(results) >= 12 and all(r.calls for r in results)

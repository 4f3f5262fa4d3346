"""Bot time per model step as a transcript grows, through the Claude adapter (issue 33).

One run of STEPS model steps in this process: the real agent loop and store, the Claude
adapter on the real anthropic SDK, against a loopback Messages API that answers each request
at once with the next tool call (a lookup whose result is about 1.3 KB, as a close's tools
give). The bot's time per step is the CPU time of the thread that runs the turn between two
model calls (time.thread_time: the loopback server's own work, in its threads, and waiting
are not counted): the loop, the store, and building and sending the request. Printed: the
median of the first 50 steps beside the last 50, against the issue's target (≤ 1.5×; before,
4.4–12.7× at 990 steps, 91 % of it the SDK copying and encoding a 1.6 MB request).

Run: .venv/bin/python bench/model_steps.py [--steps 990]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.perf import Row, Silent, lookup, machine, print_table  # noqa: E402
from bot.agent_loop import AgentLoop  # noqa: E402
from bot.core.message_events import sse  # noqa: E402
from bot.core.models import ClaudeModel, Reply  # noqa: E402
from bot.core.tools import ToolRegistry  # noqa: E402
from bot.store import Store  # noqa: E402
from tests.loopback import QuietHandler, loopback  # noqa: E402


class Answers:
    """The next tool call for `steps` requests, then the end; the bytes of the last request."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.served = 0
        self.last_bytes = 0

    def next(self, raw: bytes) -> dict[str, Any]:
        n = self.served
        self.served += 1
        self.last_bytes = len(raw)
        if n < self.steps:
            content: list[dict[str, Any]] = [
                {"type": "text", "text": f"Checking item {n}."},
                {"type": "tool_use", "id": f"toolu_{n:05d}", "name": "lookup", "input": {"n": n}},
            ]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": "Done."}], "end_turn"
        return {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-5-5",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }


@contextmanager
def messages_api(answers: Answers) -> Iterator[str]:
    class Handler(QuietHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real API

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            answer = answers.next(raw)
            if b'"stream":true' in raw:  # the adapter streams: server-sent events
                self.send(200, sse(answer), {"content-type": "text/event-stream"})
                return
            self.send(200, json.dumps(answer).encode(), {"content-type": "application/json"})

    with loopback(Handler) as url:
        yield url


class Timed:
    """The Claude adapter, with the turn thread's CPU time taken as each model call begins."""

    def __init__(self, model: ClaudeModel) -> None:
        self.model = model
        self.name = model.name
        self.marks: list[float] = []

    def respond(self, **kw: Any) -> Reply:
        self.marks.append(time.thread_time())
        return self.model.respond(**kw)


def run(steps: int, tmp: Path) -> tuple[float, float, int]:
    """Median CPU ms per step over the first 50 steps and the last 50; the last request's bytes."""
    registry = ToolRegistry()
    registry.add(lookup)
    answers = Answers(steps)
    with messages_api(answers) as url:
        model = Timed(ClaudeModel(model="claude-sonnet-5-5", api_key="sk-bench", base_url=url))
        store = Store(tmp / "steps.db")
        loop = AgentLoop(
            store=store,
            model=model,  # type: ignore[arg-type]
            tools=registry,
            presenter=Silent(),
            system_prompt="bench",
            max_steps=steps + 5,
        )
        created = store.runs.create(
            period="2026-10", mode="console", started_by="bench", model="claude-sonnet-5-5"
        )
        loop.start(created.id, "go")
        store.close()
    gaps = [b - a for a, b in zip(model.marks, model.marks[1:], strict=False)]
    first, last = gaps[5:55], gaps[-50:]  # after five warm-up steps
    return statistics.median(first) * 1000, statistics.median(last) * 1000, answers.last_bytes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=990)
    args = parser.parse_args()
    print(f"machine: {machine()}", flush=True)
    with tempfile.TemporaryDirectory() as t:
        first, last, size = run(args.steps, Path(t))
    ratio = last / first
    print()
    print_table(
        [
            Row(
                f"bot time per model step through the Claude adapter, last 50 vs first 50 of "
                f"{args.steps} (request {size / 1e6:.2f} MB at the end)",
                "≤ 1.5×",
                f"{last:.2f} ms CPU (last) vs {first:.2f} ms (first)",
                "before: 4.4–12.7×",
                f"{ratio:.2f}×",
                "met" if ratio <= 1.5 else "missed",
            )
        ]
    )


if __name__ == "__main__":
    main()

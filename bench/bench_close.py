"""How long a whole offline close takes in-process, and how fast answers are claimed.

Run: .venv/bin/python bench/bench_close.py [--runs N]
Targets (on the 2-core dev machine): a playbook close < 250 ms; a claim < 5 ms.
Numbers are printed, never asserted: the machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bot.agent_loop import AgentLoop, Finished, Paused, ask_of
from bot.close import SYSTEM_PROMPT, CloseTools, PlaybookModel, start_prompt
from bot.core.questions import answer_payload, default_responses
from bot.store import QuestionRecord, Store


class Quiet:
    def text(self, run_id: str, text: str) -> None: ...
    def progress(self, run_id: str, steps: dict[str, str]) -> None: ...
    def question(self, run_id: str, question: QuestionRecord) -> None: ...
    def finished(self, run_id: str, text: str) -> None: ...
    def failed(self, run_id: str, error: str) -> None: ...


def one_close(store: Store, tools: CloseTools) -> float:
    started = time.perf_counter()
    loop = AgentLoop(
        store=store,
        model=PlaybookModel(),
        tools=tools.registry(),
        presenter=Quiet(),
        system_prompt=SYSTEM_PROMPT,
    )
    run = store.runs.create(
        period="2026-10", mode="console", started_by="bench", model="offline-playbook"
    )
    outcome = loop.start(run.id, start_prompt("2026-10"))
    while isinstance(outcome, Paused):
        record = store.questions.get(outcome.question_id)
        ask = ask_of(record)
        second = ask.questions[0].header == "Second approval"  # a different person's
        store.questions.claim(
            record.id,
            answer=answer_payload(ask, default_responses(ask)),
            answered_by="bench-approver" if second else "bench",
            source="console",
        )
        outcome = loop.advance(run.id)
    assert isinstance(outcome, Finished)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        tools = CloseTools()
        times = [one_close(store, tools) for _ in range(args.runs)]
        run = store.runs.create(period="2026-10", mode="console", started_by="bench", model="x")
        claims = []
        for i in range(200):
            store.questions.create(
                run.id, question_id=f"q{i}", context="c", questions=[{"question": "q"}]
            )
            t = time.perf_counter()
            store.questions.claim(
                f"q{i}", answer={"1": {"selected": [1]}}, answered_by="bench", source="console"
            )
            claims.append(time.perf_counter() - t)
    print(
        f"playbook close: median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms over {args.runs} runs"
    )
    print(
        f"answer claim:   median {statistics.median(claims) * 1000:.2f} ms, p95 {sorted(claims)[189] * 1000:.2f} ms over 200 claims"
    )


if __name__ == "__main__":
    main()

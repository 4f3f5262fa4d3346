"""What a Claude close costs (issue 28), beside its target, under stated assumptions.

Run: .venv/bin/python bench/close_cost.py   (make bench prints the same rows)

A whole close of the sample through ClaudeModel and the real SDK against the scripted
Messages API (bot/console/eval_api.py): replies from the scripted model, usage counted as the
API documents it — cache writes by lifetime and reads, thinking billed as output — with
every answer arriving ten minutes after its question and adaptive thinking at the default
effort (THINKING_TOKENS a call, an estimate). docs/performance.md explains the model.
Printed, never asserted.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.close import PlaybookModel  # noqa: E402
from bot.console import eval_run  # noqa: E402
from bot.console.eval_api import (  # noqa: E402
    THINKING_TOKENS,
    ScriptedApi,
    cost_of,
    scripted_api,
)
from bot.console.eval_run import Scenario, run_scenario  # noqa: E402
from bot.console.eval_scenarios import _genmonth  # noqa: E402
from bot.core import models  # noqa: E402

TARGET = 0.25  # US$ per sample close
LIMIT = 4096  # bytes: the largest tool result at any size


def sample_close(
    script: Any = None, *, cache: dict[str, str] | None = None
) -> tuple[float, int, dict[str, Any]]:
    """(US$, model calls, usage) of the sample closed through the scripted API; `cache`
    replaces the breakpoints' cache_control (the 5-minute one, for the figure before)."""
    original = models.CACHE_1H
    if cache is not None:
        models.CACHE_1H = cache
    try:
        api = ScriptedApi(script=script) if script is not None else ScriptedApi()
        with scripted_api(api), tempfile.TemporaryDirectory() as tmp:
            run_scenario(Scenario("the sample"), claude=True, api=api, workdir=Path(tmp))
        return cost_of(eval_run.MODEL, api.usage), api.calls, api.usage
    finally:
        models.CACHE_1H = original


def largest_result(jib_lines: int, alike: int) -> tuple[int, str]:
    """The largest tool result (bytes, tool) of a generated month closed by the scripted model."""
    seen: list[tuple[int, str]] = []
    score = eval_run.score

    def measure(scenario: Scenario, store: Any, run_id: str, *rest: Any) -> Any:
        seen.extend(
            (len(r.content.encode()), r.name) for r in eval_run._tool_results(store, run_id)
        )
        return score(scenario, store, run_id, *rest)

    def data(tmp: Path) -> Path:
        gen = _genmonth()
        assert gen is not None
        gen.generate(tmp / "data", jib_lines, alike=alike)
        return tmp / "data"

    eval_run.score = measure  # type: ignore[assignment]
    try:
        with scripted_api() as api, tempfile.TemporaryDirectory() as tmp:
            run_scenario(Scenario("large", data=data), claude=True, api=api, workdir=Path(tmp))
    finally:
        eval_run.score = score  # type: ignore[assignment]
    return max(seen)


def rows(*, quick: bool = False) -> list[tuple[str, str, str, str, str, str]]:
    """(figure, target, closebot, reference, ratio, verdict), as bench/perf.py prints them."""
    lines, alike = (2_000, 10) if quick else (20_000, 30)
    now, calls, usage = sample_close()
    before, calls_before, _ = sample_close(PlaybookModel(), cache={"type": "ephemeral"})
    out = usage.get("output_tokens", 0)
    size, tool = largest_result(lines, alike)
    return [
        (
            f"cost per sample close, thinking at the default effort (~{THINKING_TOKENS} tokens "
            "a call), answers 10 min apart",
            f"≤ ${TARGET:.2f}",
            f"${now:.3f} ({calls} calls, {out:,} output tokens incl. thinking; 1-hour cache)",
            f"${before:.3f} (questions written out, a call to record each answer, "
            f"5-minute cache; {calls_before} calls)",
            f"{before / now:.1f}× cheaper" if now else "—",
            "met" if now <= TARGET else "missed",
        ),
        (
            f"largest tool result, a {lines:,}-line month with {alike} alike wells",
            f"< {LIMIT // 1024} KB",
            f"{size:,} bytes ({tool})",
            "—",
            "—",
            "met" if size < LIMIT else "missed",
        ),
    ]


def main() -> None:
    for r in rows():
        print(" | ".join(r))


if __name__ == "__main__":
    main()

"""`closebot eval`: the scripted scenarios run by Claude (offline: the scripted model behind
the loopback Messages API; with a key and --real: the real API, under a spending cap) beside
the offline playbook's baseline, scored and printed as a table."""

from __future__ import annotations

import os
from typing import TextIO

from bot.console.eval_api import scripted_api
from bot.console.eval_run import Result, run_scenario
from bot.console.eval_scenarios import scenarios
from bot.core.errors import ConfigError

COLUMNS = ("asked", "recommended", "unanswered", "figures", "thread", "ends", "cost")
WIDTHS = (6, 11, 10, 7, 6, 9, 0)


def _marks(r: Result) -> list[str]:
    yes = {True: "ok", False: "FAIL"}
    return [
        yes[r.asked_ok],
        yes[r.recommended_ok],
        yes[r.nothing_unanswered],
        yes[r.figures_exact],
        yes[r.requests_ok],
        r.outcome,
        f"${r.cost:.3f} ({r.calls} calls)" if r.calls else "— (offline)",
    ]


def _line(cells: list[str]) -> str:
    return "  ".join(f"{c:<{w}}" for c, w in zip(cells, WIDTHS, strict=True)).rstrip()


def evaluate(out: TextIO, *, real: bool = False, max_cost: float = 2.0, only: str = "") -> int:
    """Run every scenario (or those whose name contains `only`); 0 when Claude passes all."""
    key = os.environ.get("ANTHROPIC_API_KEY", "")
    if real and not key:
        raise ConfigError("closebot eval --real needs ANTHROPIC_API_KEY (it spends money)")
    if max_cost <= 0:
        raise ConfigError(f"--max-cost must be a positive number of US$, not {max_cost}")
    chosen = [s for s in scenarios() if only.lower() in s.name.lower()]
    if not chosen:
        names = ", ".join(s.name for s in scenarios())
        raise ConfigError(f"no scenario's name contains {only!r}; they are: {names}")
    rows: list[tuple[Result, Result]] = []
    spent = 0.0
    for scenario in chosen:
        if real and spent >= max_cost:
            print(
                f"spending cap ${max_cost:.2f} reached: {scenario.name} and after not run", file=out
            )
            break
        baseline = run_scenario(scenario, claude=False)
        if real:
            claude = run_scenario(scenario, claude=True, api_key=key)
        else:
            with scripted_api() as api:
                claude = run_scenario(scenario, claude=True, api=api)
        spent += claude.cost
        rows.append((claude, baseline))
    width = max((len(s.name) for s in chosen), default=10)
    print(f"{'scenario':<{width}}  {'model':<18} " + _line(list(COLUMNS)), file=out)
    for claude, baseline in rows:
        for r in (claude, baseline):
            name = r.scenario if r is claude else ""
            print(f"{name:<{width}}  {r.model:<18} " + _line(_marks(r)), file=out)
            for p in r.problems[:3]:
                print(f"{'':<{width}}    · {p}", file=out)
    passed = sum(c.passed for c, _ in rows)
    base = sum(b.passed for _, b in rows)
    total = sum(c.cost for c, _ in rows)
    print(
        f"score: Claude {passed}/{len(rows)}, offline playbook (baseline) {base}/{len(rows)}; "
        f"Claude's cost ${total:.2f} for {len(rows)} closes"
        + (" (real API)" if real else " (scripted model, the documented usage accounting)"),
        file=out,
    )
    print(
        "asked: exactly the decisions the checks found (and every one planted); recommended: "
        "the rules' recommendation; unanswered: nothing booked or posted without a person's "
        "answer; figures: every form exactly the prepared question; thread: did what a "
        "person asked in the thread; ends: how the close ended",
        file=out,
    )
    return 0 if passed == len(rows) else 1

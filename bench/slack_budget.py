"""closebot's budget of Slack calls against Slack's rate tiers (issue 27).

One whole close of the sample period runs through the real app on the one fake Slack, paced
on the fake's clock as a real close would be: each model call takes --model-seconds, each
person takes --think-seconds before answering a form, --viewers people have the App Home
open. Every Web API call is timed on that clock. Printed (never asserted: the pace is a
model of people, not a measurement of them):

- calls per close and per decision, by method, beside the method's tier;
- the busiest minute of one close, by method;
- the largest number of closes running at once in one workspace that stays under every
  tier: started together (the worst case: every close's busiest minute at the same moment,
  its people answering in step), staggered (each close started at a random moment within
  one close's length: the busiest minute of the workspace over 20 seeded draws), and on
  average (their calls spread over the close). chat.postMessage is held per channel, so it
  limits how many closes share one channel, not the workspace.

Run: .venv/bin/python bench/slack_budget.py [--think-seconds 30] [--model-seconds 3]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.close import PlaybookModel  # noqa: E402
from bot.core.models import Reply  # noqa: E402
from bot.sandbox.slack_api import FakeSlack, fake_slack  # noqa: E402
from bot.sandbox.slack_api.clock import FakeClock  # noqa: E402
from bot.sandbox.slack_api.tiers import LIMITS, WINDOW  # noqa: E402
from tests import slack_payloads as sp  # noqa: E402
from tests.slack_harness import Harness  # noqa: E402

TARGET = 20  # closes at once in one workspace (issue 27)
TICK = 15.0  # the watchdog's tick (SlackWork.watch): owed plans are drawn then


class PacedModel:
    """The offline playbook, each reply taking `seconds` on the fake's clock."""

    name = "offline-playbook"

    def __init__(self, clock: FakeClock, seconds: float) -> None:
        self.model = PlaybookModel()
        self.clock = clock
        self.seconds = seconds

    def respond(self, **kw: Any) -> Reply:
        self.clock.advance(self.seconds)
        return self.model.respond(**kw)


def timed_calls(fake: FakeSlack) -> list[tuple[float, str]]:
    """Every Web API call from now on, with its time on the fake's clock."""
    seen: list[tuple[float, str]] = []
    answer = fake.answer

    def timing(method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        seen.append((fake.clock.now(), method))
        return answer(method, params)

    fake.answer = timing  # type: ignore[method-assign]
    return seen


def one_close(args: argparse.Namespace) -> tuple[list[tuple[float, str]], int, float]:
    """(the calls of one paced close, its decisions, its length in seconds)."""
    with tempfile.TemporaryDirectory() as tmp, fake_slack() as fake:
        fake.clock.freeze()
        fake.tiers.off()  # measured, not refused: the tiers are compared below
        bot = Harness(
            fake, Path(tmp) / "budget.db", model=PacedModel(fake.clock, args.model_seconds)
        )
        bot.service.presenter.status.clock = fake.clock.now  # the status line's folding, paced
        try:
            viewers = ["UALICE", "UAPPROVER", "UAPPROVER2", *(f"UVIEW{n}" for n in range(8))]
            for n, user in enumerate(viewers[: args.viewers]):
                inner = {"type": "app_home_opened", "user": user, "channel": "D0", "tab": "home"}
                bot.dispatch(sp.event(inner, event_id=f"EvHome{n}"), "application/json")
            bot.idle()
            calls = timed_calls(fake)
            began = fake.clock.now()
            run = bot.start()
            approvers = {"Posting": "UAPPROVER", "Second approval": "UAPPROVER2"}
            decisions = 0
            for _ in range(40):
                record = bot.store.questions.pending(run.id)
                if record is None:
                    break
                thought = 0.0
                while thought < args.think_seconds:  # the watchdog's tick every 15 s meanwhile
                    step = min(TICK, args.think_seconds - thought)
                    fake.clock.advance(step)
                    thought += step
                    bot.service.presenter.draw_owed_plans()
                    bot.idle()
                who = approvers.get(record.questions[0].get("header") or "", "UALICE")
                bot.submit(record.id, bot.recommended_picks(record.id), user=who)
                bot.idle()
                decisions += 1
            status = bot.store.runs.get(run.id).status
            if status != "done":
                raise SystemExit(f"the close did not finish: {status}")
            return [(t - began, m) for t, m in calls], decisions, fake.clock.now() - began
        finally:
            bot.close()


def busiest_minute(times: list[float]) -> int:
    """The most calls in any window of a minute."""
    times = sorted(times)
    best, start = 0, 0
    for end, t in enumerate(times):
        while times[start] <= t - WINDOW:
            start += 1
        best = max(best, end - start + 1)
    return best


def over(calls: list[tuple[float, str]], length: float, closes: int, draws: int = 20) -> str:
    """The first method whose tier `closes` copies of one close, each started at a random
    moment within its length, go over in some minute of one of `draws` seeded draws; ''
    when they stay under every per-workspace tier."""
    limited = {m: LIMITS[m].per_minute for m in {m for _, m in calls} if m in LIMITS}
    limited = {m: n for m, n in limited.items() if LIMITS[m].per != "channel"}
    for draw in range(draws):
        rng = random.Random(draw)
        starts = [rng.uniform(0, length) for _ in range(closes)]
        for method, limit in limited.items():
            times = [s + t for s in starts for t, m in calls if m == method]
            if busiest_minute(times) > limit:
                return method
    return ""


def staggered(calls: list[tuple[float, str]], length: float, most: int = 200) -> tuple[int, str]:
    """The most closes, started at random moments, that stay under every tier (over()), at
    most `most`; and the method one more would go over."""
    n = 0
    while n < most:
        held = over(calls, length, n + 1)
        if held:
            return n, held
        n += 1
    return n, ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--think-seconds", type=float, default=30.0)
    parser.add_argument("--model-seconds", type=float, default=3.0)
    parser.add_argument("--viewers", type=int, default=5, help="people with the Home tab open")
    args = parser.parse_args()
    calls, decisions, length = one_close(args)
    total = Counter(m for _, m in calls)
    print(
        f"one close of the sample period: {decisions} decisions, {len(calls)} Slack calls, "
        f"{length / 60:.1f} min on the fake's clock (a person {args.think_seconds:.0f} s a "
        f"form, the model {args.model_seconds:.0f} s a reply, {args.viewers} Home tabs open)\n"
    )
    print(
        "| method | tier (calls/min) | per close | per decision | busiest minute "
        "| closes at once: together | on average |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    together: dict[str, float] = {}
    average: dict[str, float] = {}
    for method in sorted(total, key=lambda m: -total[m]):
        limit = LIMITS.get(method)
        peak = busiest_minute([t for t, m in calls if m == method])
        per_minute = total[method] / max(length / 60, 1e-9)
        if limit is None:
            tier, fit, fit_avg = "—", "—", "—"
        elif limit.per == "channel":
            tier = f"{limit.per_minute} per channel"
            fits = peak <= limit.per_minute
            fit = fit_avg = "any (a channel each)" if fits else "0"
        else:
            tier = str(limit.per_minute)
            together[method] = limit.per_minute / peak
            average[method] = limit.per_minute / per_minute
            fit, fit_avg = str(int(together[method])), str(int(average[method]))
        print(
            f"| {method} | {tier} | {total[method]} | {total[method] / max(decisions, 1):.2f} "
            f"| {peak} | {fit} | {fit_avg} |"
        )
    # Pace aside: the decisions a minute the workspace can take, all closes together, under
    # each per-workspace tier (a decision's calls, the close's start and end spread over them)
    per_decision = {m: total[m] / max(decisions, 1) for m in together}
    budget = {m: LIMITS[m].per_minute / per_decision[m] for m in per_decision}
    tight = min(budget, key=lambda m: budget[m])
    worst = min(together, key=lambda m: together[m])
    mean = min(average, key=lambda m: average[m])
    spread, held = staggered(calls, length)
    print(
        f"\ncloses at once in one workspace under every tier, target {TARGET}: "
        f"{int(together[worst])} started together, their people answering in step (the worst "
        f"case; held by {worst}); {spread} started at random moments (held by {held}) "
        f"({'met' if spread >= TARGET else 'missed'}); {int(average[mean])} on average "
        f"(held by {mean}; {'met' if int(average[mean]) >= TARGET else 'missed'})"
    )
    print(
        f"decisions a minute the workspace takes under every tier, whatever the pace: "
        f"{budget[tight]:.0f} (held by {tight}, {per_decision[tight]:.1f} a decision): "
        f"{TARGET} closes at once fit while each decides at most once every "
        f"{TARGET * 60 / budget[tight]:.0f} s"
    )


if __name__ == "__main__":
    main()

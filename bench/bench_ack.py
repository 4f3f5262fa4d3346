"""How fast the Slack listeners ack: a no-op action and a full Submit, through the real Bolt app.

Run: .venv/bin/python bench/bench_ack.py [--n N]
Target: ack well under Slack's 3 s — a no-op action < 5 ms, a Submit (authorize, read the
form, claim in SQLite) < 20 ms in-process on the 2-core machine. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.sandbox.slack_api import fake_slack
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness, distinct_periods


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    response = fn()
    assert response.status == 200, response.body
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, fake_slack() as fake:
        fake.tiers.off()  # ack times, not Slack's rate tiers (bench/slack_budget.py)
        # a period has one live close: each Submit's close is of its own period
        periods = distinct_periods(Path(tmp), args.n)
        bot = Harness(fake, Path(tmp) / "bench.db")
        noop = [
            timed(lambda: bot.dispatch(sp.block_action("radio_changed", "1"), FORM))
            for _ in range(args.n)
        ]
        submits = []
        for period in periods:
            run = bot.start(period)
            question_id = bot.pending(run.id)
            submits.append(timed(lambda q=question_id: bot.submit(q, {1: 1, 2: 2})))
            bot.idle()
        bot.close()
    print(
        f"no-op action ack: median {statistics.median(noop):.2f} ms, max {max(noop):.2f} ms over {args.n}"
    )
    print(
        f"Submit ack:       median {statistics.median(submits):.2f} ms, max {max(submits):.2f} ms over {args.n}"
    )


if __name__ == "__main__":
    main()

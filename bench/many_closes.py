"""Many /close at once (issue 33): threads and memory bounded by configuration, not by load.

`closebot serve --http` in its own process, against the fake Slack in this one: COUNT signed
/close requests of COUNT distinct periods, sent at once by a few kept-alive clients; then
wait until every run has reached its first form (posted in Slack). While it runs, the
server's thread count is sampled, and its peak RSS read from the kernel (VmHWM). Printed
beside the issue's targets (threads ≤ 50, peak RSS ≤ 300 MB, every run at its form), never
asserted. Before issue 33 a queued run held a heartbeat thread of its own: 10,000 /close
made 9,322 threads and 1.40 GB, and after 31 minutes 834 runs had reached a form.

The issue's figure is 10,000 closes; each needs a period of its own (one live close per
period) and distinct_periods moves October's files whole years on, so at most 7,899 fit in
four-digit years. On a shared 2-core machine even that takes long: the default is smaller
(--count), and the table says which size it measured.

Run: .venv/bin/python bench/many_closes.py [--count 1000] [--clients 16]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.perf import Client, Row, closebot_server, machine, print_table  # noqa: E402
from bot.sandbox.slack_api import fake_slack  # noqa: E402
from bot.store import Store  # noqa: E402
from tests import slack_payloads as sp  # noqa: E402
from tests.slack_harness import distinct_periods, slack_sample  # noqa: E402

MAX_PERIODS = 7_899  # four-digit years: 2101 to 9999


def status_of(pid: int) -> dict[str, int]:
    """Threads and VmHWM (peak resident set, kB) of a process, from /proc."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("Threads", "VmHWM", "VmRSS"):
            found[name] = int(value.split()[0])
    return found


def at_form(store: Store) -> int:
    """Runs whose first form is in Slack (a pending question with its message posted)."""
    rows = store.query(
        "select count(distinct run_id) as n from questions where message_ts is not null"
    )
    return int(rows[0]["n"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000, help=f"closes (≤ {MAX_PERIODS})")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait, at most")
    args = parser.parse_args()
    count = min(args.count, MAX_PERIODS)
    print(f"machine: {machine()}", flush=True)
    with tempfile.TemporaryDirectory() as t, fake_slack() as fake:
        fake.tiers.off()  # threads and memory here; Slack's tiers are bench/slack_budget.py's
        tmp = Path(t)
        data = slack_sample(tmp)
        periods = distinct_periods(tmp, count)
        db = tmp / "many.db"
        bot = closebot_server(fake, db, data, tmp / "closebot.log")
        store = Store(db)
        peak_threads = 0
        sampling = threading.Event()

        def sample() -> None:
            nonlocal peak_threads
            while not sampling.wait(0.5):
                peak_threads = max(peak_threads, status_of(bot.proc.pid).get("Threads", 0))

        sampler = threading.Thread(target=sample, daemon=True)
        try:
            sampler.start()
            bodies = [
                sp.slash_command(p, response_url=fake.response_url()) + f"&nonce={n}"
                for n, p in enumerate(periods)
            ]
            started = time.monotonic()

            def client(mine: list[str]) -> None:
                c = Client(bot.port)
                for body in mine:
                    c.post(body)
                c.close()

            senders = [
                threading.Thread(target=client, args=(bodies[i :: args.clients],))
                for i in range(args.clients)
            ]
            for s in senders:
                s.start()
            for s in senders:
                s.join()
            acked = time.monotonic() - started
            print(f"  {count} /close acked in {acked:.1f} s", flush=True)
            reached, last_print = 0, started
            while reached < count and time.monotonic() - started < args.timeout:
                time.sleep(1.0)  # a bench may poll; one query a second
                reached = at_form(store)
                if time.monotonic() - last_print > 30:
                    last_print = time.monotonic()
                    print(f"  {reached}/{count} at their form", flush=True)
            took = time.monotonic() - started
            final = status_of(bot.proc.pid)
            peak_threads = max(peak_threads, final["Threads"])
        finally:
            sampling.set()
            store.close()
            bot.stop()
    peak_mb = final["VmHWM"] / 1024
    size = "" if count == 10_000 else f" (the issue's 10,000 scaled to {count}: see --count)"
    rows = [
        Row(
            f"{count} /close at once: runs at their first form{size}",
            "every run",
            f"{reached}/{count} in {took:.0f} s (acked in {acked:.1f} s)",
            "before: 834 of 10,000 after 31 min",
            "—",
            "met" if reached == count else "missed",
        ),
        Row(
            f"{count} /close at once: server threads, peak",
            "≤ 50",
            f"{peak_threads}",
            "before: 9,322 at 10,000; 323 at 300",
            "—",
            "met" if peak_threads <= 50 else "missed",
        ),
        Row(
            f"{count} /close at once: server peak RSS",
            "≤ 300 MB",
            f"{peak_mb:.0f} MB",
            "before: 1.40 GB at 10,000",
            "—",
            "met" if peak_mb <= 300 else "missed",
        ),
    ]
    print()
    print_table(rows)


if __name__ == "__main__":
    main()

"""The hosted shape (issue 32, item 4): replicas of `closebot serve --http` on one PostgreSQL
database, a burst of /close from 200 workspaces and then a burst of their Submits, spread over
the replicas as a load balancer would; with 1 replica, then 2 (and, for the acks' bounds,
the same burst on the embedded default: SQLite, one process).

Run: .venv/bin/python bench/hosted.py [--workspaces N] [--clients N]

Printed, never asserted (the machines are shared): every Submit recorded exactly once, each
form read-only after, the acks (p50/p99, the same measure as bench/perf.py's), and the
throughput: forms posted per second after the /close burst, runs advanced per second after
the Submits. A workspace here is a team id on the payloads, each closing its own period
(October's files moved on, as bench/perf.py's); one bot token serves them all.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.perf import (  # noqa: E402
    Server,
    _blast,
    _started,
    advanced,
    answerable,
    answered_events,
    has_submit,
    p50,
    p99,
    submit_body,
)
from bot.sandbox.slack_api import FakeSlack, fake_slack  # noqa: E402
from bot.store import Store  # noqa: E402
from tests import pg_server  # noqa: E402
from tests import slack_payloads as sp  # noqa: E402
from tests.slack_harness import distinct_periods, slack_sample  # noqa: E402

KEY = "hosted-bench-audit-key-0123456789abcdef"


def replica(fake: FakeSlack, url: str, data: Path, log: Path) -> Server:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CLOSEBOT_", "SLACK_"))},
        "SLACK_API_URL": fake.api_url,
        "SLACK_BOT_TOKEN": "xoxb-bench",
        "SLACK_SIGNING_SECRET": sp.SECRET,
        "CLOSEBOT_DATA": str(data),
        "CLOSEBOT_APPROVERS": "UAPPROVER,UAPPROVER2",
        "CLOSEBOT_DB": url,
        "CLOSEBOT_AUDIT_KEY": KEY,
    }
    env.pop("ANTHROPIC_API_KEY", None)  # the offline playbook drives the runs
    cmd = [sys.executable, "-m", "bot", "serve", "--http", "--host", "127.0.0.1", "--port", "0"]
    return _started("closebot", cmd, env, log)


def spread(bots: list[Server], bodies: list[str], clients: int) -> tuple[list[float], float]:
    """The bodies dealt round robin to the replicas, each blasted by `clients` clients at
    once; every answer's ms and the seconds the whole burst took."""
    out: list[float] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        got = _blast(bots[i].port, bodies[i :: len(bots)], max(1, clients // len(bots)))
        with lock:
            out.extend(got)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bots))]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out, time.monotonic() - started


def wait(check: object, timeout: float, what: str) -> float:
    """Seconds until `check()` holds (polled every 0.2 s: a bench may; tests do not)."""
    started = time.monotonic()
    while not check():  # type: ignore[operator]
        if time.monotonic() - started > timeout:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)
    return time.monotonic() - started


def round_of(
    server: pg_server.PgServer | None,
    replicas: int,
    periods: list[str],
    data: Path,
    tmp: Path,
    clients: int,
) -> dict[str, str]:
    """One burst: on PostgreSQL with `replicas` replicas, or (no server) on an SQLite file."""
    url = server.create_database(f"hosted_{replicas}") if server else str(tmp / "hosted.db")
    os.environ["CLOSEBOT_AUDIT_KEY"] = KEY
    store = Store(url)
    with fake_slack() as fake:
        bots = [
            replica(fake, url, data, tmp / f"replica-{replicas}-{i}.log") for i in range(replicas)
        ]
        try:
            closes = [
                sp.slash_command(p, team=f"T{n:05d}", response_url=fake.response_url())
                for n, p in enumerate(periods)
            ]
            close_ms, _ = spread(bots, closes, clients)
            forms_s = wait(lambda: len(answerable(store)) >= len(periods), 900, "every form")
            records = answerable(store)[: len(periods)]
            ids = [r.id for r in records]
            submits = [submit_body(fake, r) for r in records]
            submit_ms, _ = spread(bots, submits, clients)
            advanced_s = wait(lambda: advanced(store, ids) == len(ids), 900, "every run advanced")
            events = answered_events(store, ids)
            once = sum(1 for n in events.values() if n == 1)
            twice = sum(1 for n in events.values() if n > 1)
            read_only = sum(1 for r in records if not has_submit(fake, r))
            roots = {}
            for run in store.runs.recent(limit=10 * len(periods)):
                roots[run.period] = roots.get(run.period, 0) + 1
        finally:
            for b in bots:
                b.stop()
            store.close()
    n = len(periods)
    return {
        "database, replicas": f"{'PostgreSQL' if server else 'SQLite'}, {replicas}",
        "/close acks p50 / p99": f"{p50(close_ms):.1f} / {p99(close_ms):.1f} ms",
        "forms posted": f"{n} in {forms_s:.1f} s ({n / forms_s:.1f}/s)",
        "Submit acks p50 / p99": f"{p50(submit_ms):.1f} / {p99(submit_ms):.1f} ms",
        "runs advanced": f"{n} in {advanced_s:.1f} s ({n / advanced_s:.1f}/s)",
        "exactly once": f"{once}/{n} once, {twice} twice, {read_only} forms read-only, "
        f"{sum(1 for c in roots.values() if c > 1)} periods with two runs",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspaces", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    server = pg_server.start()
    try:
        with tempfile.TemporaryDirectory() as t:
            tmp = Path(t)
            data = slack_sample(tmp)
            n = args.workspaces
            periods = distinct_periods(tmp, 3 * n)
            rows = [
                round_of(None, 1, periods[:n], data, tmp, args.clients),  # the embedded default
                round_of(server, 1, periods[n : 2 * n], data, tmp, args.clients),
                round_of(server, 2, periods[2 * n :], data, tmp, args.clients),
            ]
    finally:
        server.stop()
    print(f"\nHosted: {args.workspaces} workspaces, {args.clients} clients")
    for key in rows[0]:
        print(f"  {key:<24} " + "  |  ".join(r[key] for r in rows))


if __name__ == "__main__":
    main()

"""A close's time as its distinct exceptions grow (issue 31): `closebot run --auto` on
generated months with N wells billed at a wrong WI (N exceptions, each its own question,
bench/genmonth.py --distinct N), beside the target: 2,700 exceptions in under 60 s, and
growth linear (time per exception about the same at every size).

    python bench/exceptions.py [--counts 300,650,1300,2700] [--data DIR]

Before issue 31: 304 exceptions 21 s, 643 78 s, 1,320 488 s, 2,708 not done in 600 s (every
decision re-read and re-decoded every exception; the playbook re-decoded the transcript).
With the exceptions indexed: 305 → 5.7 s CPU, 1,305 → 48.9 s, 2,700 not done in 194 s (the
store decoded the whole transcript at each turn and the playbook re-read it at each step).
With both read once (docs/performance.md, issue 31): 1,305 → 8.9 s CPU, 2,705 → 18.0 s CPU and
29.5 s wall (6.7 ms each at both sizes).
Printed, never asserted: the machine is shared and its wall time moves with the load (CPU
time is the steadier figure).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.genmonth import LINES_PER_WELL, generate  # noqa: E402
from bench.volume import run_close  # noqa: E402

TARGET_SECONDS = 60.0
TARGET_AT = 2700


def month(root: Path, count: int) -> Path:
    """A month with `count` distinct exceptions (generated once): enough wells for them."""
    data = root / f"distinct-{count}"
    if not (data / "planted.json").is_file():
        generate(data, max(12_000, int(count * 1.3 * LINES_PER_WELL)), seed=7, distinct=count)
    return data


def exceptions(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("select count(*) from exceptions").fetchone()[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", default="300,650,1300,2700")
    parser.add_argument(
        "--data", type=Path, default=Path(tempfile.gettempdir()) / "closebot-bench-exceptions"
    )
    args = parser.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared)")
    print(
        "| planted | exceptions | wall | CPU | CPU ms per exception "
        "| growth (CPU ÷ exceptions, vs the size before; linear: 1.0) | exit |"
    )
    print("|---|---|---|---|---|---|---|")
    per: list[float] = []
    last: dict[str, float | int | str] = {}
    before: tuple[int, float] | None = None
    for count in [int(c) for c in args.counts.split(",")]:
        data = month(args.data, count)
        db = args.data / f"distinct-{count}.db"
        for stale in db.parent.glob(db.name + "*"):
            stale.unlink()
        last = run_close(data, db)
        found = exceptions(db)
        cpu = float(last["cpu"])
        per.append(cpu / max(1, found) * 1000)
        growth = "" if before is None else f"{(cpu / before[1]) / (found / before[0]):.2f}"
        before = (max(1, found), max(cpu, 1e-6))
        print(
            f"| {count:,} | {found:,} | {float(last['wall']):.1f} s | {cpu:.1f} s "
            f"| {per[-1]:.1f} | {growth} | {last['code']} |"
        )
        if last["code"] != 0:
            print(str(last["tail"]))
    if per:
        wall, cpu = float(last["wall"]), float(last["cpu"])

        def met(seconds: float) -> str:
            return "met" if seconds < TARGET_SECONDS and last["code"] == 0 else "NOT met"

        print(
            f"largest: CPU {cpu:.1f} s ({met(cpu)}), wall {wall:.1f} s ({met(wall)}, at load "
            f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} shared cores) — target: "
            f"{TARGET_AT:,} exceptions under {TARGET_SECONDS:.0f} s; "
            f"CPU per exception, largest ÷ smallest: {per[-1] / per[0]:.2f} (linear: about 1)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

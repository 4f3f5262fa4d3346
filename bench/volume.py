"""A month at volume (issue 19): `closebot run --auto` on generated months of 2,000, 20,000
and 200,000 JIB lines beside the time Python's csv module takes to read the same files.

    python bench/volume.py [--sizes 2000,20000,200000] [--quick] [--data DIR]

Each size: the month is generated once (bench/genmonth.py, seed 7, five planted exceptions)
into DIR (default: a folder under the system's temp dir, reused when it is there), the csv
baseline is the best of three reads of its eleven files (wall and CPU time), and closebot runs
`--repeat` times (default 3) in its own process with a fresh database: the median wall time,
CPU time (user + sys) and peak RSS from wait4. On a shared machine the wall time moves with
the load; the CPU ratio is the steadier figure. Printed beside the targets, never asserted; the questions asked are checked against the planted ones (that part
is correctness, and `--quick`, 2,000 lines only, is the CI smoke test's).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.genmonth import generate  # noqa: E402

PERIOD = "2026-10"
RATIO_TARGET = 10.0
RSS_TARGET_MB = 400.0
GROWTH_TARGET = 15.0
CLOSEBOT = (sys.executable, "-m", "bot")


def month(root: Path, size: int) -> Path:
    """The generated month of `size` JIB lines under `root` (generated once)."""
    data = root / f"month-{size}"
    if not (data / "planted.json").is_file() or not (data / PERIOD / "jib.csv").is_file():
        generate(data, size, seed=7)
    return data


def csv_seconds(folder: Path) -> tuple[float, float, int]:
    """Best of three: Python's csv module reading every file of the period, wall and CPU
    seconds; and its rows."""
    best, best_cpu, rows = float("inf"), float("inf"), 0
    for _ in range(3):
        start, cpu, rows = time.perf_counter(), time.process_time(), 0
        for path in sorted(folder.glob("*.csv")):
            with path.open(newline="", encoding="utf-8") as f:
                for _row in csv.reader(f):
                    rows += 1
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best, best_cpu, rows


def run_close(data: Path, db: Path) -> dict[str, float | int | str]:
    """closebot run --auto in its own process: wall and CPU seconds, peak RSS, exit code."""
    log = db.with_suffix(".log")
    with log.open("wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [*CLOSEBOT, "run", PERIOD, "--auto", "--data", str(data), "--db", str(db)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANTHROPIC_API_KEY": ""},
        )
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU time and peak RSS
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "code": proc.returncode,
        "tail": log.read_text(errors="replace")[-1500:],
    }


def asked(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select kind, details from exceptions").fetchall()
    return {json.loads(d)["ref"] for kind, d in rows if kind != "signoff"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2000,20000,200000")
    parser.add_argument("--quick", action="store_true", help="2,000 lines only (CI smoke)")
    parser.add_argument("--repeat", type=int, default=3, help="closebot runs per size (median)")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "closebot-bench")
    args = parser.parse_args(argv)
    sizes = [2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    repeat = 1 if args.quick else max(1, args.repeat)
    args.data.mkdir(parents=True, exist_ok=True)
    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared: timings move)"
    )
    header = (
        "| JIB lines | wells | rows in 11 files | csv read wall / CPU | closebot wall | closebot CPU "
        "| wall ÷ csv | CPU ÷ csv CPU | peak RSS | asked |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    walls: dict[int, float] = {}
    cpus: dict[int, float] = {}
    failed = False
    for size in sizes:
        data = month(args.data, size)
        planted = json.loads((data / "planted.json").read_text())
        baseline, baseline_cpu, rows = csv_seconds(data / PERIOD)
        want = {p["ref"] for p in planted["planted"]}
        runs = []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as tmp:
                db = Path(tmp) / "closebot.db"
                got = run_close(data, db)
                refs = asked(db) if db.exists() else set()
            runs.append(got)
            found, others = len(refs & want), len(refs - want)
            if got["code"] != 0 or found != len(want) or others:
                failed = True
                print(f"  run exited {got['code']}, asked {found} planted and {others} others:")
                print(got["tail"])
        wall = statistics.median(float(r["wall"]) for r in runs)
        cpu = statistics.median(float(r["cpu"]) for r in runs)
        rss = max(float(r["rss_mb"]) for r in runs)
        walls[size], cpus[size] = wall, cpu
        spread = (
            f" ({min(float(r['wall']) for r in runs):.1f}–{max(float(r['wall']) for r in runs):.1f})"
            if repeat > 1
            else ""
        )
        print(
            f"| {size:,} | {planted['wells']:,} | {rows:,} | {baseline:.2f} s / {baseline_cpu:.2f} s "
            f"| {wall:.1f} s{spread} | {cpu:.1f} s | {wall / baseline:.1f}× "
            f"| {cpu / baseline_cpu:.1f}× (target ≤ {RATIO_TARGET:.0f}×) "
            f"| {rss:.0f} MB (target < {RSS_TARGET_MB:.0f}) "
            f"| {found} of {len(want)} planted, {others} others |",
            flush=True,
        )
        print(f"  (load average {os.getloadavg()[0]:.1f} after {repeat} run(s))", flush=True)
    if 20000 in walls and 200000 in walls:
        print(
            f"growth: time(200k) / time(20k) = {walls[200000] / walls[20000]:.1f} wall, "
            f"{cpus[200000] / cpus[20000]:.1f} CPU (target ≤ {GROWTH_TARGET:.0f})"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

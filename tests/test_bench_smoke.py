"""`make bench` in small: every figure is measured and printed beside its target, and the
burst answers each Submit exactly once with nothing lost. Correctness only: no time is
asserted here (the machines are shared and noisy; timings belong to `make bench`)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

# bench/hosted.py is the PostgreSQL bench; these build and read their SQLite files directly
pytestmark = pytest.mark.sqlite_only("the benchmarks read their SQLite files with sqlite3")

ROOT = Path(__file__).resolve().parent.parent

FIGURES = (
    "/close ack p50, sequential",
    "Submit ack p50, sequential",
    "concurrent clients, resumes running",
    "burst:",
    "bot time per model step",
    "cost per sample close",
    "largest tool result",
    "runs waiting",
    "RSS with",
)


def test_the_quick_benchmark_prints_every_figure_and_the_burst_is_exactly_once() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "perf.py"), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]  # no header
    for figure in FIGURES:
        found = [r for r in rows if figure in r]
        assert found, f"no row for {figure!r} in:\n{done.stdout}"
        cells = [c.strip() for c in found[0].strip("|").split("|")]
        assert len(cells) == 6 and cells[1] and cells[2] and cells[5] in ("met", "missed"), cells
    burst = next(r for r in rows if "burst:" in r)
    count = int(re.search(r"burst: (\d+) paused runs", burst).group(1))  # type: ignore[union-attr]
    assert f"{count}/{count} once, 0 lost, 0 twice, {count} read-only" in burst, burst
    ack = next(r for r in rows if "Submit ack p50, sequential" in r)
    assert "Bolt dev server" in ack and "defaults" in ack  # all three references measured


def test_the_volume_benchmark_at_its_smallest_asks_the_planted_exceptions_and_nothing_else() -> (
    None
):
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "volume.py"), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 2,000 ")]
    assert len(rows) == 1, done.stdout
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[-1] == "5 of 5 planted, 0 others", cells
    assert cells[3].endswith(" s") and cells[4].endswith(" s") and "MB" in cells[8]


def _table(script: str, *args: str) -> list[list[str]]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    return [[c.strip() for c in r.strip("|").split("|")] for r in rows]


def test_the_load_benchmarks_in_small_print_their_figures_and_every_close_reaches_its_form() -> (
    None
):
    """bench/many_closes.py and bench/model_steps.py (issue 33), at their smallest."""
    closes = _table("many_closes.py", "--count", "12", "--clients", "4")
    assert [c[1] for c in closes] == ["every run", "≤ 50", "≤ 300 MB"]
    assert closes[0][2].startswith("12/12 in ") and closes[0][5] == "met", closes[0]
    assert all(c[5] in ("met", "missed") for c in closes)
    (steps,) = _table("model_steps.py", "--steps", "60")
    assert "bot time per model step through the Claude adapter" in steps[0]
    assert steps[1] == "≤ 1.5×" and steps[5] in ("met", "missed"), steps

"""docs/faults.md stays honest: every row names a collected test (parameters and all), and
there are at least 40 rows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "docs" / "faults.md"
ROW = re.compile(r"^\| (\d+) \|.*`(tests/\w+\.py::\w+(?:\[[^`]*\])?)` \|$")


def test_every_fault_row_names_a_test_that_is_collected() -> None:
    lines = [x for x in TABLE.read_text().splitlines() if re.match(r"^\| \d+ \|", x)]
    rows = [ROW.match(line) for line in lines]
    assert all(rows), [line for line, r in zip(lines, rows, strict=True) if not r]
    numbers = [int(r.group(1)) for r in rows if r]
    assert numbers == list(range(1, len(numbers) + 1))  # numbered in order, none skipped
    assert len(numbers) >= 40
    named = {r.group(2) for r in rows if r}
    files = sorted({n.split("::")[0] for n in named})
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    ).stdout.splitlines()
    ids = set(collected)
    functions = {i.split("[")[0] for i in ids}
    missing = sorted(n for n in named if n not in ids and n not in functions)
    assert missing == []

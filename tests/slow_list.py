"""Which tests `make test-fast` leaves out: rewrites tests/slow_tests.txt from a measured run.

    .venv/bin/pytest -q -p no:cacheprovider --durations=0 > /tmp/durations.log
    .venv/bin/python -m tests.slow_list /tmp/durations.log [more.log …]   # or: make slow-list

A test function is slow when one of its cases takes over CASE_SHARE of the whole suite's
measured time, or its cases together over FUNCTION_SHARE (a long parametrized sweep).
Shares, not seconds, so a run on a busy machine picks about the same tests as one on a
quiet machine; given several runs' logs, a test slow in any of them is slow. Whole kinds of tests are slow by module in tests/conftest.py (SLOW_MODULES).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

CASE_SHARE = 0.0005  # 0.33 s of a 660 s suite (2 cores, load ~7); ~0.1 s on a quiet machine
FUNCTION_SHARE = 0.002  # 1.3 s of the same suite
LIST = Path(__file__).with_name("slow_tests.txt")
LINE = re.compile(r"^([\d.]+)s (?:call|setup|teardown) +tests/(.+?)::(.+)$")  # ids may hold spaces


def slow_functions(log: str) -> list[str]:
    """`test_file.py::test_function` for each slow function in a --durations=0 log."""
    cases: dict[str, float] = defaultdict(float)
    for line in log.splitlines():
        m = LINE.match(line.strip())
        if m:
            cases[f"{m[2]}::{m[3]}"] += float(m[1])
    if not cases:
        raise SystemExit("no durations in the log: run pytest with --durations=0")
    total = sum(cases.values())
    largest: dict[str, float] = defaultdict(float)
    summed: dict[str, float] = defaultdict(float)
    for case, seconds in cases.items():
        function = case.split("[", 1)[0]
        largest[function] = max(largest[function], seconds)
        summed[function] += seconds
    return sorted(
        f for f in largest if largest[f] > CASE_SHARE * total or summed[f] > FUNCTION_SHARE * total
    )


def main(argv: list[str]) -> int:
    functions = sorted({f for log in argv[1:] for f in slow_functions(Path(log).read_text())})
    LIST.write_text(
        "# Written by tests/slow_list.py from a measured run (`make slow-list`); "
        "tests/conftest.py marks these `slow`.\n" + "".join(f"{f}\n" for f in functions)
    )
    print(f"{len(functions)} slow test functions → {LIST}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""What the model reads, and turns into the thread's summary, is never cut inside a number: the
October and November closes' tool results, the summary's decisions among them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.close_helpers import close_run

CUT_NUMBER = re.compile(r"[\d$.,]…")  # '0.22000…', '$620.00…', '2026-1…'


def texts(value: object) -> list[str]:
    if isinstance(value, str):
        try:
            return texts(json.loads(value))
        except ValueError:
            return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in texts(v)]
    return []


def test_no_tool_result_cuts_a_number(db_path: Path) -> None:
    for period in ("2026-10", "2026-11"):
        run = close_run(None, db_path, period)
        results = [
            b.get("content")
            for m in run.store.transcript.messages(run.run_id)
            for b in m.content
            if b.get("type") == "tool_result"
        ]
        assert results
        cut = [t for r in results for t in texts(r) if CUT_NUMBER.search(t)]
        assert cut == [], cut[:3]

"""A step lists at most twelve exceptions in its result (a tool result stays small); a month with
more than that in one step still asks every one of them, and the close posts."""

from __future__ import annotations

from pathlib import Path

from bot.close.toolbase import MAX_LIST
from tests.close_helpers import close_run
from tests.period_kit import FILES, write_period

UNKNOWN = MAX_LIST + 3  # properties nobody owns, each its own Intake exception


def test_more_open_exceptions_than_a_step_lists_are_all_asked(
    tmp_path: Path, db_path: Path
) -> None:
    extra = "".join(
        f"Acme Operating,ACME-0926,2026-09,ZZ-{n},,,LOE,Pumper,{100 + n}.00,0.50000000,{(100 + n) / 2:.2f}\n"
        for n in range(UNKNOWN)
    )
    write_period(tmp_path, jib=FILES["jib.csv"] + extra)
    run = close_run(tmp_path, db_path)
    unknown = [e for e in run.exceptions() if e["kind"] == "unknown_property"]
    assert len(unknown) == UNKNOWN
    assert [e["details"]["ref"] for e in unknown if e["status"] != "resolved"] == []
    asked = " ".join(str(q.questions) for q in run.store.questions.of_run(run.run_id))
    assert all(f"[ref {e['details']['ref']}]" in asked for e in unknown)
    assert run.batch()["status"] == "posted"

"""Work that grows with exceptions, not faster (issue 31): a month with many distinct
exceptions decodes each exception a bounded number of times over the whole close, not once
per decision per exception (which made 643 exceptions 744,628 `json.loads`). Time itself is
measured in bench/exceptions.py, never asserted here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from bot.close import ledger as ledger_module
from bot.close.decisions.tools import still_open
from bot.close.ledger import Ledger
from bot.close.registry import MAX_LIST
from tests.close_helpers import close_run

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.genmonth import generate

DISTINCT = 40


def test_each_exception_is_decoded_a_bounded_number_of_times_over_a_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "month"
    generate(data, 2000, seed=7, distinct=DISTINCT)
    decoded = [0]
    real = ledger_module._exception

    def counted(row: dict[str, Any]) -> Any:
        decoded[0] += 1
        return real(row)

    monkeypatch.setattr(ledger_module, "_exception", counted)
    run = close_run(data, tmp_path / "closebot.db")
    excs = Ledger(run.store).exceptions(run.run_id)
    wi = [e for e in excs if e["kind"] == "wi_nri"]
    assert len(wi) == DISTINCT and all(e["status"] == "resolved" for e in wi)
    # linear: a few reads of the whole run per step, one row per write — not one per decision
    assert decoded[0] < 20 * len(excs), f"{decoded[0]} decodes for {len(excs)} exceptions"


def test_what_is_still_open_is_what_the_step_lists_open(tmp_path: Path) -> None:
    """The index's answer equals the step result's (the open ones first, MAX_LIST of them)."""
    data = tmp_path / "month"
    generate(data, 2000, seed=7, distinct=DISTINCT)
    run = close_run(data, tmp_path / "closebot.db")
    ledger = Ledger(run.store)
    step = next(e for e in ledger.exceptions(run.run_id) if e["kind"] == "wi_nri")["details"][
        "step"
    ]
    # reopen all but the first few, as they stood mid-step, and compare both readings
    with run.store.write() as db:
        db.execute(
            "update exceptions set status = 'open' where run_id = ? and kind = 'wi_nri' "
            "and rowid > (select min(rowid) + 4 from exceptions where kind = 'wi_nri')",
            (run.run_id,),
        )
    from bot.close.toolset import CloseTools  # the step result, as the model reads it
    from bot.core.tools import ToolContext

    listed = CloseTools(data_dir=data)._step_result(
        ToolContext(run_id=run.run_id, store=run.store), ledger, step
    )
    expected = [
        {"ref": e["ref"], "step": step, "subject": e["subject"]}
        for e in listed["exceptions"]
        if e["status"] == "open"
    ]
    assert listed.get("more_exceptions") and len(expected) == MAX_LIST
    assert still_open(ledger, run.run_id, step) == {"still_open": expected}

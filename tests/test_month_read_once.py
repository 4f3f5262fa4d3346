"""A run reads its month's files once (issue 33): its turns and resumes reuse what it read,
even while other runs of other periods read theirs in between; a changed file is read again
and the run says its data changed (its evidence's SHA-256)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.close.data import FILES, loading
from bot.sandbox.slack_api import FakeSlack
from tests.slack_harness import Harness, distinct_periods


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[tuple[str, str]]]:
    """Every read of a period's file, as (period folder, file name), counted."""
    counted: Counter[tuple[str, str]] = Counter()
    read_file = loading._read_file

    def counting(folder: Path, spec: Any, *args: Any, **kwargs: Any) -> Any:
        counted[(folder.name, spec.name)] += 1
        return read_file(folder, spec, *args, **kwargs)

    monkeypatch.setattr(loading, "_read_file", counting)
    loading.KEPT.clear()
    yield counted
    loading.KEPT.clear()


def test_interleaved_runs_of_two_periods_each_read_their_month_once(
    fake: FakeSlack, db_path: Path, reads: Counter[tuple[str, str]]
) -> None:
    periods = distinct_periods(db_path.parent, 2)
    h = Harness(fake, db_path)
    try:
        runs = [h.start(p) for p in periods]
        answered = 0
        for _ in range(3):  # each run resumed three times, the other run's turn in between
            for run in runs:
                question_id = h.pending(run.id)
                h.submit(question_id, h.recommended_picks(question_id))
                h.idle()
                answered += 1
        assert answered == 6
        for run in runs:  # the runs went on past their answers (not stuck on the first)
            assert len(h.store.questions.of_run(run.id)) >= 4
    finally:
        h.close()
    # before issue 33: the last period read was kept alone, so each resume read the month again
    assert reads == Counter({(p, spec.name): 1 for p in periods for spec in FILES})

"""The thread's status line is set once per working stretch, off the turn's thread (issue 33):
however long a stretch takes, a step change does not set it again (its loading messages name
the step at work and the steps after it); a resume costs few Slack calls."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

from bot.sandbox.slack_api import FakeSlack
from tests.slack_harness import Harness

RESUMES = 5


def test_a_slow_stretch_sets_the_status_line_once(fake: FakeSlack, db_path: Path) -> None:
    h = Harness(fake, db_path)
    # A loaded machine, on the presenter's clock: every reading is 25 s after the last, so each
    # step of a stretch starts long after the one before (longer than any folding gap)
    ticks = itertools.count(start=0.0, step=25.0)
    h.service.presenter.status.clock = lambda: next(ticks)
    try:
        run = h.start()
        per_resume: list[Counter[str]] = []
        for _ in range(RESUMES):
            question_id = h.pending(run.id)
            before = len(fake.calls)
            h.submit(question_id, h.recommended_picks(question_id))
            h.idle()
            assert h.pending(run.id) != question_id  # the run went on to its next form
            per_resume.append(Counter(c.method for c in fake.calls[before:]))
        lines = [
            p
            for p in fake.to("assistant.threads.setStatus")
            if p.get("status") and p.get("thread_ts") == run.thread_ts
        ]
    finally:
        h.close()
    # one working stretch to the first form, then one per resume: one status line each at most
    # (none where the stretch ended before the fast pool got to it: nothing to show by then)
    assert 1 <= len(lines) <= 1 + RESUMES
    assert all(calls["assistant.threads.setStatus"] <= 1 for calls in per_resume)


def test_a_resume_costs_at_most_four_slack_calls(fake: FakeSlack, db_path: Path) -> None:
    """A decision's resume on its own: the form turned read-only (through its response_url),
    the status line, the next form; the plan and the channel's message wait for the next
    long stretch (issue 27)."""
    h = Harness(fake, db_path)
    try:
        run = h.start()
        per_resume: list[Counter[str]] = []
        for _ in range(RESUMES):
            question_id = h.pending(run.id)
            before = len(fake.calls)
            h.submit(question_id, h.recommended_picks(question_id))
            h.idle()
            assert h.pending(run.id) != question_id
            per_resume.append(Counter(c.method for c in fake.calls[before:]))
    finally:
        h.close()
    for calls in per_resume:
        # the line set (and, where it landed after the next form, cleared), and the next form
        assert sum(calls.values()) <= 4, calls

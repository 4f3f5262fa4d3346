"""The benchmark's burst, small: paused runs answered by concurrent Submits over HTTP (each
clicked twice) are each resumed exactly once, none lost. Correctness only, never time."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.blocks import SUBMIT_ACTION
from bot.sandbox.slack_api import FakeSlack, fake_slack
from bot.slack.http.server import HttpServer
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness, distinct_periods

RUNS = 6


@pytest.fixture
def served(db_path: Path) -> Iterator[tuple[Harness, FakeSlack, str]]:
    with fake_slack() as fake:
        harness = Harness(fake, db_path)
        server = HttpServer(harness.service, host="127.0.0.1", port=0)
        server.start()
        yield harness, fake, f"http://127.0.0.1:{server.port}/slack/events"
        server.stop()
        harness.close()


def test_concurrent_submits_resume_each_run_exactly_once(
    served: tuple[Harness, FakeSlack, str],
) -> None:
    bot, fake, url = served
    periods = distinct_periods(Path(bot.store.path).parent, RUNS)  # one live close a period
    runs = [bot.start(period) for period in periods]
    questions = [bot.pending(run.id) for run in runs]
    bodies = []
    for question_id in questions:
        form = bot.form_of(question_id)
        values = sp.form_values(form["blocks"], bot.recommended_picks(question_id), None, "ok")
        for user in ("UALICE", "UAPPROVER"):  # the starter and an approver, a moment apart
            bodies.append(
                sp.block_action(
                    SUBMIT_ACTION,
                    question_id,
                    user=user,
                    channel=form["channel"],
                    message=form,
                    values=values,
                )
            )
    statuses: list[int] = []
    start = threading.Barrier(len(bodies))

    def click(body: str) -> None:
        request = urllib.request.Request(
            url, data=body.encode(), headers=sp.signed_headers(body, content_type=FORM)
        )
        start.wait(timeout=10)
        with urllib.request.urlopen(request, timeout=10) as response:
            statuses.append(response.status)

    threads = [threading.Thread(target=click, args=(b,)) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    bot.idle()

    assert statuses == [200] * len(bodies)
    for run, question_id in zip(runs, questions, strict=True):
        record = bot.store.questions.get(question_id)
        assert record.status == "answered" and record.answered_by in ("UALICE", "UAPPROVER")
        answered = [
            e
            for e in bot.store.audit.events(run.id, kind="question_answered")
            if e.detail["question_id"] == question_id
        ]
        assert len(answered) == 1  # claimed once
        assert SUBMIT_ACTION not in str(bot.form_of(question_id)["blocks"])  # read-only
        after = bot.store.questions.pending(run.id)
        assert after is None or after.id != question_id  # the run moved on
        assert bot.store.runs.get(run.id).status in ("waiting", "done")
    told = [p for p in fake.to("chat.postEphemeral") if "already answered" in p.get("text", "")]
    assert len(told) == RUNS  # every second click was told, none lost

"""A rolling deploy with two real processes: today's closebot serving while a newer one (one
migration more, tests/newer_closebot.py) starts on the same database and migrates it. The
older process then stops taking work — /healthz 503 with the reason, every Slack request
answered politely, never a 500 — while the newer one serves."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bot.blocks import SUBMIT_ACTION
from bot.sandbox.slack_api import FakeSlack
from bot.slack.http.rolling import UPGRADING
from bot.store import Store
from tests import slack_payloads as sp
from tests.cli_run import closebot, run_id_of
from tests.slack_harness import Harness, slack_sample

NEWER = Path(__file__).parent / "newer_closebot.py"
FORM = "application/x-www-form-urlencoded"


@contextmanager
def serving(fake: FakeSlack, db_path: Path, *command: str) -> Iterator[str]:
    """A `closebot serve --http` process on a free port; yields its base URL."""
    env = {
        **os.environ,
        "SLACK_API_URL": fake.api_url,
        "SLACK_SIGNING_SECRET": sp.SECRET,
        "CLOSEBOT_DB": str(db_path),
        "CLOSEBOT_APPROVERS": "UAPPROVER,UAPPROVER2",
        "CLOSEBOT_DATA": str(slack_sample(db_path.parent)),
    }
    env.pop("SLACK_APP_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, *command, "serve", "--http", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first)
        assert found, first + (proc.stderr.read() if proc.stderr else "")
        yield found.group(1)
    except BaseException:
        proc.kill()
        proc.communicate(timeout=60)
        raise
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    assert "Traceback" not in err, err


def get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def post(base: str, body: str, content_type: str) -> tuple[int, bytes]:
    request = urllib.request.Request(
        base + "/slack/events",
        data=body.encode(),
        headers=sp.signed_headers(body, content_type=content_type),
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def count_runs(db_path: Path) -> int:
    """Read with plain SQL: today's Run cannot hold the newer release's column."""
    conn = sqlite3.connect(db_path)
    try:
        return int(conn.execute("select count(*) from runs").fetchone()[0])
    finally:
        conn.close()


def test_an_older_process_stops_taking_work_while_a_newer_one_serves(
    fake: FakeSlack, db_path: Path
) -> None:
    h = Harness(fake, db_path)  # today's code pauses a Slack run on its first form
    try:
        run = h.start("2026-10")
        question_id = h.pending(run.id)
        form = h.form_of(question_id)
        picks = h.recommended_picks(question_id)
    finally:
        h.close()
    values = sp.form_values(form["blocks"], picks, None, None)
    submit = sp.block_action(
        SUBMIT_ACTION,
        question_id,
        user="UALICE",
        channel=form["channel"],
        message=form,
        values=values,
    )
    with serving(fake, db_path, "-m", "bot") as older:
        assert get(older + "/healthz")[0] == 200
        with serving(fake, db_path, str(NEWER)) as newer:  # starts, migrates the database
            status, health = get(older + "/healthz")
            assert status == 503, health
            assert health["db"].startswith("outdated: a newer closebot upgraded the database")
            assert "m999_from_a_newer_release" in health["db"]
            assert get(newer + "/healthz")[0] == 200

            runs_before = count_runs(db_path)
            status, raw = post(
                older, sp.slash_command("2026-11", user="UALICE", channel="CFIN"), FORM
            )
            assert (status, json.loads(raw)) == (
                200,
                {"response_type": "ephemeral", "text": UPGRADING},
            )
            status, raw = post(older, submit, FORM)
            assert (status, raw) == (200, b"")
            assert fake.wait_for(
                lambda: any(
                    p.get("user") == "UALICE" and p.get("text") == UPGRADING
                    for p in fake.to("chat.postEphemeral")
                ),
                timeout=10,
            )
            said = sp.event(
                {
                    "type": "message",
                    "channel": run.channel,
                    "user": "UALICE",
                    "text": "do not post",
                    "ts": "1761909999.000001",
                    "thread_ts": run.thread_ts,
                },
                event_id="EvRolling1",
            )
            assert post(older, said, "application/json")[0] == 200
            store = Store(db_path)
            try:
                assert store.questions.get(question_id).status == "pending"  # the older did nothing
                assert count_runs(db_path) == runs_before
            finally:
                store.close()

            assert post(newer, submit, FORM)[0] == 200  # the newer one takes the same Submit
            store = Store(db_path)
            try:
                assert fake.wait_for(
                    lambda: store.questions.get(question_id).status == "answered", timeout=20
                )
            finally:
                store.close()


def test_closebot_run_and_resume_refuse_a_database_a_newer_closebot_migrated(
    db_path: Path,
) -> None:
    paused = closebot("run", "2026-10")  # no input: it waits on its first question
    assert paused.returncode == 3, paused.stdout + paused.stderr
    run_id = run_id_of(paused.stdout)
    migrated = subprocess.run(
        [sys.executable, str(NEWER), "runs"], capture_output=True, text=True, timeout=60
    )
    assert migrated.returncode == 0, migrated.stderr
    before = count_runs(db_path)
    for refused in (closebot("resume", run_id, "--auto"), closebot("run", "2026-10", "--auto")):
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "a newer closebot upgraded the database" in refused.stderr
        assert "m999_from_a_newer_release" in refused.stderr
    assert count_runs(db_path) == before
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("select status from runs where id = ?", (run_id,)).fetchone() == (
            "waiting",
        )
    finally:
        conn.close()

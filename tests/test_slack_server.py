"""The bot over HTTP: waitress serving /slack/events and /healthz, and `closebot serve` itself."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.sandbox.slack_api import FakeSlack
from bot.slack.http.server import HttpServer
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness


@pytest.fixture
def served(fake: FakeSlack, db_path: Path) -> Iterator[tuple[Harness, str]]:
    harness = Harness(fake, db_path)
    server = HttpServer(harness.service, host="127.0.0.1", port=0)
    server.start()
    yield harness, f"http://127.0.0.1:{server.port}"
    server.stop()
    harness.close()


def post(url: str, body: str, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_a_close_and_a_submit_over_http(served: tuple[Harness, str], fake: FakeSlack) -> None:
    bot, base = served
    body = sp.slash_command("2026-10")
    status, text = post(f"{base}/slack/events", body, sp.signed_headers(body, content_type=FORM))
    assert status == 200 and "Starting the October 2026 close" in json.loads(text)["text"]
    bot.idle()
    run = bot.store.runs.recent()[0]
    question_id = bot.pending(run.id)
    form = bot.form_of(question_id)
    submit = sp.block_action(
        "closebot_submit",
        question_id,
        message=form,
        channel=form["channel"],
        values=sp.form_values(form["blocks"], {1: 3, 2: 1}),
    )
    status, _ = post(f"{base}/slack/events", submit, sp.signed_headers(submit, content_type=FORM))
    assert status == 200
    bot.idle()
    assert bot.store.questions.get(question_id).status == "answered"
    assert not [b for b in bot.form_of(question_id)["blocks"] if b["type"] == "input"]


def test_http_refuses_bad_signatures_and_unknown_paths(
    served: tuple[Harness, str], fake: FakeSlack
) -> None:
    bot, base = served
    body = sp.slash_command("2026-10")
    status, _ = post(
        f"{base}/slack/events", body, sp.signed_headers(body, content_type=FORM, secret="nope")
    )
    assert status == 401
    status, _ = post(f"{base}/elsewhere", body, sp.signed_headers(body, content_type=FORM))
    assert status == 404
    assert bot.store.runs.recent() == [] and fake.to("chat.postMessage") == []


def test_healthz_reports_the_database(served: tuple[Harness, str]) -> None:
    _, base = served
    with urllib.request.urlopen(f"{base}/healthz", timeout=10) as response:
        assert response.status == 200
        assert json.loads(response.read()) == {
            "ok": True,
            "db": "ok",
            "slack": "ok",
            "runs_waiting": 0,
            "runs_stuck": 0,
        }


def _serve(fake: FakeSlack, db_path: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    full_env = {
        **os.environ,
        "SLACK_API_URL": fake.api_url,
        "SLACK_SIGNING_SECRET": sp.SECRET,
        "CLOSEBOT_DB": str(db_path),
        **env,
    }
    if "SLACK_APP_TOKEN" not in env:
        full_env.pop("SLACK_APP_TOKEN", None)
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full_env,
    )


def test_closebot_serve_listens_answers_and_stops_cleanly(fake: FakeSlack, db_path: Path) -> None:
    proc = _serve(fake, db_path, "--http", "--port", "0")
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        first = lines.get(timeout=30)
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)/slack/events", first)
        assert m, first
        body = sp.slash_command("2026-10")
        status, _ = post(
            f"{m.group(1)}/slack/events", body, sp.signed_headers(body, content_type=FORM)
        )
        assert status == 200
        assert fake.wait_for(
            lambda: any(
                p.get("blocks") and p["blocks"][-1]["type"] == "actions"
                for p in fake.to("chat.postMessage")
            ),
            timeout=30,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)  # not communicate(): the reader thread owns stdout
        reader.join(timeout=10)
        err = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 0, err
    rest = "".join(lines.get_nowait() for _ in range(lines.qsize()))
    assert "closebot: stopped" in rest and "Traceback" not in err


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"SLACK_BOT_TOKEN": ""},
            "closebot: error: SLACK_BOT_TOKEN is not set; HTTP mode needs it",
        ),
        (
            {"SLACK_SIGNING_SECRET": ""},
            "closebot: error: SLACK_SIGNING_SECRET is not set; HTTP mode needs it",
        ),
        (
            {"SLACK_BOT_TOKEN": "xoxb-invalid"},
            "closebot: error: Slack refused SLACK_BOT_TOKEN (invalid_auth)",
        ),
        (
            {"SLACK_BOT_TOKEN": "", "SLACK_APP_TOKEN": "xapp-1"},
            "closebot: error: SLACK_BOT_TOKEN is not set; Socket Mode needs it",
        ),
    ],
)
def test_serve_refuses_to_start_without_what_it_needs(
    fake: FakeSlack, db_path: Path, env: dict[str, str], message: str
) -> None:
    started = time.monotonic()
    http = (
        () if "SLACK_APP_TOKEN" in env else ("--http",)
    )  # an app token without --http means Socket Mode
    proc = _serve(fake, db_path, *http, "--port", "0", **env)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(message), err
    assert time.monotonic() - started < 60


def test_slow_loris_and_a_thousand_idle_connections_leave_healthz_and_a_signed_close_working(
    served: tuple[Harness, str],
) -> None:
    """120 connections dripping their headers and 1,000 connected and silent (issue 31): with
    waitress's defaults (100 connections) they took every slot and /healthz and a signed
    /close timed out."""
    import socket

    _, base = served
    port = int(base.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    try:
        for n in range(1120):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            if n < 120:  # the loris: a request begun, its headers never finished
                s.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nX-Drip: 1")
            held.append(s)
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as response:
            assert response.status == 200
        body = sp.slash_command("2026-10")
        status, text = post(
            f"{base}/slack/events", body, sp.signed_headers(body, content_type=FORM)
        )
        assert status == 200 and "Starting the October 2026 close" in json.loads(text)["text"]
    finally:
        for s in held:
            s.close()

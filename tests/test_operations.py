"""Operating the bot: logs with timestamps (plain or JSON), one line per request and per turn,
the start-up errors an operator can act on, the catch-all error handler, the audit in a terminal."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from bot.console.cli import main
from bot.sandbox.slack_api import FakeSlack
from bot.store import Store
from tests import slack_payloads as sp
from tests.conftest import WI_QUESTION, ScriptedModel, ask_input, text, tool_use
from tests.slack_harness import FORM, Harness


def run_serve(fake: FakeSlack, db_path: Path, *flags: str) -> str:
    """Start `closebot serve`, send one /close, wait for its form, SIGTERM; its stderr."""
    env = {
        **os.environ,
        "SLACK_API_URL": fake.api_url,
        "SLACK_SIGNING_SECRET": sp.SECRET,
        "CLOSEBOT_DB": str(db_path),
    }
    env.pop("SLACK_APP_TOKEN", None)
    env.pop("CLOSEBOT_LOG_LEVEL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "serve", "--http", "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)/slack/events", first)
        assert m, first
        body = sp.slash_command("2026-10")
        request = urllib.request.Request(
            f"{m.group(1)}/slack/events",
            data=body.encode(),
            headers=sp.signed_headers(body, content_type=FORM),
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
        assert fake.wait_for(
            lambda: any(
                "decision is needed" in str(p.get("text")) for p in fake.to("chat.postMessage")
            ),
            timeout=60,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


def test_serve_logs_at_info_with_timestamps_a_line_per_request_and_per_turn(
    fake: FakeSlack, db_path: Path
) -> None:
    err = run_serve(fake, db_path)
    assert re.search(
        rf"^{STAMP} INFO bot\.slack\.http\.server: POST /slack/events command:/close → 200 in [\d.]+ ms$",
        err,
        re.M,
    ), err
    assert re.search(
        rf"^{STAMP} INFO bot\.slack\.work\.jobs: run \w+: starting the close → waiting in [\d.]+ s$",
        err,
        re.M,
    ), err
    assert "draining" in err and "Traceback" not in err
    assert "xoxb-test-token" not in err and sp.SECRET not in err  # no secret in any log


def test_log_json_writes_one_object_per_line(fake: FakeSlack, db_path: Path) -> None:
    err = run_serve(fake, db_path, "--log-json")
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert lines and all({"time", "level", "logger", "message"} <= set(x) for x in lines)
    assert any(
        x["logger"] == "bot.slack.http.server" and "command:/close → 200" in x["message"]
        for x in lines
    )


def test_an_unreachable_slack_at_start_up_is_named_as_such(db_path: Path) -> None:
    env = {
        **os.environ,
        "SLACK_API_URL": "http://127.0.0.1:9/api/",  # nothing listens on the discard port
        "SLACK_SIGNING_SECRET": sp.SECRET,
        "CLOSEBOT_DB": str(db_path),
    }
    env.pop("SLACK_APP_TOKEN", None)
    proc = subprocess.run(
        [sys.executable, "-m", "bot", "serve", "--http", "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "closebot: error: cannot reach Slack at SLACK_API_URL=http://127.0.0.1:9/api/"
    ), last
    assert "cannot listen" not in proc.stderr


def test_a_listener_bug_is_logged_with_context_and_the_person_is_told(
    fake: FakeSlack,
    db_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = Harness(fake, db_path, model=ScriptedModel())
    try:

        def broken(run_id: str, **kw: object) -> None:
            raise RuntimeError("a bug in the start path")

        monkeypatch.setattr(
            h.service.work, "start_close", broken
        )  # the one seam a bug can be put in
        with caplog.at_level(logging.ERROR, logger="bot.slack.listeners.errors"):
            h.command("2026-10")
        h.idle()
        (record,) = [r for r in caplog.records if "listener failed" in r.getMessage()]
        assert (
            "RuntimeError: a bug in the start path (type=/close user=UALICE channel=CFIN)"
            in record.getMessage()
        )
        (notice,) = h.ephemerals_to("UALICE")
        assert notice.startswith("Something went wrong on my side")
    finally:
        h.close()


def test_a_thread_message_between_a_claim_and_its_resume_is_read_not_lost(
    fake: FakeSlack, db_path: Path
) -> None:
    model = ScriptedModel()
    model.enqueue(
        text("Asking."), tool_use("toolu_q1", "ask_user_question", **ask_input(WI_QUESTION))
    )
    model.enqueue(text("Carried on after the answer, having read the note."))
    h = Harness(fake, db_path, model=model)
    try:
        run = h.start()
        # The answer is claimed, but its resume never ran (the process died in between).
        record = h.store.questions.get("toolu_q1")
        from bot.agent_loop import ask_of
        from bot.core.questions import answer_payload, default_responses

        ask = ask_of(record)
        h.store.questions.claim(
            record.id,
            answer=answer_payload(ask, default_responses(ask)),
            answered_by="UALICE",
            source="user",
        )
        h.say(run, "note: the Smith well was sold")
        h.idle()
        # read with the answer's result, at the step after it: not lost, not later
        (resumed,) = [
            m.content
            for m in h.store.transcript.messages(run.id)
            if m.role == "user" and any(b.get("type") == "tool_result" for b in m.content)
        ]
        assert "<@UALICE>: note: the Smith well was sold" in str(resumed[-1].get("text"))
        assert h.store.runs.get(run.id).status == "done" and model.replies == []
    finally:
        h.close()


def test_audit_shows_control_characters_instead_of_obeying_them(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(db_path)
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    store.questions.create(
        run.id,
        question_id="toolu_esc",
        context="c",
        questions=[{"question": "Book it?\x1b[2J", "type": "free_text", "required": True}],
    )
    store.questions.claim(
        "toolu_esc",
        answer={"1": {"question": "Book it?", "text": "yes\x1b]0;pwned\x07"}},
        answered_by="alice\x1b[31m",
        source="console",
    )
    store.close()
    assert main(["audit", run.id]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "Book it?\\x1b[2J" in out and "alice\\x1b[31m" in out

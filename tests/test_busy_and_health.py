"""A database locked by another process, or read-only; /healthz telling the truth about it.

The lock is held by a real second process. Waits are bounded joins on the request's thread,
never sleeps: with the store's normal 10 s busy timeout a request that waited on the lock
would still be running when the bound runs out.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.sandbox.slack_api import FakeSlack
from bot.slack.close_start import BUSY, DB_DOWN
from bot.slack.http.server import HttpServer
from tests.conftest import WI_QUESTION, Clock, ScriptedModel, ask_input, text, tool_use
from tests.slack_harness import Harness

LOCKER = (  # a store's write transaction: SQLite's BEGIN IMMEDIATE, PostgreSQL's write lock
    "import sys\n"
    "from bot.store import Store\n"
    "with Store(sys.argv[1]).write():\n"
    "    print('locked', flush=True)\n"
    "    sys.stdin.read()\n"
)
BOUND = 5.0  # seconds; a request that waited on the lock would take the 10 s busy timeout


class Locker:
    """Another process holding the database's write lock until release()."""

    def __init__(self, db_path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(db_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def within_bound(call: Callable[[], Any]) -> Any:
    """Run `call` on a thread; it must finish within BOUND (else it waited on the lock)."""
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(result=call()), daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), "the request waited on the database lock"
    return box["result"]


@pytest.fixture
def model() -> ScriptedModel:
    m = ScriptedModel()
    m.enqueue(text("Asking."), tool_use("toolu_q1", "ask_user_question", **ask_input(WI_QUESTION)))
    m.enqueue(text("Done."))
    return m


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path, model: ScriptedModel) -> Iterator[Harness]:
    h = Harness(fake, db_path, model=model)
    yield h
    h.close()


def test_a_submit_while_another_process_holds_the_lock_is_acked_busy_and_kept_for_later(
    bot: Harness, db_path: Path
) -> None:
    run = bot.start()
    locker = Locker(db_path)
    try:
        response = within_bound(lambda: bot.submit("toolu_q1", {1: 1}))
        assert response.status == 200
    finally:
        locker.release()
    bot.idle()
    assert bot.ephemerals_to("UALICE") == [BUSY]
    assert bot.store.questions.get("toolu_q1").status == "pending"  # the click changed nothing
    bot.submit("toolu_q1", {1: 1})  # and works once the lock is gone
    bot.idle()
    assert bot.store.runs.get(run.id).status == "done"


def test_a_close_command_under_a_lock_gets_busy_not_a_500(bot: Harness, db_path: Path) -> None:
    locker = Locker(db_path)
    try:
        response = within_bound(lambda: bot.command("2026-10"))
    finally:
        locker.release()
    assert response.status == 200 and json.loads(response.body)["text"] == BUSY
    assert bot.store.runs.recent() == []


def test_a_thread_message_under_a_lock_is_answered_busy(bot: Harness, db_path: Path) -> None:
    run = bot.start()
    locker = Locker(db_path)
    try:
        assert within_bound(lambda: bot.say(run, "status?")).status == 200
    finally:
        locker.release()
    bot.idle()
    (notice,) = bot.ephemerals_to("UALICE")
    assert "could not read your message" in notice


@pytest.mark.sqlite_only("SQLite's query_only pragma makes the file read-only")
def test_a_read_only_database_answers_close_with_a_reason_not_a_500(bot: Harness) -> None:
    bot.store.db.execute("pragma query_only = on")  # SQLite refuses every write: SQLITE_READONLY
    response = bot.command("2026-10")
    assert response.status == 200 and json.loads(response.body)["text"] == DB_DOWN
    assert bot.store.health().startswith("read-only")


# -- /healthz ------------------------------------------------------------------------------


def get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture
def served(bot: Harness) -> Iterator[str]:
    server = HttpServer(bot.service, host="127.0.0.1", port=0)
    server.start()
    yield f"http://127.0.0.1:{server.port}/healthz"
    server.stop()


def test_healthz_is_503_and_quick_while_the_database_is_locked(served: str, db_path: Path) -> None:
    locker = Locker(db_path)
    try:
        status, body = within_bound(lambda: get(served))
    finally:
        locker.release()
    assert status == 503 and body["ok"] is False and body["db"] == "locked"
    assert get(served) == (
        200,
        {"ok": True, "db": "ok", "slack": "ok", "runs_waiting": 0, "runs_stuck": 0},
    )


@pytest.mark.sqlite_only("SQLite's query_only pragma makes the file read-only")
def test_healthz_is_503_on_a_read_only_database(served: str, bot: Harness) -> None:
    bot.store.db.execute("pragma query_only = on")
    status, body = get(served)
    assert status == 503 and body["db"].startswith("read-only")


def test_healthz_is_503_when_slack_refuses_the_token(
    served: str, bot: Harness, fake: FakeSlack
) -> None:
    fake.fail("auth.test", error="token_revoked")
    assert bot.service.work.check_slack() == "token_revoked"
    status, body = get(served)
    assert status == 503 and body["slack"] == "token_revoked" and body["db"] == "ok"
    assert bot.service.work.check_slack() == "ok"  # restored
    assert get(served)[0] == 200


def test_healthz_counts_stuck_runs(fake: FakeSlack, db_path: Path) -> None:
    clock = Clock()
    h = Harness(fake, db_path, model=ScriptedModel(), clock=clock)
    server = HttpServer(h.service, host="127.0.0.1", port=0)
    server.start()
    try:
        run = h.store.runs.create(
            period="2026-10", mode="slack", started_by="UALICE", model="scripted", channel="CFIN"
        )
        h.store.runs.set_thread(run.id, channel="CFIN", thread_ts="1.0", status_ts="1.1")
        clock.advance(minutes=1)
        assert get(f"http://127.0.0.1:{server.port}/healthz")[1]["runs_stuck"] == 0
        clock.advance(minutes=5)
        status, body = get(f"http://127.0.0.1:{server.port}/healthz")
        assert status == 200 and body["runs_stuck"] == 1  # reported; the watchdog resumes it
        assert h.store.runs.stuck(idle_for=timedelta(minutes=2))[0].id == run.id
    finally:
        server.stop()
        h.close()

"""Two processes on one database: a run is advanced by at most one of them at a time."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.sandbox.slack_api import FakeSlack
from bot.store import Store
from tests import slack_payloads as sp
from tests.conftest import ScriptedModel, text
from tests.slack_harness import Harness


def interrupted_run(fake: FakeSlack, db_path: Path) -> str:
    """A Slack run whose thread is open and whose turn was cut off before the first model call."""
    h = Harness(fake, db_path, model=ScriptedModel())
    try:
        run = h.store.runs.create(
            period="2026-10",
            mode="slack",
            started_by="UALICE",
            model="offline-playbook",
            channel="CFIN",
        )
        h.service.presenter.open_thread(run.id)
        from bot.close.prompts import start_prompt

        h.store.transcript.append(run.id, role="user", content=[text(start_prompt("2026-10"))])
        return run.id
    finally:
        h.close()


def test_closebot_resume_refuses_a_run_another_process_is_advancing(db_path: Path) -> None:
    store = Store(db_path)
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    try:
        with store.leases.held(
            run.id, owner="serve on host-a (pid 42)", ttl=timedelta(minutes=5)
        ) as held:
            assert held is None
            proc = subprocess.run(
                [sys.executable, "-m", "bot", "resume", run.id, "--auto"],
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, "CLOSEBOT_DB": str(db_path)},
            )
        assert proc.returncode == 1
        assert f"run {run.id} is being advanced by serve on host-a (pid 42)" in proc.stderr
        assert [m.role for m in store.transcript.messages(run.id)] == []  # it did nothing
    finally:
        store.close()


def test_a_second_process_leaves_a_run_alone_while_the_first_advances_it(
    fake: FakeSlack, db_path: Path
) -> None:
    entered, release = threading.Event(), threading.Event()

    class SlowModel(ScriptedModel):
        def respond(self, **kw: Any) -> Any:
            entered.set()
            assert release.wait(30)
            return super().respond(**kw)

    run_id = interrupted_run(fake, db_path)
    first_model, second_model = SlowModel(), ScriptedModel()
    first_model.enqueue(text("Done by the first process."))
    first = Harness(fake, db_path, model=first_model)
    second = Harness(fake, db_path, model=second_model)
    try:
        assert first.service.work.recover() == [run_id]
        assert entered.wait(30)
        assert second.service.work.recover() == []  # the lease says the first one has it
        second.service.work.stuck_after = timedelta(0)
        assert second.service.work.heal()["runs"] == []
        # Even a job the second process queued for the run steps aside.
        second.service.work.retry(run_id)
        second.idle()
        release.set()
        first.idle()
        assert first.store.runs.get(run_id).status == "done"
        assert second_model.history == []  # the second process never called its model
        assert (
            len(
                [
                    p
                    for p in fake.to("chat.postMessage")
                    if (p.get("text") or "").startswith("Done by the first process.")
                ]
            )
            == 1
        )
    finally:
        release.set()
        first.close()
        second.close()


def serve(fake: FakeSlack, db_path: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "SLACK_API_URL": fake.api_url,
        "SLACK_SIGNING_SECRET": sp.SECRET,
        "CLOSEBOT_DB": str(db_path),
    }
    env.pop("SLACK_APP_TOKEN", None)
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "serve", "--http", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_two_serve_processes_on_one_database_advance_an_interrupted_run_once(
    fake: FakeSlack, db_path: Path
) -> None:
    run_id = interrupted_run(fake, db_path)
    before = len(fake.calls)
    procs = []
    try:
        procs = [serve(fake, db_path) for _ in range(2)]  # both start, and recover, at once
        for proc in procs:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            assert re.search(r"listening on http://127\.0\.0\.1:\d+", first), first
        # The offline playbook asks its first question: the run waits on a person.
        assert fake.wait_for(
            lambda: any(
                "decision is needed" in str(c.params.get("text")) for c in fake.calls[before:]
            ),
            timeout=60,
        )
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        errs = [proc.communicate(timeout=60)[1] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), errs
    store = Store(db_path)
    try:
        assert store.runs.get(run_id).status == "waiting"
        forms = [
            c for c in fake.calls[before:] if "decision is needed" in str(c.params.get("text"))
        ]
        assert len(forms) == 1  # one form, not one per process
        assistant = [
            json.dumps(m.content)
            for m in store.transcript.messages(run_id)
            if m.role == "assistant"
        ]
        assert len(assistant) == len(set(assistant))  # no turn twice in the transcript
        narration = [
            c.params.get("text") for c in fake.calls[before:] if c.method == "chat.postMessage"
        ]
        assert len(narration) == len(set(narration))  # nothing posted twice
    finally:
        store.close()

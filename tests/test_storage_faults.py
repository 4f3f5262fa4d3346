"""Storage faults are named, not 500s: a damaged file is refused at start and reported by
/healthz, a full disk is told to the person and heals by itself, `closebot doctor` and
`closebot backup`. Real SQLite files; a real `closebot serve` whose file size limit the
test lowers and raises (RLIMIT_FSIZE, through prlimit) as a full disk would."""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bot.core.errors import CorruptDatabaseError
from bot.sandbox.slack_api import FakeSlack
from bot.slack.http.server import HttpServer
from bot.store import Store
from tests import slack_payloads as sp
from tests.conftest import text
from tests.slack_harness import FORM, Harness
from tests.test_recovery import WAIT, serving


def closebot(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CLOSEBOT_DB": str(db)},
    )


def filled(db_path: Path, runs: int = 30) -> None:
    """A database with some runs, messages and audit events in it, checkpointed."""
    store = Store(db_path)
    for n in range(runs):
        run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
        for i in range(20):
            store.transcript.append(run.id, role="user", content=[text(f"message {n}.{i} " * 20)])
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()


def garble(db_path: Path, *, offset: int, size: int) -> None:
    """Overwrite with a fixed pattern (not random bytes: every run damages the file alike)."""
    with db_path.open("r+b") as f:
        f.seek(offset)
        f.write((b"\xde\xad\xbe\xef" * (size // 4 + 1))[:size])


def health(port: int) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_a_file_with_garbage_mid_file_is_refused_at_start_with_a_clear_message(
    db_path: Path,
) -> None:
    filled(db_path)
    size = db_path.stat().st_size
    garble(db_path, offset=size // 2 // 4096 * 4096, size=8192)  # 8 KB mid-file
    with pytest.raises(CorruptDatabaseError, match="is damaged"):
        Store(db_path)
    served = closebot("serve", "--http", "--port", "0", db=db_path)
    assert served.returncode == 2, served.stderr
    last = served.stderr.strip().splitlines()[-1]
    assert last.startswith(f"closebot: error: the database {db_path} is damaged"), last
    assert "closebot will not serve from it" in last and "Traceback" not in served.stderr
    doctor = closebot("doctor", db=db_path)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert "PROBLEM  integrity:" in doctor.stdout


@pytest.mark.sqlite_only("garbles the SQLite file's pages")
def test_healthz_reports_a_file_damaged_under_a_running_server_as_corrupt(
    fake: FakeSlack, db_path: Path
) -> None:
    filled(db_path)
    h = Harness(fake, db_path)
    server = HttpServer(h.service, host="127.0.0.1", port=0)
    server.start()
    try:
        assert health(server.port)[0] == 200
        garble(db_path, offset=4096, size=db_path.stat().st_size - 4096)  # all but the header
        status, body = health(server.port)  # a new server thread: a new read connection
        assert (status, body["db"]) == (503, "corrupt"), body
    finally:
        server.stop()
        h.close()


def test_doctor_finds_a_sound_database_sound_and_names_a_dead_lease(db_path: Path) -> None:
    filled(db_path, runs=2)
    store = Store(db_path)
    (run_id, *_) = [r.id for r in store.runs.recent()]
    gone = "this-host-does-not-matter:1:-:abc closebot serve"
    store.db.execute(
        "insert into leases (run_id, owner, expires_at) values (?, ?, ?)",
        (run_id, gone.replace("this-host-does-not-matter", os.uname().nodename), "9999"),
    )
    store.db.conn.commit()
    store.close()
    report = closebot("doctor", db=db_path)
    # pid 1 is alive here, so the lease is a live holder's: noted, not a problem
    assert report.returncode == 0, report.stdout + report.stderr
    assert "audit: 2 run(s), every chain intact" in report.stdout
    assert f"lease: run {run_id} held by closebot serve, pid 1" in report.stdout


def test_backup_is_an_online_copy_that_opens_and_a_second_one_over_it_is_refused(
    db_path: Path, tmp_path: Path
) -> None:
    filled(db_path, runs=3)
    reader = Store(db_path)  # closebot still has the database open
    copy = tmp_path / "backup.db"
    made = closebot("backup", str(copy), db=db_path)
    assert made.returncode == 0, made.stderr
    assert f"backed up {db_path} to {copy}" in made.stdout
    restored = Store(copy)
    try:
        assert [r.id for r in restored.runs.recent()] == [r.id for r in reader.runs.recent()]
        assert all(restored.audit.verify(r.id)[1] is None for r in restored.runs.recent())
    finally:
        restored.close()
        reader.close()
    again = closebot("backup", str(copy), db=db_path)
    assert again.returncode == 2 and "exists already" in again.stderr


@pytest.mark.skipif(not hasattr(resource, "prlimit"), reason="needs Linux prlimit")
def test_a_full_disk_is_told_to_the_person_not_a_500_and_heals_when_space_returns(
    fake: FakeSlack, db_path: Path
) -> None:
    with serving(fake, db_path) as served:
        checkpoint = sqlite3.connect(db_path)
        checkpoint.execute(
            "PRAGMA wal_checkpoint(TRUNCATE)"
        )  # the WAL is empty: any write grows it
        checkpoint.close()
        unlimited = resource.RLIM_INFINITY  # the soft limit only: it can be raised again
        resource.prlimit(served.proc.pid, resource.RLIMIT_FSIZE, (1, unlimited))  # disk full
        try:
            status, body = health(served.port)
            assert (status, body["db"]) == (503, "full"), body
            status, answer = slash(served.port)
            assert status == 200, answer  # answered, no 500
            assert answer.get("response_type") == "ephemeral", answer
            assert answer["text"].startswith("closebot can't save right now, nothing was changed")
        finally:
            resource.prlimit(served.proc.pid, resource.RLIMIT_FSIZE, (unlimited, unlimited))
        store = Store(db_path)
        try:
            assert store.runs.recent() == []  # nothing half-written
        finally:
            store.close()
        status, body = health(served.port)  # space is back: no restart needed
        assert (status, body["db"]) == (200, "ok"), body
        assert served.post(sp.slash_command("2026-10")) == 200
        assert fake.wait_for(lambda: bool(fake.to("chat.postMessage")), timeout=WAIT)
        err = served.stop()
    assert served.proc.returncode == 0, err
    assert "Traceback" not in err and "→ 500" not in err


def slash(port: int) -> tuple[int, dict[str, object]]:
    """/close 2026-10, signed, through the real edge; the ack's status and JSON."""
    body = sp.slash_command("2026-10")
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/slack/events",
        data=body.encode(),
        headers=sp.signed_headers(body, content_type=FORM),
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, {"error": e.read().decode()}

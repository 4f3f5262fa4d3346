"""A person's name is part of the record (issue 31): the approver's display name, edited in the
database to "Mallory Fake", put that name in the decision log while `closebot audit --verify`
and `closebot doctor` said nothing. Names are covered by the register of the audit chain: an
edit, a deletion or a name added outside closebot is found by both. A close run through the
real app on the fake Slack (names looked up with users.info, as in production), then the
SQLite file edited as someone with the file but not the audit key would."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bot.core.decision_log import decision_rows
from bot.sandbox.slack_api import FakeSlack
from bot.store import Store
from tests.cli_run import closebot
from tests.slack_harness import Harness

APPROVER = "UAPPROVER"


def closed_in_slack(fake: FakeSlack, db_path: Path) -> str:
    h = Harness(fake, db_path)
    try:
        run = h.start()
        h.finish(run.id)
        assert h.store.runs.get(run.id).status == "done"
    finally:
        h.close()
    return run.id


def cli(db: Path, *args: str) -> tuple[int, str]:
    done = closebot(*args, env={"CLOSEBOT_DB": str(db)})  # the key file beside the database
    return done.returncode, done.stdout + done.stderr


def named_in_log(db: Path, run_id: str) -> set[str]:
    store = Store(db)
    try:
        return {
            r["answered_by_name"]
            for r in decision_rows(store, run_id)
            if r["answered_by"] == APPROVER
        }
    finally:
        store.close()


@pytest.mark.sqlite_only("edits the SQLite file through sqlite3, outside closebot")
def test_an_approvers_name_edited_in_the_database_is_found_by_verify_and_the_doctor(
    fake: FakeSlack, db_path: Path
) -> None:
    run_id = closed_in_slack(fake, db_path)
    shown = named_in_log(db_path, run_id)
    assert shown and "Mallory Fake" not in shown  # the name Slack gave (users.info)
    assert cli(db_path, "audit", run_id, "--verify")[0] == 0
    assert cli(db_path, "doctor")[0] == 0
    with sqlite3.connect(db_path) as conn:
        edited = conn.execute(
            "update people set real_name = 'Mallory Fake', display_name = 'Mallory' where id = ?",
            (APPROVER,),
        ).rowcount
    assert edited == 1
    assert named_in_log(db_path, run_id) == {"Mallory Fake"}  # what the edit would make people read
    code, out = cli(db_path, "audit", run_id, "--verify")
    assert code == 1 and "BROKEN" in out and f"people:{APPROVER}" in out, out
    assert "changed after it was written" in out, out
    code, out = cli(db_path, "doctor")
    assert code == 1 and "is sound" not in out and f"people:{APPROVER}" in out, out


@pytest.mark.sqlite_only("edits the SQLite file through sqlite3, outside closebot")
def test_a_name_added_or_deleted_outside_closebot_is_found(fake: FakeSlack, db_path: Path) -> None:
    run_id = closed_in_slack(fake, db_path)
    with sqlite3.connect(db_path) as conn:
        conn.execute("delete from people where id = ?", (APPROVER,))
        conn.execute(
            "insert into people (id, real_name, display_name, handle, fetched_at) "
            "values ('UMALLORY', 'Mallory Fake', 'Mallory', 'mallory', '2026-11-01T00:00:00+00:00')"
        )
    code, out = cli(db_path, "audit", run_id, "--verify")
    assert code == 1 and f"people:{APPROVER}" in out and "was deleted" in out, out
    assert "people:UMALLORY" in out and "added outside closebot" in out, out
    code, out = cli(db_path, "doctor")
    assert code == 1 and f"people:{APPROVER}" in out and "people:UMALLORY" in out, out


@pytest.mark.sqlite_only("edits the SQLite file through sqlite3, outside closebot")
def test_a_name_slack_changes_is_recorded_and_still_verifies(
    fake: FakeSlack, db_path: Path
) -> None:
    """A person renamed in Slack (users.info says so on the next look-up) is a new name on the
    record, not a tampering."""
    closed_in_slack(fake, db_path)
    store = Store(db_path)
    try:
        store.people.remember(APPROVER, real_name="Paula Renamed", display_name="Paula", handle="p")
        assert store.people.get(APPROVER)["real_name"] == "Paula Renamed"  # type: ignore[index]
        assert store.audit.register_problems() == []
        before = store.query("select count(*) as n from audit_events")[0]["n"]
        # fetched again, the same names: nothing more on the record
        store.people.remember(APPROVER, real_name="Paula Renamed", display_name="Paula", handle="p")
        assert store.query("select count(*) as n from audit_events")[0]["n"] == before
    finally:
        store.close()
    assert cli(db_path, "doctor")[0] == 0


@pytest.mark.sqlite_only("edits the SQLite file through sqlite3, outside closebot")
def test_names_an_earlier_release_kept_verify_after_the_upgrade_and_an_edit_then_shows(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database of the release before names were covered: it kept names in `people` (the
    table since m010) with no event of them. Made here from an earlier release's fixture
    (tests/fixtures/upgrade) opened by today's code with the names' adoption left out, as
    that release had none, and a name written as it wrote one. On the first start of this
    release the names are recorded as they stand, everything verifies, and an edit made
    after that is found."""
    from bot.store.people import People
    from tests.test_upgrade import load

    old = load("5db3991", db_path)
    with monkeypatch.context() as before:
        before.setattr(People, "_adopt", lambda self: None)
        store = Store(db_path)
        store.close()
    with sqlite3.connect(db_path) as conn:  # a name as that release kept it (users.info)
        conn.execute(
            "insert into people (id, real_name, display_name, handle, fetched_at) "
            "values (?, 'Ben Ortiz', 'Ben', 'ben.ortiz', '2026-10-31T12:00:00+00:00')",
            (APPROVER,),
        )
    assert cli(db_path, "audit", old.posted, "--verify")[0] == 0  # the first start adopts
    assert cli(db_path, "doctor")[0] == 0
    with sqlite3.connect(db_path) as conn:
        conn.execute("update people set real_name = 'Mallory Fake' where id = ?", (APPROVER,))
    code, out = cli(db_path, "audit", old.posted, "--verify")
    assert code == 1 and f"people:{APPROVER}" in out and "changed after" in out, out
    code, out = cli(db_path, "doctor")
    assert code == 1 and f"people:{APPROVER}" in out, out

"""The audit chain's versions: each event is checked with the algorithm that wrote it, events
from before the chain are accepted only where the upgrade found them, nothing is re-hashed."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from bot.store import Store, chain
from bot.store.migrations import migrations


def _old_database(path: Path, *, stop_before: str) -> Database:
    db = Database(sqlite3.connect(path))
    migrations.apply(db, stop_before=stop_before)
    db.table("runs").insert(
        {
            "id": "r1",
            "period": "2026-10",
            "mode": "console",
            "status": "done",
            "steps": "{}",
            "created_at": "2026-10-01T00:00:00.000+00:00",
            "updated_at": "2026-10-01T00:00:00.000+00:00",
        }
    )
    return db


def _sha256(prev: str, event: dict[str, Any]) -> str:
    """The chain as releases 4db486f and 0fd23f4 wrote it, computed here independently."""
    text = json.dumps([prev, event], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _event(n: int) -> dict[str, Any]:
    return {
        "run_id": "r1",
        "at": f"2026-10-01T00:00:0{n}.000+00:00",
        "kind": f"k{n}",
        "actor": "alice",
        "detail": "{}",
    }


@pytest.mark.sqlite_only("an earlier release's SQLite file, built by hand")
def test_events_from_before_the_chain_verify_as_unchained_and_new_ones_chain_after_them(
    db_path: Path,
) -> None:
    old = _old_database(db_path, stop_before="m004_evidence")  # release 68fe5b6's schema
    for n in (1, 2):
        old.table("audit_events").insert(_event(n))
    old.conn.close()
    store = Store(db_path)
    store.audit.record(run_id="r1", kind="after_upgrade", actor="bob")
    verdict = store.audit.verdict("r1")
    assert (verdict.checked, verdict.broken, verdict.unchained) == (3, None, 2)
    rows = store.db.execute(
        "select hash, hash_alg, prev_hash from audit_events order by id"
    ).fetchall()
    assert rows[:2] == [(None, None, None), (None, None, None)]  # history is not re-hashed
    assert rows[2][1:] == (chain.CURRENT, "")


@pytest.mark.sqlite_only("an earlier release's SQLite file, built by hand")
def test_removing_the_hash_of_an_event_written_after_the_upgrade_breaks_the_chain(
    db_path: Path,
) -> None:
    old = _old_database(db_path, stop_before="m004_evidence")
    old.table("audit_events").insert(_event(1))
    old.conn.close()
    store = Store(db_path)
    store.audit.record(run_id="r1", kind="after_upgrade", actor="bob")
    store.db.execute(
        "update audit_events set hash = null, prev_hash = null, hash_alg = null "
        "where kind = 'after_upgrade'"
    )
    store.db.conn.commit()
    verdict = store.audit.verdict("r1")
    assert verdict.broken is not None and verdict.broken["kind"] == "after_upgrade"
    assert "no hash" in verdict.why


@pytest.mark.sqlite_only("an earlier release's SQLite file, built by hand")
def test_a_chain_hashed_before_algorithms_had_names_verifies_and_an_edit_still_shows(
    db_path: Path,
) -> None:
    old = _old_database(db_path, stop_before="m007_versioned_chain")  # releases 4db486f, 0fd23f4
    prev = ""
    for n in (1, 2, 3):
        event = _event(n)
        digest = _sha256(prev, event)
        old.table("audit_events").insert({**event, "prev_hash": prev, "hash": digest})
        prev = digest
    old.conn.close()
    store = Store(db_path)
    store.audit.record(run_id="r1", kind="after_upgrade", actor="bob")
    verdict = store.audit.verdict("r1")
    assert (verdict.checked, verdict.broken, verdict.unchained) == (4, None, 0)
    store.db.execute("update audit_events set actor = 'mallory' where kind = 'k2'")
    store.db.conn.commit()
    verdict = store.audit.verdict("r1")
    assert verdict.broken is not None and verdict.broken["kind"] == "k2"
    assert "edited" in verdict.why


def test_an_unknown_algorithm_and_a_downgrade_are_broken(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def later(key: bytes, prev: str, event: dict[str, Any], covers: str) -> str:
        return "v3:" + _sha256(prev + covers, event)

    monkeypatch.setitem(chain.ALGORITHMS, "test-v3", chain.Algorithm(True, later))
    store = Store(db_path)
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    monkeypatch.setattr(chain.algorithms, "CURRENT", "test-v3")
    store.audit.record(run_id=run.id, kind="second", actor="alice")
    monkeypatch.setattr(chain.algorithms, "CURRENT", "sha256-v1")
    store.audit.record(run_id=run.id, kind="third", actor="alice")
    verdict = store.audit.verdict(run.id)
    assert verdict.broken is not None and verdict.broken["kind"] == "third"
    assert "downgrade" in verdict.why
    monkeypatch.delitem(chain.ALGORITHMS, "test-v3")
    verdict = store.audit.verdict(run.id)
    assert verdict.broken is not None and verdict.broken["kind"] == "second"
    assert "does not know (test-v3)" in verdict.why

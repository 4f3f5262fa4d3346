"""The store: migrations, the append-only transcript, atomic claims, audit."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from bot.core.errors import AlreadyAnsweredError, NotFoundError
from bot.store import Store
from bot.store.migrations import migrations


def test_migrations_create_the_tables_with_their_columns(store: Store) -> None:
    db = store.db
    assert [m.name for m in migrations.applied(db)] == [
        "m001_core",
        "m002_close",
        "m003_slack",
        "m004_evidence",
        "m005_reliability",
        "m006_usage",
        "m007_versioned_chain",
        "m008_imports",
        "m009_keyed_trail",
        "m010_people",
        "m011_decide_later",
        "m012_started_team",
        "m013_run_prompts_and_retries",
        "m014_workspaces",
        "m015_workspace_settings",
    ]
    assert db.table("people").columns_dict == {
        "id": str,
        "real_name": str,
        "display_name": str,
        "handle": str,
        "fetched_at": str,
    }
    assert {"period", "kind", "sha256", "content", "canonical", "mapping", "dropped_by"} <= set(
        db.table("imported_files").columns_dict
    )
    assert set(db.table("column_maps").columns_dict) >= {"kind", "source", "layout", "mapping"}
    assert db.table("model_calls").columns_dict == {
        "id": int,
        "run_id": str,
        "at": str,
        "model": str,
        "stop_reason": str,
        "input_tokens": int,
        "output_tokens": int,
        "cache_read_input_tokens": int,
        "cache_creation_input_tokens": int,
        "cache_write_1h_input_tokens": int,
        "thinking_tokens": int,
    }
    assert db.table("run_prompts").columns_dict == {
        "run_id": str,
        "system": str,
        "tools": str,
        "stale_thinking_before": int,
        "at": str,
    }
    assert db.table("runs").columns_dict == {
        "id": str,
        "period": str,
        "mode": str,
        "status": str,
        "started_by": str,
        "channel": str,
        "thread_ts": str,
        "model": str,
        "steps": str,
        "error": str,
        "created_at": str,
        "updated_at": str,
        "status_ts": str,
        "stop_requested_by": str,
        "started_team": str,
        "retry_at": str,
        "retries": int,
        "team_id": str,
        "enterprise_id": str,
    }
    assert db.table("messages").columns_dict == {
        "id": int,
        "run_id": str,
        "seq": int,
        "role": str,
        "content": str,
        "created_at": str,
    }
    assert db.table("tool_calls").columns_dict == {
        "tool_use_id": str,
        "run_id": str,
        "name": str,
        "input": str,
        "result": str,
        "is_error": int,
        "created_at": str,
    }
    assert db.table("questions").columns_dict == {
        "id": str,
        "run_id": str,
        "context": str,
        "questions": str,
        "status": str,
        "answer": str,
        "answered_by": str,
        "source": str,
        "answered_at": str,
        "channel": str,
        "message_ts": str,
        "created_at": str,
        "expires_at": str,
        "rationale": str,
        "overridden": int,
        "settled_shown_at": str,
        "remind_at": str,
        "reopened_at": str,
        "changes": str,
        "told_at": str,
    }
    assert db.table("audit_events").columns_dict == {
        "id": int,
        "run_id": str,
        "at": str,
        "kind": str,
        "actor": str,
        "detail": str,
        "prev_hash": str,
        "hash": str,
        "hash_alg": str,
        "covers": str,
    }
    assert db.table("run_seals").columns_dict == {
        "run_id": str,
        "head_id": int,
        "head_hash": str,
        "events": int,
        "at": str,
        "mac": str,
    }
    assert set(db.table("exceptions").columns_dict) >= {
        "id",
        "run_id",
        "status",
        "resolution",
        "question_id",
        "decided_by",
    }
    assert set(db.table("journal_lines").columns_dict) >= {
        "batch_id",
        "entry_no",
        "account",
        "debit",
        "credit",
    }


def test_reopening_applies_nothing_twice(db_path: Path) -> None:
    first = Store(db_path)
    applied = [(m.name, m.applied_at) for m in migrations.applied(first.db)]
    first.close()
    s = Store(db_path)
    assert [(m.name, m.applied_at) for m in migrations.applied(s.db)] == applied
    assert len(applied) >= 7
    s.close()


@pytest.mark.sqlite_only("SQLite's journal mode and busy timeout")
def test_an_sqlite_file_uses_wal_and_a_busy_timeout(db_path: Path) -> None:
    s = Store(db_path)
    assert s.db.execute("pragma journal_mode").fetchone()[0] == "wal"
    assert s.db.execute("pragma busy_timeout").fetchone()[0] == 10_000
    s.close()


def test_transcript_is_append_only_and_ordered(store: Store) -> None:
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    assert (
        store.transcript.append(run.id, role="user", content=[{"type": "text", "text": "hi"}]) == 1
    )
    assert (
        store.transcript.append(run.id, role="assistant", content=[{"type": "text", "text": "yo"}])
        == 2
    )
    assert [m.api() for m in store.transcript.messages(run.id)] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
    ]
    with pytest.raises(ValueError, match="unknown role"):
        store.transcript.append(run.id, role="system", content=[])
    with pytest.raises(sqlite3.IntegrityError):  # the seq of a message is never reused
        store.db.execute(
            "insert into messages (run_id, seq, role, content, created_at) values (?, 1, 'user', '[]', 'x')",
            (run.id,),
        )


def test_a_stored_tool_result_is_final(store: Store) -> None:
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    store.transcript.record_tool_result(
        run.id, tool_use_id="t1", name="x", input={"a": 1}, content="first", is_error=False
    )
    store.transcript.record_tool_result(
        run.id, tool_use_id="t1", name="x", input={"a": 1}, content="second", is_error=True
    )
    result = store.transcript.tool_result("t1")
    assert result is not None and (result.content, result.is_error, result.input) == (
        "first",
        False,
        {"a": 1},
    )


def _pending(store: Store) -> str:
    run = store.runs.create(period="2026-10", mode="slack", started_by="U1", model="m")
    record, new = store.questions.create(
        run.id, question_id="toolu_q", context="c", questions=[{"question": "q?"}]
    )
    assert new and record.status == "pending"
    again, new_again = store.questions.create(
        run.id, question_id="toolu_q", context="other", questions=[]
    )
    assert not new_again and again.context == "c"
    return run.id


def test_claim_records_who_when_and_how_then_refuses_a_second(store: Store) -> None:
    run_id = _pending(store)
    record = store.questions.claim(
        "toolu_q", answer={"1": {"selected": [1]}}, answered_by="U1", source="user"
    )
    assert (record.status, record.answered_by, record.source) == ("answered", "U1", "user")
    assert record.answered_at
    with pytest.raises(AlreadyAnsweredError) as info:
        store.questions.claim(
            "toolu_q", answer={"1": {"selected": [2]}}, answered_by="U2", source="user"
        )
    assert info.value.by == "U1" and "already answered by U1" in str(info.value)
    assert store.questions.get("toolu_q").answer == {"1": {"selected": [1]}}
    kinds = [e.kind for e in store.audit.events(run_id)]
    assert kinds == ["run_started", "question_asked", "question_answered"]


def test_two_concurrent_claims_from_two_connections_have_exactly_one_winner(db_path: Path) -> None:
    setup = Store(db_path)
    run = setup.runs.create(period="2026-10", mode="slack", started_by="U1", model="m")
    stores = [Store(db_path), Store(db_path)]
    for round_no in range(10):
        qid = f"toolu_race_{round_no}"
        setup.questions.create(run.id, question_id=qid, context="c", questions=[{"question": "q?"}])
        barrier = threading.Barrier(2)
        outcomes: dict[int, str] = {}

        def claim(
            i: int,
            qid: str = qid,
            barrier: threading.Barrier = barrier,
            outcomes: dict[int, str] = outcomes,
        ) -> None:
            barrier.wait()
            try:
                stores[i].questions.claim(
                    qid, answer={"1": {"selected": [i + 1]}}, answered_by=f"U{i}", source="user"
                )
                outcomes[i] = "won"
            except AlreadyAnsweredError:
                outcomes[i] = "lost"

        threads = [threading.Thread(target=claim, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=20)
        assert sorted(outcomes.values()) == ["lost", "won"]
        winner = next(i for i, o in outcomes.items() if o == "won")
        record = setup.questions.get(qid)
        assert record.answered_by == f"U{winner}" and record.answer == {
            "1": {"selected": [winner + 1]}
        }
    assert len(setup.audit.events(run.id, kind="question_answered")) == 10


def test_cancel_and_expire_are_final_states(store: Store) -> None:
    _pending(store)
    record = store.questions.cancel("toolu_q", cancelled_by="U1", source="user")
    assert record.status == "cancelled" and record.answered_by == "U1"
    with pytest.raises(AlreadyAnsweredError, match="already cancelled"):
        store.questions.expire("toolu_q")


def test_unknown_ids_raise_not_found(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no run with id 'nope'"):
        store.runs.get("nope")
    with pytest.raises(NotFoundError):
        store.questions.get("nope")


def test_step_states_move_one_at_a_time(store: Store) -> None:
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    store.runs.set_step(run.id, "Intake", "running")
    assert store.runs.set_step(run.id, "Checks", "running") == {
        "Intake": "done",
        "Checks": "running",
    }
    assert store.runs.set_step(run.id, "Checks", "waiting") == {
        "Intake": "done",
        "Checks": "waiting",
    }
    # a turn that ends with the step still waiting (a cancelled question) never calls it done
    assert store.runs.finish_steps(run.id) == {"Intake": "done", "Checks": "stopped"}
    store.runs.set_step(run.id, "Checks", "running")
    assert store.runs.finish_steps(run.id) == {"Intake": "done", "Checks": "done"}


@pytest.mark.sqlite_only("an earlier release's SQLite file, built by hand")
def test_a_database_from_the_oldest_schema_migrates_and_keeps_its_rows(tmp_path: Path) -> None:
    import sqlite3

    from sqlite_utils import Database

    from bot.close.books.migrations import close_migrations
    from bot.close.ledger import Ledger

    path = tmp_path / "old.db"
    old = Database(sqlite3.connect(path))
    migrations.apply(old, stop_before="m002_close")
    old.table("runs").insert(
        {
            "id": "r1",
            "period": "2026-09",
            "mode": "console",
            "status": "done",
            "steps": "{}",
            "created_at": "2026-10-01T00:00:00.000+00:00",
            "updated_at": "2026-10-01T00:00:00.000+00:00",
        }
    )
    old.table("audit_events").insert(
        {
            "run_id": "r1",
            "at": "2026-10-01T00:00:00.000+00:00",
            "kind": "run_started",
            "detail": "{}",
        }
    )
    old.conn.close()
    store = Store(path)
    Ledger(store)
    assert migrations.pending(store.db) == []
    assert close_migrations.pending(store.db) == []
    assert store.runs.get("r1").period == "2026-09"
    assert {"rationale", "overridden"} <= set(store.db.table("questions").columns_dict)
    assert {"prev_hash", "hash"} <= set(store.db.table("audit_events").columns_dict)
    assert {"source", "ref"} <= set(store.db.table("journal_lines").columns_dict)
    # events written before the chain existed verify as such: present, counted, not checkable
    verdict = store.audit.verdict("r1")
    assert (verdict.checked, verdict.broken, verdict.unchained) == (1, None, 1)


@pytest.mark.sqlite_only("an earlier release's SQLite file, built by hand")
def test_a_database_from_before_leases_migrates_and_keeps_its_rows(db_path: Path) -> None:
    """A database made before m005 (no leases, Stop, reminders) opens and keeps its data."""
    import sqlite3

    from sqlite_utils import Database

    db = Database(sqlite3.connect(db_path))
    migrations.apply(db, stop_before="m005_reliability")
    db.table("runs").insert(
        {
            "id": "r1",
            "period": "2026-10",
            "mode": "slack",
            "status": "waiting",
            "steps": "{}",
            "created_at": "2026-11-01T00:00:00.000+00:00",
            "updated_at": "2026-11-01T00:00:00.000+00:00",
            "status_ts": "1.2",
        }
    )
    db.table("questions").insert(
        {
            "id": "q1",
            "run_id": "r1",
            "context": "c",
            "questions": "[]",
            "status": "pending",
            "created_at": "2026-11-01T00:00:00.000+00:00",
        }
    )
    db.table("questions").insert(
        {
            "id": "q2",
            "run_id": "r1",
            "context": "c",
            "questions": "[]",
            "status": "answered",
            "channel": "CFIN",
            "message_ts": "1.3",
            "created_at": "2026-11-01T00:00:00.000+00:00",
            "answered_at": "2026-11-01T01:00:00.000+00:00",
        }
    )
    db.close()
    s = Store(db_path)
    assert migrations.pending(s.db) == []
    assert s.db.table("leases").columns_dict == {"run_id": str, "owner": str, "expires_at": str}
    assert {"settled_shown_at", "remind_at"} <= set(s.db.table("questions").columns_dict)
    run = s.runs.get("r1")
    assert (run.status, run.status_ts, run.stop_requested_by) == ("waiting", "1.2", None)
    question = s.questions.get("q1")
    assert (question.status, question.settled_shown_at, question.remind_at) == (
        "pending",
        None,
        None,
    )
    # settled before the upgrade: already shown read-only, nothing for the watchdog to redo
    assert s.questions.get("q2").settled_shown_at == "2026-11-01T01:00:00.000+00:00"
    assert s.questions.forms_to_repair() == ([], [])
    s.close()


def test_request_signatures_are_forgotten_after_the_replay_window(db_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    now = [datetime(2026, 11, 2, 9, 0, tzinfo=UTC)]
    s = Store(db_path, clock=lambda: now[0])
    assert s.replay.first_sighting("sig:v0=abc") and s.replay.first_sighting("Ev1")
    assert not s.replay.first_sighting("sig:v0=abc")  # a replay
    now[0] += timedelta(days=2)
    assert s.replay.forget_sightings(older_than=timedelta(days=1)) == 1
    assert not s.replay.first_sighting(
        "Ev1"
    )  # event ids are kept: Slack's retries stay deduplicated
    s.close()


def test_a_read_does_not_wait_for_another_threads_transaction_and_then_sees_its_commit(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "reads.db")
    run = store.runs.create(period="2026-10", mode="slack", started_by="U1", model="m")
    inside, release, read_done = threading.Event(), threading.Event(), threading.Event()

    def writer() -> None:
        with store.write() as db:
            db.execute("update runs set channel = 'CNEW' where id = ?", (run.id,))
            inside.set()
            release.wait(10)

    def reader() -> None:
        assert store.runs.get(run.id).channel is None  # the transaction is not committed yet
        read_done.set()

    t = threading.Thread(target=writer)
    t.start()
    assert inside.wait(10)
    threading.Thread(target=reader).start()
    assert read_done.wait(10), "a read queued behind another thread's open transaction"
    release.set()
    t.join(10)
    assert store.runs.get(run.id).channel == "CNEW"
    store.close()

"""Issue 16 item 8: every direct edit of the database that would change the books or the record
is found by `closebot audit RUN --verify`, which names the first bad row and what it covers.

One real console close (posted, a DOI change in force, exceptions decided) on a real SQLite
file; each case copies that file, makes one edit with raw SQL as someone with the file but not
the audit key would, and runs the real command."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_run import ONE, closebot, run_id_of

# every recommendation at the console (Baker short-paid, Smith's decimal accepted from
# 2026-07-01), one approval, the flux item explained, signed off
ONE_POSTER = "5\n3\n1\n1\n1\n3\n2\n1\n3\n1\n1\n1\n\n"
KEY = "k" * 64  # the audit key, kept outside the database (here: the environment)


@dataclass(frozen=True)
class Closed:
    db: Path
    run_id: str
    summary: str


@pytest.fixture(scope="module")
def closed(tmp_path_factory: pytest.TempPathFactory) -> Closed:
    db = tmp_path_factory.mktemp("closed") / "closebot.db"
    done = closebot(
        "run",
        "2026-10",
        stdin=ONE_POSTER,
        env={**ONE, "CLOSEBOT_DB": str(db), "CLOSEBOT_AUDIT_KEY": KEY},
    )
    assert done.returncode == 0, done.stdout[-2000:]
    with sqlite3.connect(db) as conn:
        conn.execute("pragma wal_checkpoint(truncate)")
    return Closed(db, run_id_of(done.stdout), done.stdout)


def verify(db: Path, run_id: str) -> tuple[int, str]:
    done = closebot(
        "audit", run_id, "--verify", env={"CLOSEBOT_DB": str(db), "CLOSEBOT_AUDIT_KEY": KEY}
    )
    return done.returncode, done.stdout + done.stderr


Edit = Callable[[sqlite3.Connection, str], str]  # makes the edit; returns what the report names


def one(conn: sqlite3.Connection, sql: str, *params: object) -> object:
    row = conn.execute(sql, params).fetchone()
    assert row is not None, sql
    return row[0]


def _answered(conn: sqlite3.Connection, run: str) -> str:
    return str(
        one(
            conn,
            "select id from questions where run_id = ? and status = 'answered' order by rowid limit 1",
            run,
        )
    )


def _approval(conn: sqlite3.Connection, run: str) -> str:
    return str(
        one(
            conn,
            'select id from questions where run_id = ? and questions like \'%"header":"Posting"%\'',
            run,
        )
    )


def _posted(conn: sqlite3.Connection, run: str) -> str:
    return str(
        one(conn, "select id from journal_batches where run_id = ? and status = 'posted'", run)
    )


def _line(conn: sqlite3.Connection, run: str) -> int:
    return int(
        one(  # type: ignore[arg-type]
            conn,
            "select min(id) from journal_lines where batch_id = ? and source = 'accrual'",
            _posted(conn, run),
        )
    )


def _events(conn: sqlite3.Connection, run: str) -> list[int]:
    return [
        r[0]
        for r in conn.execute("select id from audit_events where run_id = ? order by id", (run,))
    ]


def event_actor_edited(conn: sqlite3.Connection, run: str) -> str:
    target = one(
        conn,
        "select id from audit_events where run_id = ? and kind = 'question_answered' order by id limit 1",
        run,
    )
    conn.execute("update audit_events set actor = 'mallory' where id = ?", (target,))
    return f"BROKEN at event {target} (question_answered"


def event_deleted(conn: sqlite3.Connection, run: str) -> str:
    events = _events(conn, run)
    conn.execute("delete from audit_events where id = ?", (events[len(events) // 2],))
    return f"BROKEN at event {events[len(events) // 2 + 1]}"


def events_truncated(conn: sqlite3.Connection, run: str) -> str:
    events = _events(conn, run)
    conn.execute("delete from audit_events where id >= ?", (events[-3],))
    return f"sealed at event {events[-1]}"


def events_and_seal_truncated(conn: sqlite3.Connection, run: str) -> str:
    events = _events(conn, run)
    conn.execute("delete from audit_events where id >= ?", (events[-3],))
    conn.execute("delete from run_seals where run_id = ?", (run,))
    return "seal is missing"


def _recompute(
    conn: sqlite3.Connection,
    run: str,
    hasher: Callable[[str, dict[str, object], str], str],
    alg: str,
) -> None:
    """Recompute the run's whole chain as the attacker can: every link, every hash, the
    algorithm's name."""
    prev = ""
    for row in conn.execute(
        "select id, run_id, at, kind, actor, detail, coalesce(covers, '') from audit_events "
        "where run_id = ? order by id",
        (run,),
    ).fetchall():
        event = dict(zip(("run_id", "at", "kind", "actor", "detail"), row[1:6], strict=True))
        h = hasher(prev, event, row[6])
        conn.execute(
            "update audit_events set prev_hash = ?, hash = ?, hash_alg = ? where id = ?",
            (prev, h, alg, row[0]),
        )
        prev = h


def _sha256(prev: str, event: dict[str, object], _covers: str = "") -> str:
    text = json.dumps([prev, event], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def edited_then_chain_recomputed_with_sha256(conn: sqlite3.Connection, run: str) -> str:
    """The old chain's weakness: anyone could recompute it. Now an unkeyed hash is history only."""
    conn.execute(
        "update audit_events set actor = 'mallory' where run_id = ? and kind = 'journal_posted'",
        (run,),
    )
    _recompute(conn, run, _sha256, "sha256-v1")
    first = _events(conn, run)[0]
    return f"BROKEN at event {first} (run_started"  # unkeyed, after keyed hashing began


def edited_then_chain_recomputed_with_a_guessed_key(conn: sqlite3.Connection, run: str) -> str:
    conn.execute(
        "update audit_events set actor = 'mallory' where run_id = ? and kind = 'journal_posted'",
        (run,),
    )

    def guessed(prev: str, event: dict[str, object], covers: str) -> str:
        text = json.dumps([prev, event, covers], sort_keys=True, separators=(",", ":"))
        return hmac.new(b"not the key" * 4, text.encode(), hashlib.sha256).hexdigest()

    _recompute(conn, run, guessed, "hmac-sha256-v2")
    return "recomputed without the audit key"


def runs_started_by(conn: sqlite3.Connection, run: str) -> str:
    conn.execute("update runs set started_by = 'controller' where id = ?", (run,))
    return f"runs:{run}"


def question_answered_by(conn: sqlite3.Connection, run: str) -> str:
    qid = _answered(conn, run)
    conn.execute("update questions set answered_by = 'jdoe' where id = ?", (qid,))
    return f"questions:{qid}"


def question_answer(conn: sqlite3.Connection, run: str) -> str:
    qid = _answered(conn, run)
    answer = json.loads(str(one(conn, "select answer from questions where id = ?", qid)))
    answer["1"]["labels"] = ["Something else"]
    conn.execute("update questions set answer = ? where id = ?", (json.dumps(answer), qid))
    return f"questions:{qid}"


def question_source(conn: sqlite3.Connection, run: str) -> str:
    qid = _answered(conn, run)
    conn.execute("update questions set source = 'auto_default' where id = ?", (qid,))
    return f"questions:{qid}"


def question_rationale(conn: sqlite3.Connection, run: str) -> str:
    qid = _approval(conn, run)
    conn.execute("update questions set rationale = 'approved by the CFO' where id = ?", (qid,))
    return f"questions:{qid}"


def question_text(conn: sqlite3.Connection, run: str) -> str:
    qid = _answered(conn, run)
    conn.execute(
        "update questions set questions = replace(questions, 'Smith', 'Jones') where id = ?", (qid,)
    )
    return f"questions:{qid}"


def question_deleted(conn: sqlite3.Connection, run: str) -> str:
    qid = _approval(conn, run)
    conn.execute("delete from questions where id = ?", (qid,))
    return f"questions:{qid}"


def exception_resolution(conn: sqlite3.Connection, run: str) -> str:
    eid = one(
        conn,
        "select id from exceptions where run_id = ? and resolution = 'short_pay' limit 1",
        run,
    )
    conn.execute("update exceptions set resolution = 'accept' where id = ?", (eid,))
    return f"exceptions:{eid}"


def exception_decided_by(conn: sqlite3.Connection, run: str) -> str:
    eid = one(
        conn, "select id from exceptions where run_id = ? and decided_by is not null limit 1", run
    )
    conn.execute("update exceptions set decided_by = 'controller' where id = ?", (eid,))
    return f"exceptions:{eid}"


def posted_batch_back_to_draft_and_claim_deleted(conn: sqlite3.Connection, run: str) -> str:
    batch = _posted(conn, run)
    conn.execute(
        "update journal_batches set status = 'draft', posted_at = null, posted_by = null where id = ?",
        (batch,),
    )
    conn.execute("delete from period_posts where batch_id = ?", (batch,))
    return "journal_batches:" + batch


def batch_posted_by(conn: sqlite3.Connection, run: str) -> str:
    batch = _posted(conn, run)
    conn.execute("update journal_batches set posted_by = 'controller' where id = ?", (batch,))
    return "journal_batches:" + batch


def batch_total_debit(conn: sqlite3.Connection, run: str) -> str:
    batch = _posted(conn, run)
    conn.execute("update journal_batches set total_debit = '1.00' where id = ?", (batch,))
    return "journal_batches:" + batch


def line_debit(conn: sqlite3.Connection, run: str) -> str:
    line = _line(conn, run)
    conn.execute("update journal_lines set debit = '99999.99' where id = ?", (line,))
    return f"journal_lines row {line}"


def line_source(conn: sqlite3.Connection, run: str) -> str:
    """`source` drives next month's reversal: an accrual relabelled is never reversed."""
    line = _line(conn, run)
    conn.execute("update journal_lines set source = 'document' where id = ?", (line,))
    return f"journal_lines row {line}"


def line_deleted(conn: sqlite3.Connection, run: str) -> str:
    batch = _posted(conn, run)
    conn.execute("delete from journal_lines where id = ?", (_line(conn, run),))
    return f"journal_lines@{batch}"


def period_claim_posted_by(conn: sqlite3.Connection, run: str) -> str:
    conn.execute(
        "update period_posts set posted_by = 'controller' where batch_id = ?", (_posted(conn, run),)
    )
    return "period_posts:2026-10"


def doi_wi_nri(conn: sqlite3.Connection, run: str) -> str:
    doi = one(conn, "select id from doi_rows where run_id = ? and status = 'in_force'", run)
    row = json.loads(str(one(conn, "select row from doi_rows where id = ?", doi)))
    row["wi"], row["nri"] = "0.30000000", "0.24000000"
    conn.execute("update doi_rows set row = ? where id = ?", (json.dumps(row), doi))
    return f"doi_rows:{doi}"


def doi_decided_by(conn: sqlite3.Connection, run: str) -> str:
    doi = one(conn, "select id from doi_rows where run_id = ? and status = 'in_force'", run)
    conn.execute("update doi_rows set decided_by = 'controller' where id = ?", (doi,))
    return f"doi_rows:{doi}"


EDITS: list[Edit] = [
    event_actor_edited,
    event_deleted,
    events_truncated,
    events_and_seal_truncated,
    edited_then_chain_recomputed_with_sha256,
    edited_then_chain_recomputed_with_a_guessed_key,
    runs_started_by,
    question_answered_by,
    question_answer,
    question_source,
    question_rationale,
    question_text,
    question_deleted,
    exception_resolution,
    exception_decided_by,
    posted_batch_back_to_draft_and_claim_deleted,
    batch_posted_by,
    batch_total_debit,
    line_debit,
    line_source,
    line_deleted,
    period_claim_posted_by,
    doi_wi_nri,
    doi_decided_by,
]


def test_the_untouched_close_verifies_and_its_seal_is_printed_where_the_finish_was(
    closed: Closed,
) -> None:
    code, out = verify(closed.db, closed.run_id)
    assert code == 0, out
    assert "every link intact" in out and "rows covered" in out
    with sqlite3.connect(closed.db) as conn:
        ids = _events(conn, closed.run_id)
        head = str(one(conn, "select hash from audit_events where id = ?", ids[-1]))
    events, head_id = len(ids), ids[-1]
    sealed = f"{events} events, head event {head_id}, hash {head[:16]}"
    assert f"Audit seal: {sealed}." in closed.summary  # the summary, as the run finished
    assert f"Sealed: {sealed}." in out
    env = {"CLOSEBOT_DB": str(closed.db), "CLOSEBOT_AUDIT_KEY": KEY}
    log = closebot("audit", closed.run_id, env=env).stdout
    assert f"Audit seal: {sealed}" in log
    rows = list(
        csv.DictReader(io.StringIO(closebot("audit", closed.run_id, "--csv", env=env).stdout))
    )
    assert rows and {r["audit_seal"] for r in rows} == {sealed}


def test_there_are_24_edits() -> None:
    assert len(EDITS) == len({e.__name__ for e in EDITS}) == 24


@pytest.mark.parametrize("edit", EDITS, ids=[e.__name__ for e in EDITS])
def test_each_tampering_edit_is_found_by_verify(closed: Closed, tmp_path: Path, edit: Edit) -> None:
    db = tmp_path / "closebot.db"
    shutil.copy(closed.db, db)
    with sqlite3.connect(db) as conn:
        names = edit(conn, closed.run_id)
    code, out = verify(db, closed.run_id)
    assert code == 1, out
    assert "BROKEN" in out and names in out, out


def test_the_key_file_is_made_beside_the_database_0600_and_another_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.errors import ConfigError
    from bot.store import Store

    monkeypatch.delenv("CLOSEBOT_AUDIT_KEY", raising=False)
    db = tmp_path / "books.db"
    store = Store(db)
    run = store.create_run(period="2026-10", mode="console", started_by="alice", model="m")
    store.close()
    key_file = tmp_path / "books.db.auditkey"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert len(key_file.read_text().strip()) == 64
    assert key_file.read_text().strip() not in db.read_bytes().decode("latin-1")
    assert Store(db).audit_verdict(run.id).ok  # the same key, read back
    monkeypatch.setenv("CLOSEBOT_AUDIT_KEY", "someone else's key, 32 characters")
    with pytest.raises(ConfigError, match="keyed with another key"):
        Store(db)
    key_file.unlink()  # a lost key file is not silently replaced either
    monkeypatch.delenv("CLOSEBOT_AUDIT_KEY")
    with pytest.raises(ConfigError, match="keyed with another key"):
        Store(db)
    assert not key_file.exists()


def test_an_earlier_releases_chain_verifies_and_goes_on_keyed_and_a_rewrite_does_not(
    db_path: Path,
) -> None:
    from sqlite_utils import Database

    from bot.migrations import migrations
    from bot.store import Store

    old = Database(sqlite3.connect(db_path))
    migrations.apply(old, stop_before="m007_versioned_chain")  # releases 4db486f, 0fd23f4
    old.table("runs").insert(
        {
            "id": "r1",
            "period": "2026-10",
            "mode": "console",
            "status": "waiting",
            "started_by": "alice",
            "steps": "{}",
            "created_at": "2026-10-01T00:00:00.000+00:00",
            "updated_at": "2026-10-01T00:00:00.000+00:00",
        }
    )
    prev = ""
    for n in (1, 2):
        event = {"run_id": "r1", "at": f"2026-10-01T00:00:0{n}", "kind": f"k{n}"}
        event |= {"actor": "alice", "detail": "{}"}
        digest = _sha256(prev, event)
        old.table("audit_events").insert({**event, "prev_hash": prev, "hash": digest})
        prev = digest
    old.conn.close()
    store = Store(db_path)  # the upgrade: history kept as it was, its head sealed
    store.audit(run_id="r1", kind="resumed", actor="alice")
    verdict = store.audit_verdict("r1")
    assert verdict.ok and (verdict.checked, verdict.unkeyed) == (3, 2), verdict
    assert store.query("select hash from audit_events where kind = 'k2'")[0]["hash"] == prev
    # whoever recomputes the whole chain the old way is found at the first event after the upgrade
    with sqlite3.connect(db_path) as conn:
        conn.execute("update audit_events set actor = 'mallory' where kind = 'k1'")
        _recompute(conn, "r1", _sha256, "sha256-v1")
    verdict = Store(db_path).audit_verdict("r1")
    assert verdict.broken is not None and verdict.broken["kind"] == "resumed"
    assert "after keyed hashing began" in verdict.why

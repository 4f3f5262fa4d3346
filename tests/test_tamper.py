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

# the closes here are copied, read and tampered with as SQLite files, through sqlite3
pytestmark = pytest.mark.sqlite_only("tampers with SQLite files through sqlite3")

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


@pytest.mark.sqlite_only("reads the SQLite file's bytes for the key")
def test_the_key_file_is_made_beside_the_database_0600_and_another_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.core.errors import ConfigError
    from bot.store import Store

    monkeypatch.delenv("CLOSEBOT_AUDIT_KEY", raising=False)
    db = tmp_path / "books.db"
    store = Store(db)
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    store.close()
    key_file = tmp_path / "books.db.auditkey"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert len(key_file.read_text().strip()) == 64
    assert key_file.read_text().strip() not in db.read_bytes().decode("latin-1")
    assert Store(db).audit.verdict(run.id).ok  # the same key, read back
    monkeypatch.setenv("CLOSEBOT_AUDIT_KEY", "someone else's key, 32 characters")
    with pytest.raises(ConfigError, match="keyed with another key"):
        Store(db)
    key_file.unlink()  # a lost key file is not silently replaced either
    monkeypatch.delenv("CLOSEBOT_AUDIT_KEY")
    with pytest.raises(ConfigError, match="keyed with another key"):
        Store(db)
    assert not key_file.exists()


@pytest.mark.sqlite_only("an earlier release's SQLite file, built by hand")
def test_an_earlier_releases_chain_verifies_and_goes_on_keyed_and_a_rewrite_does_not(
    db_path: Path,
) -> None:
    from sqlite_utils import Database

    from bot.store import Store
    from bot.store.migrations import migrations

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
    store.audit.record(run_id="r1", kind="resumed", actor="alice")
    verdict = store.audit.verdict("r1")
    assert verdict.ok and (verdict.checked, verdict.unkeyed) == (3, 2), verdict
    assert store.query("select hash from audit_events where kind = 'k2'")[0]["hash"] == prev
    # whoever recomputes the whole chain the old way is found at the first event after the upgrade
    with sqlite3.connect(db_path) as conn:
        conn.execute("update audit_events set actor = 'mallory' where kind = 'k1'")
        _recompute(conn, "r1", _sha256, "sha256-v1")
    verdict = Store(db_path).audit.verdict("r1")
    assert verdict.broken is not None and verdict.broken["kind"] == "resumed"
    assert "after keyed hashing began" in verdict.why


# -- the tables covered since the unkeyed boundary: open items, imported files, mappings -------


def _item(conn: sqlite3.Connection, run: str) -> int:
    return int(one(conn, "select min(id) from open_items where run_id = ?", run))  # type: ignore[arg-type]


def open_item_settled(conn: sqlite3.Connection, run: str) -> str:
    """Marked settled, the next close would never ask about it."""
    item = _item(conn, run)
    conn.execute("update open_items set status = 'settled' where id = ?", (item,))
    return f"open_items:{item}"


def open_item_owner(conn: sqlite3.Connection, run: str) -> str:
    item = _item(conn, run)
    conn.execute("update open_items set owner = 'nobody', due = '2030-01-01' where id = ?", (item,))
    return f"open_items:{item}"


def open_item_deleted(conn: sqlite3.Connection, run: str) -> str:
    item = _item(conn, run)
    conn.execute("delete from open_items where id = ?", (item,))
    return f"open_items:{item}"


def open_item_added(conn: sqlite3.Connection, run: str) -> str:
    cursor = conn.execute(
        "insert into open_items (run_id, period, kind, text, amount, owner, due, status, "
        "created_at) values (?, '2026-10', 'dispute', 'refund the controller $9,999.00', "
        "'9999.00', 'mallory', '2026-11-15', 'open', '2026-10-31T00:00:00.000+00:00')",
        (run,),
    )
    return f"open_items:{cursor.lastrowid}"


OPEN_ITEM_EDITS: list[Edit] = [
    open_item_settled,
    open_item_owner,
    open_item_deleted,
    open_item_added,
]


@pytest.mark.parametrize("edit", OPEN_ITEM_EDITS, ids=[e.__name__ for e in OPEN_ITEM_EDITS])
def test_an_edited_open_item_is_found_by_verify(closed: Closed, tmp_path: Path, edit: Edit) -> None:
    db = tmp_path / "closebot.db"
    shutil.copy(closed.db, db)
    with sqlite3.connect(db) as conn:
        assert one(conn, "select count(*) from open_items where run_id = ?", closed.run_id)
        names = edit(conn, closed.run_id)
    code, out = verify(db, closed.run_id)
    assert code == 1, out
    assert "BROKEN" in out and names in out, out


@dataclass(frozen=True)
class Imported:
    db: Path
    run_id: str
    env: dict[str, str]
    folder: Path


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Imported:
    """A close of files imported at the terminal: the JIB an operator's workbook with its own
    column names, its mapping confirmed (--yes) and remembered."""
    from tests.import_files import jib_xlsx, write_period

    root = tmp_path_factory.mktemp("imported")
    folder = write_period(root / "mine")
    (folder / "jib.csv").unlink()
    (folder / "Permian JIB Oct 2026.xlsx").write_bytes(jib_xlsx())
    empty = root / "empty"
    empty.mkdir()
    env = {"CLOSEBOT_DB": str(root / "closebot.db"), "CLOSEBOT_AUDIT_KEY": KEY}
    env["CLOSEBOT_DATA"] = str(empty)
    done = closebot("data", "import", str(folder), "--period", "2026-10", "--yes", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    run = closebot("run", "2026-10", "--auto", env=env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    with sqlite3.connect(root / "closebot.db") as conn:
        conn.execute("pragma wal_checkpoint(truncate)")
    return Imported(root / "closebot.db", run_id_of(run.stdout), env, folder)


def _jib_file(conn: sqlite3.Connection) -> int:
    return int(
        one(conn, "select id from imported_files where kind = 'jib.csv' and status = 'active'")
    )  # type: ignore[arg-type]


def imported_bytes(conn: sqlite3.Connection, run: str) -> str:
    f = _jib_file(conn)
    conn.execute("update imported_files set content = cast('forged' as blob) where id = ?", (f,))
    return f"imported_files:{f}"


def imported_csv_read(conn: sqlite3.Connection, run: str) -> str:
    """The CSV closebot reads from the workbook: what the next close of the period would book."""
    f = _jib_file(conn)
    conn.execute(
        "update imported_files set canonical = replace(canonical, ',0.275,13200', ',0.25,12000') where id = ?",
        (f,),
    )
    return f"imported_files:{f}"


def imported_dropped_by(conn: sqlite3.Connection, run: str) -> str:
    f = _jib_file(conn)
    conn.execute("update imported_files set dropped_by = 'controller' where id = ?", (f,))
    return f"imported_files:{f}"


def imported_deleted(conn: sqlite3.Connection, run: str) -> str:
    f = _jib_file(conn)
    conn.execute("delete from imported_files where id = ?", (f,))
    return f"imported_files:{f}"


def column_map_mapping(conn: sqlite3.Connection, run: str) -> str:
    m = one(conn, "select id from column_maps where kind = 'jib.csv'")
    conn.execute(
        "update column_maps set mapping = replace(mapping, 'Your Share', 'Gross Amt') where id = ?",
        (m,),
    )
    return f"column_maps:{m}"


def column_map_confirmed_by(conn: sqlite3.Connection, run: str) -> str:
    m = one(conn, "select id from column_maps where kind = 'jib.csv'")
    conn.execute("update column_maps set confirmed_by = 'controller' where id = ?", (m,))
    return f"column_maps:{m}"


IMPORT_EDITS: list[Edit] = [
    imported_bytes,
    imported_csv_read,
    imported_dropped_by,
    imported_deleted,
    column_map_mapping,
    column_map_confirmed_by,
]


def test_a_close_of_imported_files_verifies_and_a_later_drop_keeps_it_verifying(
    imported: Imported, tmp_path: Path
) -> None:
    from tests.import_files import jib_xlsx, sample_rows

    code, out = verify(imported.db, imported.run_id)
    assert code == 0, out
    db = tmp_path / "closebot.db"
    shutil.copy(imported.db, db)
    rows = sample_rows("jib.csv")
    rows[0]["description"] = "resent by the operator"
    again = tmp_path / "again"
    again.mkdir()
    (again / "Permian JIB Oct 2026 v2.xlsx").write_bytes(jib_xlsx(rows))
    env = {**imported.env, "CLOSEBOT_DB": str(db)}
    done = closebot("data", "import", str(again), "--period", "2026-10", "--yes", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    with sqlite3.connect(db) as conn:  # the file the close read is superseded: a later change
        assert one(conn, "select count(*) from imported_files where status = 'superseded'") == 1
    code, out = verify(db, imported.run_id)
    assert code == 0, out  # recorded by the import that superseded it: not tampering


@pytest.mark.parametrize("edit", IMPORT_EDITS, ids=[e.__name__ for e in IMPORT_EDITS])
def test_an_edited_imported_file_or_mapping_is_found_by_verify(
    imported: Imported, tmp_path: Path, edit: Edit
) -> None:
    db = tmp_path / "closebot.db"
    shutil.copy(imported.db, db)
    with sqlite3.connect(db) as conn:
        names = edit(conn, imported.run_id)
    code, out = verify(db, imported.run_id)
    assert code == 1, out
    assert "BROKEN" in out and names in out, out


def test_an_item_the_next_close_settles_keeps_both_closes_verifying_and_an_edit_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.store import Store
    from tests.close_helpers import choose_label, close_run

    monkeypatch.setenv("CLOSEBOT_AUDIT_KEY", KEY)
    db = tmp_path / "c.db"
    store = Store(db)
    october = close_run(None, db, store=store)
    items = october.ledger.open_items(october.run_id)
    assert items
    first = items[0]
    november = close_run(
        None,
        db,
        period="2026-11",
        store=store,
        choose=choose_label(**{f"carried_item:{first['id']}": "Settled"}),
    )
    assert october.ledger.open_items(october.run_id)[0]["status"] == "settled"
    assert store.audit.verdict(october.run_id).ok, store.audit.verdict(october.run_id).problem
    assert store.audit.verdict(november.run_id).ok
    store.close()
    with sqlite3.connect(db) as conn:  # set back to open: November's decision undone
        conn.execute("update open_items set status = 'open' where id = ?", (first["id"],))
    verdict = Store(db).audit.verdict(october.run_id)
    assert f"open_items:{first['id']}" in verdict.problem and "open_item_closed" in verdict.problem


# -- a rolling deploy from a release that does not step aside (0fd23f4 and before) --------------


def settled(db: Path) -> None:
    """Everything written is in the main file (a copy of it alone holds all of it)."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("pragma wal_checkpoint(truncate)")
    finally:
        conn.close()


def _as_0fd23f4_writes(conn: sqlite3.Connection, run: str, kind: str) -> None:
    """An event as release 0fd23f4's code appends it: SHA-256 chained to the run's last event,
    no algorithm named, no rows recorded."""
    prev = one(conn, "select hash from audit_events where run_id = ? order by id desc limit 1", run)
    event = {"run_id": run, "at": "2026-11-24T06:00:00.000+00:00", "kind": kind}
    event |= {"actor": "alice", "detail": "{}"}
    conn.execute(
        "insert into audit_events (run_id, at, kind, actor, detail, prev_hash, hash) "
        "values (?, ?, ?, ?, ?, ?, ?)",
        (*event.values(), prev, _sha256(str(prev), event)),
    )


def test_events_an_earlier_release_wrote_during_the_upgrade_verify_and_a_forged_one_does_not(
    tmp_path: Path,
) -> None:
    from bot.store import chain

    env = {"CLOSEBOT_AUDIT_KEY": KEY}
    db = tmp_path / "closebot.db"
    env["CLOSEBOT_DB"] = str(db)
    paused = closebot("run", "2026-10", env=env)  # waits on its first question
    assert paused.returncode == 3, paused.stdout[-2000:]
    run = run_id_of(paused.stdout)
    with sqlite3.connect(db) as conn:
        # the database as the release before this one left it: keyed, no sealed boundary, no guard
        value = json.loads(str(one(conn, "select value from meta where key = 'audit_keyed_after'")))
        conn.execute(
            "update meta set value = ? where key = 'audit_keyed_after'",
            (chain.epoch_value(KEY.encode(), int(value["after"])),),
        )
        conn.execute(f"drop trigger {chain.GUARD}")
        # 0fd23f4, still serving during that upgrade, goes on with the run
        _as_0fd23f4_writes(conn, run, "question_answered")
        _as_0fd23f4_writes(conn, run, "exception_resolved")
    code, out = verify(db, run)  # this release's first start seals the boundary and adopts them
    assert code == 0, out
    with sqlite3.connect(db) as conn:
        kinds = [
            r[0]
            for r in conn.execute(
                "select kind from audit_events where run_id = ? order by id", (run,)
            )
        ]
        assert kinds[-3:] == ["question_answered", "exception_resolved", "trail_adopted"]
        # from now on the database refuses such a write: the earlier release changes nothing
        with pytest.raises(sqlite3.IntegrityError, match="an earlier closebot may not write"):
            _as_0fd23f4_writes(conn, run, "question_answered")
    # an edit of what the earlier release wrote breaks the adoption's link
    settled(db)
    edited = tmp_path / "edited.db"
    shutil.copy(db, edited)
    with sqlite3.connect(edited) as conn:
        conn.execute(
            "update audit_events set actor = 'mallory' where kind = 'exception_resolved' and run_id = ?",
            (run,),
        )
    code, out = verify(edited, run)
    assert code == 1 and "BROKEN" in out, out
    # an 'old release' event written after the boundary (guard dropped): a forgery, named
    for alg in (None, "sha256-v1"):
        forged = tmp_path / f"forged-{alg}.db"
        shutil.copy(db, forged)
        with sqlite3.connect(forged) as conn:
            conn.execute(f"drop trigger {chain.GUARD}")
            _as_0fd23f4_writes(conn, run, "journal_posted")
            conn.execute(
                "update audit_events set hash_alg = ? where id = (select max(id) from audit_events)",
                (alg,),
            )
        code, out = verify(forged, run)
        assert code == 1 and "BROKEN at event" in out, out
        assert "a downgrade" in out or "sealed its boundary" in out, out
    # and the first start of a closebot with a key on a database it never keyed seals it at once
    resumed = closebot("resume", run, "--auto", env=env)
    assert resumed.returncode == 0, resumed.stdout[-2000:]
    code, out = verify(db, run)
    assert code == 0, out


# -- issue 31: the whole record, and the doctor says what verify says -------------------------


def doctor(db: Path) -> tuple[int, str]:
    done = closebot("doctor", env={"CLOSEBOT_DB": str(db), "CLOSEBOT_AUDIT_KEY": KEY})
    return done.returncode, done.stdout + done.stderr


@pytest.mark.sqlite_only("tampers with the SQLite file through sqlite3, outside closebot")
@pytest.mark.parametrize("edit", EDITS, ids=[e.__name__ for e in EDITS])
def test_each_tampering_edit_verify_finds_the_doctor_finds_too(
    closed: Closed, tmp_path: Path, edit: Edit
) -> None:
    db = tmp_path / "closebot.db"
    shutil.copy(closed.db, db)
    with sqlite3.connect(db) as conn:
        names = edit(conn, closed.run_id)
    code, out = doctor(db)
    assert code == 1 and "is sound" not in out, out
    assert f"PROBLEM  audit: run {closed.run_id}: BROKEN" in out and names in out, out


def test_the_untouched_close_is_sound_to_the_doctor(closed: Closed) -> None:
    code, out = doctor(closed.db)
    assert code == 0 and "is sound" in out, out


def delete_run_whole(conn: sqlite3.Connection, run: str) -> None:
    """Every row of the run, in every table that names it (runs, events, seal, questions,
    batches, lines, the period claim …), as someone with the file would."""
    batches = [
        r[0] for r in conn.execute("select id from journal_batches where run_id = ?", (run,))
    ]
    marks = ",".join("?" * len(batches))
    conn.execute(f"delete from journal_lines where batch_id in ({marks})", batches)
    conn.execute(f"delete from period_posts where batch_id in ({marks})", batches)
    tables = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
    for table in tables:
        columns = {r[1] for r in conn.execute(f"pragma table_info({table})")}
        if "run_id" in columns:
            conn.execute(f"delete from {table} where run_id = ?", (run,))
    conn.execute("delete from runs where id = ?", (run,))


@pytest.mark.sqlite_only("tampers with the SQLite file through sqlite3, outside closebot")
def test_a_posted_run_deleted_whole_is_found_and_its_period_never_posts_twice(
    closed: Closed, tmp_path: Path
) -> None:
    db = tmp_path / "closebot.db"
    shutil.copy(closed.db, db)
    with sqlite3.connect(db) as conn:
        delete_run_whole(conn, closed.run_id)
        assert one(conn, "select count(*) from period_posts") == 0
    code, out = doctor(db)
    assert code == 1 and "is sound" not in out, out
    assert f"run {closed.run_id} (2026-10)" in out and "missing from the database" in out, out
    code, out = verify(db, closed.run_id)
    assert code == 1 and "BROKEN" in out and "missing from the database" in out, out
    again = closebot(
        "run",
        "2026-10",
        stdin=ONE_POSTER,
        env={**ONE, "CLOSEBOT_DB": str(db), "CLOSEBOT_AUDIT_KEY": KEY},
    )
    assert again.returncode != 0 and "already posted" in again.stdout + again.stderr
    with sqlite3.connect(db) as conn:
        assert one(conn, "select count(*) from journal_batches where status = 'posted'") == 0


@pytest.mark.sqlite_only("tampers with the SQLite file through sqlite3, outside closebot")
def test_the_register_cut_short_is_found(closed: Closed, tmp_path: Path) -> None:
    db = tmp_path / "closebot.db"
    shutil.copy(closed.db, db)
    with sqlite3.connect(db) as conn:  # the register's last event removed (the period's post)
        conn.execute(
            "delete from audit_events where id = "
            "(select max(id) from audit_events where run_id is null)"
        )
    code, out = doctor(db)
    assert code == 1 and "the register of runs" in out and "truncated" in out, out


def test_backup_never_writes_the_key_through_a_link_planted_where_its_key_goes(
    closed: Closed, tmp_path: Path
) -> None:
    from bot.store.chain import key_file_for

    source = tmp_path / "live.db"
    shutil.copy(closed.db, source)
    key_file_for(source).write_text(KEY)  # the key beside the database, as closebot makes it
    key_file_for(source).chmod(0o600)
    target = tmp_path / "elsewhere.txt"
    target.write_text("untouched")
    copy = tmp_path / "backup.db"
    key_file_for(copy).symlink_to(target)  # planted by someone who may write the folder
    made = closebot("backup", str(copy), env={"CLOSEBOT_DB": str(source)})
    assert made.returncode == 2 and "is a link" in made.stderr, made.stdout + made.stderr
    assert target.read_text() == "untouched" and not copy.exists()

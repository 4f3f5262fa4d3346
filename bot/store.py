"""The one owner of SQLite: migrations, runs, the transcript, questions, audit."""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from bot import chain
from bot.errors import (
    AlreadyAnsweredError,
    BusyError,
    NotFoundError,
    ReadOnlyError,
    ReplayedError,
    StorageError,
)
from bot.migrations import migrations
from bot.priority import ACKS

USAGE_FIELDS = (  # as the Messages API names them
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
RUN_STATUSES = ("running", "waiting", "done", "failed", "cancelled")
QUICK_BUSY_MS = 400  # the ack path waits at most this long for SQLite's lock, then says "busy"
# ... and at most this long for this process's own lock, whose holders are its other threads'
# short transactions: under a burst of Submits they queue for it, and must not be told "busy".
QUICK_LOCK_MS = 1500


def utc_now() -> datetime:
    return datetime.now(UTC)


def _insert(db: Database, table: str, row: dict[str, Any], *, ignore: bool = False) -> None:
    """One row by plain SQL: sqlite-utils' insert() reads the table's schema on every call."""
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    verb = "insert or ignore" if ignore else "insert"
    db.execute(f"{verb} into {table} ({columns}) values ({marks})", tuple(row.values()))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Run:
    id: str
    period: str
    mode: str
    status: str
    started_by: str | None
    channel: str | None
    thread_ts: str | None
    model: str | None
    steps: dict[str, str]
    error: str | None
    created_at: str
    updated_at: str
    status_ts: str | None = None
    stop_requested_by: str | None = None


@dataclass(frozen=True)
class Message:
    seq: int
    role: str
    content: list[dict[str, Any]]

    def api(self) -> dict[str, Any]:
        """This message as the Messages API takes it."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class ToolResult:
    tool_use_id: str
    name: str
    input: dict[str, Any]
    content: str
    is_error: bool


@dataclass(frozen=True)
class QuestionRecord:
    """One ask_user_question call: 1–5 questions shown and answered together."""

    id: str
    run_id: str
    context: str
    questions: list[dict[str, Any]]
    status: str
    answer: dict[str, Any] | None
    answered_by: str | None
    source: str | None
    answered_at: str | None
    channel: str | None
    message_ts: str | None
    created_at: str
    expires_at: str | None
    rationale: str | None = None
    overridden: int | None = None
    settled_shown_at: str | None = None
    remind_at: str | None = None


def _dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _question(r: dict[str, Any]) -> QuestionRecord:
    """A questions row with its JSON columns read."""
    r["questions"] = json.loads(r["questions"])
    r["answer"] = json.loads(r["answer"]) if r["answer"] else None
    return QuestionRecord(**r)


@dataclass
class Sighting:
    """What Store.request found of a Slack request: seen before, or recorded by a twin."""

    first: bool
    duplicate: bool = False


@dataclass(frozen=True)
class AuditEvent:
    id: int
    run_id: str | None
    at: str
    kind: str
    actor: str | None
    detail: dict[str, Any]
    prev_hash: str | None = None
    hash: str | None = None
    hash_alg: str | None = None


class Store:
    """SQLite with WAL and a busy timeout; every method is small and named."""

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], datetime] = utc_now,
        busy_timeout_ms: int = 10_000,
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock = threading.RLock()
        self._busy_ms = int(busy_timeout_ms)
        self._quick = threading.local()
        self._request = threading.local()  # the Slack request this thread is handling
        self._held = threading.local()  # how deep this thread is inside _locked()
        self._readers = threading.local()  # each thread's read connection (see _reader)
        self._tx = threading.local()  # whether this thread has a write transaction open
        self._in_memory = str(path) == ":memory:"
        conn = sqlite3.connect(
            str(self.path), check_same_thread=False, timeout=busy_timeout_ms / 1000
        )
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if str(path) != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        self.db = Database(conn, execute_plugins=False)
        with self._lock:
            migrations.apply(self.db)

    def close(self) -> None:
        with self._lock:
            self.db.close()

    def now(self, *, after: timedelta | None = None) -> str:
        """The store's clock as ISO-8601 UTC text (which sorts as time does), optionally ahead."""
        moment = self._clock() + (after or timedelta(0))
        return moment.astimezone(UTC).isoformat(timespec="milliseconds")

    @contextmanager
    def quick(self) -> Iterator[None]:
        """Within this block, this thread waits at most QUICK_BUSY_MS for a lock: BusyError after.

        The ack path runs in here, so a database held by another process (a migration, a
        backup, a second closebot) costs the user a "busy, try again", not a missed ack.
        """
        before = getattr(self._quick, "on", False)
        self._quick.on = True
        try:
            yield
        finally:
            self._quick.on = before

    @contextmanager
    def _locked(self) -> Iterator[None]:
        held = getattr(self._held, "depth", 0)
        if not held:  # never while holding the lock: a request may be waiting for it
            ACKS.checkpoint()  # background work lets a request being answered go first
        if getattr(self._quick, "on", False):
            if not self._lock.acquire(timeout=QUICK_LOCK_MS / 1000):
                raise BusyError("the database is busy (another closebot thread is writing)")
        else:
            self._lock.acquire()
        self._held.depth = held + 1
        try:
            yield
        finally:
            self._held.depth = held
            self._lock.release()

    @contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction, taken with BEGIN IMMEDIATE so claims never deadlock. Inside
        this thread's open transaction, a write joins it: several writes, one commit."""
        if getattr(self._tx, "open", False):
            with self._locked():  # a savepoint: a failed inner write undoes only itself
                self.db.conn.execute("SAVEPOINT joined")
                try:
                    yield self.db
                except BaseException:
                    self.db.conn.execute("ROLLBACK TO joined")
                    self.db.conn.execute("RELEASE joined")
                    raise
                self.db.conn.execute("RELEASE joined")
            return
        with self._locked():
            conn = self.db.conn
            quick = getattr(self._quick, "on", False)
            if quick:
                conn.execute(f"PRAGMA busy_timeout = {QUICK_BUSY_MS}")
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:
                if "locked" in str(e) or "busy" in str(e):
                    raise BusyError(f"the database is locked by another writer ({e})") from e
                if "readonly" in str(e) or "read-only" in str(e):
                    raise ReadOnlyError(f"the database is read-only ({e})") from e
                raise
            finally:
                if quick:
                    conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            sighting = getattr(self._request, "sighting", None)
            self._tx.open = True
            try:
                if sighting:  # the request's first write records it, in the same transaction
                    self._record_sighting(sighting)
                yield self.db
            except sqlite3.OperationalError as e:
                conn.execute("ROLLBACK")
                if "readonly" in str(e) or "read-only" in str(e):
                    raise ReadOnlyError(f"the database is read-only ({e})") from e
                raise
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")
                if sighting:
                    self._request.sighting = None
            finally:
                self._tx.open = False

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        if getattr(self._held, "depth", 0) or self._in_memory:
            # Inside a transaction (read what it has written), or a database only this
            # connection can see: the writer's connection, under the lock.
            with self._locked():
                return _dicts(self.db.conn.execute(sql, params))
        ACKS.checkpoint()
        return _dicts(self._reader().execute(sql, params))

    def _reader(self) -> sqlite3.Connection:
        """This thread's read-only connection: in WAL mode reads need no lock, so they never
        queue behind another thread's transaction."""
        conn: sqlite3.Connection | None = getattr(self._readers, "conn", None)
        if conn is None:
            conn = sqlite3.connect(str(self.path), timeout=self._busy_ms / 1000)
            conn.execute("PRAGMA query_only = ON")
            self._readers.conn = conn
        return conn

    def health(self) -> str:
        """'ok', 'locked' or 'read-only: …': whether this database can take a write right now."""
        try:
            with self.quick(), self.write() as db:
                db.execute("pragma user_version = " + str(self._user_version()))
        except BusyError:
            return "locked"
        except ReadOnlyError as e:
            return f"read-only: {e.__cause__}"
        except sqlite3.Error as e:
            return f"error: {e}"
        return "ok"

    def _user_version(self) -> int:
        return int(self.db.execute("pragma user_version").fetchone()[0])

    def _audit(
        self,
        db: Database,
        *,
        run_id: str | None,
        kind: str,
        actor: str | None,
        detail: Any,
        first: bool = False,
    ) -> None:
        """Append an audit event chained to the run's previous one (call inside write());
        `first` for a run's first event, which has none before it."""
        last = (
            []
            if first
            else self._rows(
                "select hash from audit_events where run_id is ? order by id desc limit 1",
                (run_id,),
            )
        )
        prev = (last[0]["hash"] if last else None) or ""
        event = {
            "run_id": run_id,
            "at": self.now(),
            "kind": kind,
            "actor": actor,
            "detail": _dumps(detail),
        }
        digest, alg = chain.seal(prev, event)
        _insert(db, "audit_events", {**event, "prev_hash": prev, "hash": digest, "hash_alg": alg})

    def audit_verdict(self, run_id: str) -> chain.Verdict:
        """The run's audit chain checked event by event, each with the algorithm that wrote it."""
        rows = self._rows("select * from audit_events where run_id = ? order by id", (run_id,))
        meta = self._rows("select value from meta where key = 'audit_unchained_through'")
        return chain.verify(rows, unchained_through=int(meta[0]["value"]) if meta else 0)

    def verify_audit(self, run_id: str) -> tuple[int, AuditEvent | None, str]:
        """(events checked, the first event whose link is broken or None, why)."""
        verdict = self.audit_verdict(run_id)
        if verdict.broken is None:
            return verdict.checked, None, ""
        r = verdict.broken
        found = AuditEvent(**{k: r[k] for k in ("id", "run_id", "at", "kind", "actor")}, detail={})
        return verdict.checked, found, verdict.why

    # -- runs -------------------------------------------------------------

    def create_run(
        self,
        *,
        period: str,
        mode: str,
        started_by: str | None,
        model: str | None,
        channel: str | None = None,
        thread_ts: str | None = None,
    ) -> Run:
        run_id = uuid.uuid4().hex[:12]
        now = self.now()
        row: dict[str, Any] = {
            "id": run_id,
            "period": period,
            "mode": mode,
            "status": "running",
            "started_by": started_by,
            "channel": channel,
            "thread_ts": thread_ts,
            "model": model,
            "steps": _dumps({}),
            "error": None,
            "created_at": now,
            "updated_at": now,
        }
        with self.write() as db:
            _insert(db, "runs", row)
            self._audit(
                db,
                run_id=run_id,
                kind="run_started",
                actor=started_by,
                detail={"period": period, "mode": mode, "model": model},
                first=True,
            )
        return Run(**{**row, "steps": {}})

    def run(self, run_id: str) -> Run:
        rows = self._rows("select * from runs where id = ?", (run_id,))
        if not rows:
            raise NotFoundError(f"no run with id {run_id!r} in {self.path}")
        row = rows[0]
        row["steps"] = json.loads(row["steps"] or "{}")
        return Run(**row)

    def stop_requested(self, run_id: str) -> str | None:
        """Who pressed Stop on the run, if anyone (a turn asks before each step)."""
        rows = self._rows("select stop_requested_by from runs where id = ?", (run_id,))
        return rows[0]["stop_requested_by"] if rows else None

    def runs(self, *, limit: int = 20) -> list[Run]:
        rows = self._rows(
            "select id from runs order by created_at desc, rowid desc limit ?", (limit,)
        )
        return [self.run(r["id"]) for r in rows]

    def run_for_thread(self, *, channel: str, thread_ts: str) -> Run | None:
        rows = self._rows(
            "select id from runs where channel = ? and thread_ts = ? order by created_at desc limit 1",
            (channel, thread_ts),
        )
        return self.run(rows[0]["id"]) if rows else None

    def set_run_thread(
        self, run_id: str, *, channel: str, thread_ts: str, status_ts: str | None
    ) -> None:
        """Where in Slack the run lives: its root message (the thread) and its status message."""
        with self.write() as db:
            db.execute(
                "update runs set channel = ?, thread_ts = ?, status_ts = ?, updated_at = ? where id = ?",
                (channel, thread_ts, status_ts, self.now(), run_id),
            )

    @contextmanager
    def request(self, event_id: str) -> Iterator[Sighting]:
        """Handle one Slack request (by its signature or event id) on this thread.

        `first` is False when it was seen before (a replay: do nothing). Otherwise the request
        is recorded in the first write transaction made inside the block, so an ack costs one
        transaction; a transaction that finds it recorded already (a duplicate delivered at
        the same moment) raises ReplayedError and changes nothing. A block that writes
        nothing records it at its end, and `duplicate` then says whether another delivery
        recorded it first (so whatever this one queued can be dropped).
        """
        try:
            with self.quick():
                seen = self._rows("select 1 from slack_events where event_id = ?", (event_id,))
        except BusyError:
            seen = []  # the listener will find the database busy too, and say so
        sighting = Sighting(first=not seen)
        if seen:
            yield sighting
            return
        self._request.sighting = event_id
        try:
            yield sighting
        finally:
            pending, self._request.sighting = self._request.sighting, None
            if pending:
                with suppress(StorageError), self.quick():
                    sighting.duplicate = not self.first_sighting(pending)

    def _record_sighting(self, event_id: str) -> None:
        cursor = self.db.conn.execute(
            "insert or ignore into slack_events (event_id, received_at) values (?, ?)",
            (event_id, self.now()),
        )
        if cursor.rowcount != 1:
            raise ReplayedError(f"request {event_id[:16]}… was handled already")

    def first_sighting(self, event_id: str) -> bool:
        """True the first time an event id is seen; Slack's retries of it return False."""
        with self.write() as db:
            cursor = db.execute(
                "insert or ignore into slack_events (event_id, received_at) values (?, ?)",
                (event_id, self.now()),
            )
            return cursor.rowcount == 1

    def forget_sightings(self, *, older_than: timedelta) -> int:
        """Drop request signatures seen longer ago than `older_than` (past Slack's replay window)."""
        with self.write() as db:
            cursor = db.execute(
                "delete from slack_events where event_id like 'sig:%' and received_at < ?",
                (self.now(after=-older_than),),
            )
            return cursor.rowcount

    def hold_message(self, run_id: str, *, user: str | None, text: str) -> None:
        """Keep a message that arrived while the run was busy; take_messages() hands it over."""
        with self.write() as db:
            _insert(
                db,
                "inbox",
                {"run_id": run_id, "user": user, "text": text, "created_at": self.now()},
            )

    def take_messages(self, run_id: str) -> list[dict[str, Any]]:
        """Held messages, oldest first, each handed over once."""
        with self.write() as db:
            rows = self._rows(
                "select id, user, text from inbox where run_id = ? and delivered_at is null order by id",
                (run_id,),
            )
            for row in rows:
                db.execute(
                    "update inbox set delivered_at = ? where id = ?", (self.now(), row["id"])
                )
        return rows

    def runs_with_status(self, *statuses: str) -> list[Run]:
        marks = ",".join("?" for _ in statuses)
        rows = self._rows(
            f"select id from runs where status in ({marks}) order by created_at", statuses
        )
        return [self.run(r["id"]) for r in rows]

    def set_run_status(self, run_id: str, status: str, *, error: str | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        with self.write() as db:
            previous = self._rows("select status from runs where id = ?", (run_id,))
            db.execute(
                "update runs set status = ?, error = ?, updated_at = ? where id = ?",
                (status, error, self.now(), run_id),
            )
            if (
                previous
                and previous[0]["status"] != status
                and status in ("done", "failed", "cancelled")
            ):
                self._audit(
                    db, run_id=run_id, kind=f"run_{status}", actor=None, detail={"error": error}
                )

    def set_step(self, run_id: str, step: str, state: str) -> dict[str, str]:
        """Record a step's state (pending/running/waiting/done/failed); return all steps."""
        with self.write() as db:
            steps = json.loads(
                self._rows("select steps from runs where id = ?", (run_id,))[0]["steps"]
            )
            if state in ("running", "waiting"):
                # one step moves at a time: the one before it is finished
                for name, old in steps.items():
                    if name != step and old in ("running", "waiting"):
                        steps[name] = "done"
            steps[step] = state
            db.execute(
                "update runs set steps = ?, updated_at = ? where id = ?",
                (_dumps(steps), self.now(), run_id),
            )
        return steps

    def finish_steps(self, run_id: str) -> dict[str, str]:
        """At the end of a turn: the step that was running is done; one left waiting was stopped."""
        with self.write() as db:
            steps = json.loads(
                self._rows("select steps from runs where id = ?", (run_id,))[0]["steps"]
            )
            moved = {"running": "done", "waiting": "stopped"}
            steps = {k: moved.get(v, v) for k, v in steps.items()}
            db.execute("update runs set steps = ? where id = ?", (_dumps(steps), run_id))
        return steps

    # -- transcript -------------------------------------------------------

    def append_message(self, run_id: str, *, role: str, content: list[dict[str, Any]]) -> int:
        """Append one Messages-API message; history is never rewritten."""
        if role not in ("user", "assistant"):
            raise ValueError(f"unknown role {role!r}")
        with self.write() as db:
            row = self._rows(
                "select coalesce(max(seq), 0) as seq from messages where run_id = ?", (run_id,)
            )
            seq = int(row[0]["seq"]) + 1
            _insert(
                db,
                "messages",
                {
                    "run_id": run_id,
                    "seq": seq,
                    "role": role,
                    "content": _dumps(content),
                    "created_at": self.now(),
                },
            )
            db.execute("update runs set updated_at = ? where id = ?", (self.now(), run_id))
        return seq

    def last_message(self, run_id: str) -> Message | None:
        """The transcript's latest message, without reading the rest."""
        rows = self._rows(
            "select seq, role, content from messages where run_id = ? order by seq desc limit 1",
            (run_id,),
        )
        if not rows:
            return None
        r = rows[0]
        return Message(seq=r["seq"], role=r["role"], content=json.loads(r["content"]))

    def messages(self, run_id: str) -> list[Message]:
        rows = self._rows(
            "select seq, role, content from messages where run_id = ? order by seq", (run_id,)
        )
        return [
            Message(seq=r["seq"], role=r["role"], content=json.loads(r["content"])) for r in rows
        ]

    # -- model usage ------------------------------------------------------

    def record_model_call(
        self, run_id: str, *, model: str | None, stop_reason: str | None, usage: dict[str, int]
    ) -> None:
        """One model call's token usage."""
        with self.write() as db:
            _insert(
                db,
                "model_calls",
                {
                    "run_id": run_id,
                    "at": self.now(),
                    "model": model,
                    "stop_reason": stop_reason,
                    **{f: int(usage.get(f, 0)) for f in USAGE_FIELDS},
                },
            )

    def usage(self, run_id: str) -> tuple[int, dict[str, int]]:
        """(model calls, summed token usage) of a run."""
        sums = ", ".join(f"coalesce(sum({f}), 0) as {f}" for f in USAGE_FIELDS)
        row = self._rows(
            f"select count(*) as calls, {sums} from model_calls where run_id = ?", (run_id,)
        )[0]
        calls = int(row.pop("calls"))
        return calls, {k: int(v) for k, v in row.items()}

    # -- tool calls -------------------------------------------------------

    def record_tool_result(
        self,
        run_id: str,
        *,
        tool_use_id: str,
        name: str,
        input: dict[str, Any],
        content: str,
        is_error: bool,
    ) -> None:
        with self.write() as db:
            _insert(
                db,
                "tool_calls",
                {
                    "tool_use_id": tool_use_id,
                    "run_id": run_id,
                    "name": name,
                    "input": _dumps(input),
                    "result": content,
                    "is_error": int(is_error),
                    "created_at": self.now(),
                },
                ignore=True,  # a result, once stored, is final
            )

    def last_tool_error(self, run_id: str, names: list[str]) -> str | None:
        """The latest error result of any of these tools in the run."""
        marks = ",".join("?" for _ in names) or "''"
        rows = self._rows(
            f"select result from tool_calls where run_id = ? and is_error = 1 and name in ({marks}) "
            "order by created_at desc, rowid desc limit 1",
            (run_id, *names),
        )
        return rows[0]["result"] if rows else None

    def tool_result(self, tool_use_id: str) -> ToolResult | None:
        rows = self._rows("select * from tool_calls where tool_use_id = ?", (tool_use_id,))
        if not rows:
            return None
        r = rows[0]
        return ToolResult(
            tool_use_id=r["tool_use_id"],
            name=r["name"],
            input=json.loads(r["input"]),
            content=r["result"],
            is_error=bool(r["is_error"]),
        )

    # -- questions --------------------------------------------------------

    def create_question(
        self,
        run_id: str,
        *,
        question_id: str,
        context: str,
        questions: list[dict[str, Any]],
        expires_at: str | None = None,
    ) -> tuple[QuestionRecord, bool]:
        """Store a pending question once; return it and whether it was new."""
        with self.write() as db:
            existing = self._rows("select id from questions where id = ?", (question_id,))
            if not existing:
                _insert(
                    db,
                    "questions",
                    {
                        "id": question_id,
                        "run_id": run_id,
                        "context": context,
                        "questions": _dumps(questions),
                        "status": "pending",
                        "created_at": self.now(),
                        "expires_at": expires_at,
                    },
                )
                self._audit(
                    db,
                    run_id=run_id,
                    kind="question_asked",
                    actor="agent",
                    detail={"question_id": question_id, "context": context, "questions": questions},
                )
        return self.question(question_id), not existing

    def question(self, question_id: str) -> QuestionRecord:
        rows = self._rows("select * from questions where id = ?", (question_id,))
        if not rows:
            raise NotFoundError(f"no question with id {question_id!r}")
        return _question(rows[0])

    def questions(self, run_id: str) -> list[QuestionRecord]:
        rows = self._rows(
            "select * from questions where run_id = ? order by created_at, rowid", (run_id,)
        )
        return [_question(r) for r in rows]

    def pending_question(self, run_id: str) -> QuestionRecord | None:
        rows = self._rows(
            "select * from questions where run_id = ? and status = 'pending' order by rowid limit 1",
            (run_id,),
        )
        return _question(rows[0]) if rows else None

    def due_questions(self) -> list[QuestionRecord]:
        """Pending questions whose expiry time has passed."""
        rows = self._rows(
            "select id from questions where status = 'pending' and expires_at is not null and expires_at <= ? order by expires_at",
            (self.now(),),
        )
        return [self.question(r["id"]) for r in rows]

    def question_for_message(self, *, channel: str, message_ts: str) -> QuestionRecord | None:
        """The question whose form is the message at (channel, ts)."""
        rows = self._rows(
            "select id from questions where channel = ? and message_ts = ?", (channel, message_ts)
        )
        return self.question(rows[0]["id"]) if rows else None

    def set_question_message(self, question_id: str, *, channel: str, message_ts: str) -> None:
        with self.write() as db:
            db.execute(
                "update questions set channel = ?, message_ts = ? where id = ?",
                (channel, message_ts, question_id),
            )

    def _settle_question(
        self,
        question_id: str,
        *,
        status: str,
        answer: dict[str, Any] | None,
        by: str | None,
        source: str,
        kind: str,
        rationale: str | None = None,
        overridden: bool = False,
        evidence: dict[str, Any] | None = None,
        known: QuestionRecord | None = None,
    ) -> QuestionRecord:
        """Move a pending question to a final status; exactly one concurrent caller wins.
        `known`: the question as the caller read it while pending (saves reading it again)."""
        now = self.now()
        with self.write() as db:
            cursor = db.execute(
                "update questions set status = ?, answer = ?, answered_by = ?, source = ?, "
                "answered_at = ?, rationale = ?, overridden = ? where id = ? and status = 'pending'",
                (
                    status,
                    _dumps(answer) if answer is not None else None,
                    by,
                    source,
                    now,
                    rationale or None,
                    int(overridden),
                    question_id,
                ),
            )
            won = cursor.rowcount == 1
            if won:
                run_id = (
                    known.run_id
                    if known
                    else self._rows("select run_id from questions where id = ?", (question_id,))[0][
                        "run_id"
                    ]
                )
                self._audit(
                    db,
                    run_id=run_id,
                    kind=kind,
                    actor=by,
                    detail={
                        "question_id": question_id,
                        "source": source,
                        "answer": answer,
                        "rationale": rationale or None,
                        "overridden": overridden,
                        **(evidence or {}),
                    },
                )
        if won and known:
            return replace(
                known,
                status=status,
                answer=answer,
                answered_by=by,
                source=source,
                answered_at=now,
                rationale=rationale or None,
                overridden=int(overridden),
            )
        record = self.question(question_id)
        if not won:
            who = f" by {record.answered_by}" if record.answered_by else ""
            raise AlreadyAnsweredError(
                f"this question was already {record.status}{who}",
                status=record.status,
                by=record.answered_by,
            )
        return record

    def claim_answer(
        self,
        question_id: str,
        *,
        answer: dict[str, Any],
        answered_by: str,
        source: str,
        rationale: str | None = None,
        overridden: bool = False,
        evidence: dict[str, Any] | None = None,
        known: QuestionRecord | None = None,
    ) -> QuestionRecord:
        """Answer a pending question; AlreadyAnsweredError if another claim got there first."""
        return self._settle_question(
            question_id,
            status="answered",
            answer=answer,
            by=answered_by,
            source=source,
            kind="question_answered",
            rationale=rationale,
            overridden=overridden,
            evidence=evidence,
            known=known,
        )

    def cancel_question(
        self, question_id: str, *, cancelled_by: str, source: str
    ) -> QuestionRecord:
        return self._settle_question(
            question_id,
            status="cancelled",
            answer=None,
            by=cancelled_by,
            source=source,
            kind="question_cancelled",
        )

    def expire_question(self, question_id: str) -> QuestionRecord:
        return self._settle_question(
            question_id,
            status="expired",
            answer=None,
            by=None,
            source="timeout",
            kind="question_expired",
        )

    def set_form_shown_settled(self, question_id: str) -> None:
        """The settled form's message now shows it read-only."""
        with self.write() as db:
            db.execute(
                "update questions set settled_shown_at = ? where id = ?", (self.now(), question_id)
            )

    def forms_to_repair(self) -> tuple[list[QuestionRecord], list[QuestionRecord]]:
        """Pending questions whose form never reached Slack; settled ones whose form still looks live."""
        unposted = self._rows(
            "select q.id from questions q join runs r on r.id = q.run_id "
            "where q.status = 'pending' and q.message_ts is null and r.thread_ts is not null "
            "and r.status in ('running', 'waiting') order by q.rowid"
        )
        unsettled = self._rows(
            "select id from questions where status != 'pending' and message_ts is not null "
            "and settled_shown_at is null order by rowid"
        )
        return (
            [self.question(r["id"]) for r in unposted],
            [self.question(r["id"]) for r in unsettled],
        )

    def set_remind_at(self, question_id: str, at: str | None) -> None:
        with self.write() as db:
            db.execute("update questions set remind_at = ? where id = ?", (at, question_id))

    def due_reminders(self) -> list[QuestionRecord]:
        """Pending questions whose next reminder time has passed."""
        rows = self._rows(
            "select id from questions where status = 'pending' and remind_at is not null "
            "and remind_at <= ? order by remind_at",
            (self.now(),),
        )
        return [self.question(r["id"]) for r in rows]

    # -- leases: one process advances a run at a time -----------------------

    def acquire_lease(self, run_id: str, *, owner: str, ttl: timedelta) -> str | None:
        """Take or renew the run's lease; None when it is ours, else who holds it."""
        with self.write() as db:
            rows = self._rows("select owner, expires_at from leases where run_id = ?", (run_id,))
            now = self.now()
            if rows and rows[0]["owner"] != owner and rows[0]["expires_at"] > now:
                return str(rows[0]["owner"])
            db.execute(
                "insert into leases (run_id, owner, expires_at) values (?, ?, ?) "
                "on conflict(run_id) do update set owner = excluded.owner, expires_at = excluded.expires_at",
                (run_id, owner, self.now(after=ttl)),
            )
        return None

    def renew_leases(self, *, owner: str, ttl: timedelta) -> None:
        with self.write() as db:
            db.execute(
                "update leases set expires_at = ? where owner = ?", (self.now(after=ttl), owner)
            )

    def release_lease(self, run_id: str, *, owner: str) -> None:
        with self.write() as db:
            db.execute("delete from leases where run_id = ? and owner = ?", (run_id, owner))

    @contextmanager
    def leased(self, run_id: str, *, owner: str, ttl: timedelta) -> Iterator[str | None]:
        """Hold the run's lease for the block, renewed every ttl/3 by a heartbeat thread.

        Yields None when the lease is ours, else who holds it (and the block should not
        advance the run). A process that dies stops renewing: the lease expires after `ttl`.
        """
        holder = self.acquire_lease(run_id, owner=owner, ttl=ttl)
        if holder:
            yield holder
            return
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(ttl.total_seconds() / 3):
                # A missed beat is tried again at the next; the lease outlives one miss.
                with suppress(sqlite3.Error, BusyError):
                    self.renew_leases(owner=owner, ttl=ttl)

        beat = threading.Thread(target=heartbeat, name=f"lease-{run_id}", daemon=True)
        beat.start()
        try:
            yield None
        finally:
            stop.set()
            beat.join(timeout=5)
            self.release_lease(run_id, owner=owner)

    def lease_holder(self, run_id: str) -> str | None:
        rows = self._rows(
            "select owner from leases where run_id = ? and expires_at > ?", (run_id, self.now())
        )
        return str(rows[0]["owner"]) if rows else None

    def stuck_runs(self, *, idle_for: timedelta) -> list[Run]:
        """Runs that should be moving but nothing advances them: no lease, no pending question,
        untouched for `idle_for`."""
        cutoff = self.now(after=-idle_for)
        rows = self._rows(
            "select r.id from runs r where r.status in ('running', 'waiting') and r.mode = 'slack' "
            "and r.updated_at <= ? "
            "and not exists (select 1 from leases l where l.run_id = r.id and l.expires_at > ?) "
            "and not exists (select 1 from questions q where q.run_id = r.id and q.status = 'pending') "
            "order by r.created_at",
            (cutoff, self.now()),
        )
        return [self.run(r["id"]) for r in rows]

    def touch_run(self, run_id: str) -> None:
        with self.write() as db:
            db.execute("update runs set updated_at = ? where id = ?", (self.now(), run_id))

    # -- stop ---------------------------------------------------------------

    def request_stop(self, run_id: str, *, by: str) -> None:
        """Ask the run to stop at its next step boundary."""
        with self.write() as db:
            db.execute(
                "update runs set stop_requested_by = coalesce(stop_requested_by, ?) where id = ?",
                (by, run_id),
            )
            self._audit(db, run_id=run_id, kind="stop_requested", actor=by, detail={})

    # -- audit ------------------------------------------------------------

    def audit(
        self, *, run_id: str | None, kind: str, actor: str | None, detail: Any = None
    ) -> None:
        with self.write() as db:
            self._audit(db, run_id=run_id, kind=kind, actor=actor, detail=detail or {})

    def audit_events(self, run_id: str, *, kind: str | None = None) -> list[AuditEvent]:
        sql = "select * from audit_events where run_id = ?"
        params: tuple[Any, ...] = (run_id,)
        if kind:
            sql += " and kind = ?"
            params += (kind,)
        rows = self._rows(sql + " order by id", params)
        return [AuditEvent(**{**r, "detail": json.loads(r["detail"] or "{}")}) for r in rows]

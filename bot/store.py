"""The one owner of SQLite: migrations, runs, the transcript, questions, audit."""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from bot.errors import AlreadyAnsweredError, NotFoundError

migrations = Migrations("closebot")

_ZERO = Decimal("0.00")
RUN_STATUSES = ("running", "waiting", "done", "failed", "cancelled")
QUESTION_STATUSES = ("pending", "answered", "cancelled", "expired")


@migrations()
def m001_core(db: Database) -> None:
    """Runs, the append-only transcript, tool calls, questions, audit events."""
    db.table("runs").create(
        {
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
        },
        pk="id",
        not_null={"id", "period", "mode", "status", "created_at", "updated_at"},
    )
    db.table("runs").create_index(["channel", "thread_ts"])
    db.table("messages").create(
        {
            "id": int,
            "run_id": str,
            "seq": int,
            "role": str,
            "content": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"run_id", "seq", "role", "content", "created_at"},
    )
    db.table("messages").create_index(["run_id", "seq"], unique=True)
    db.table("tool_calls").create(
        {
            "tool_use_id": str,
            "run_id": str,
            "name": str,
            "input": str,
            "result": str,
            "is_error": int,
            "created_at": str,
        },
        pk="tool_use_id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"tool_use_id", "run_id", "name", "input", "result", "is_error"},
    )
    db.table("questions").create(
        {
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
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"id", "run_id", "questions", "status", "created_at"},
    )
    db.table("questions").create_index(["run_id", "status"])
    db.table("audit_events").create(
        {
            "id": int,
            "run_id": str,
            "at": str,
            "kind": str,
            "actor": str,
            "detail": str,
        },
        pk="id",
        not_null={"at", "kind"},
    )
    db.table("audit_events").create_index(["run_id"])


@migrations()
def m002_close(db: Database) -> None:
    """Close exceptions with their resolutions, and journal batches with their lines."""
    db.table("exceptions").create(
        {
            "id": str,
            "run_id": str,
            "kind": str,
            "well_id": str,
            "details": str,
            "status": str,
            "resolution": str,
            "note": str,
            "question_id": str,
            "decided_by": str,
            "decision_source": str,
            "resolved_at": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"id", "run_id", "kind", "details", "status", "created_at"},
    )
    db.table("journal_batches").create(
        {
            "id": str,
            "run_id": str,
            "period": str,
            "status": str,
            "total_debit": str,
            "total_credit": str,
            "created_at": str,
            "posted_at": str,
            "posted_by": str,
            "approval_question_id": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"id", "run_id", "period", "status", "total_debit", "total_credit"},
    )
    db.table("journal_lines").create(
        {
            "id": int,
            "batch_id": str,
            "entry_no": int,
            "line_no": int,
            "entry": str,
            "account": str,
            "account_name": str,
            "debit": str,
            "credit": str,
            "well_id": str,
            "memo": str,
        },
        pk="id",
        foreign_keys=[("batch_id", "journal_batches", "id")],
        not_null={"batch_id", "entry_no", "line_no", "account", "debit", "credit"},
    )
    db.table("journal_lines").create_index(["batch_id", "entry_no", "line_no"], unique=True)


def utc_now() -> datetime:
    return datetime.now(UTC)


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


@dataclass(frozen=True)
class AuditEvent:
    id: int
    run_id: str | None
    at: str
    kind: str
    actor: str | None
    detail: dict[str, Any]


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

    def now(self) -> str:
        return self._clock().isoformat(timespec="milliseconds")

    @contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction, taken with BEGIN IMMEDIATE so claims never deadlock."""
        with self._lock:
            conn = self.db.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self.db.execute(sql, params)
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def _audit(
        self, db: Database, *, run_id: str | None, kind: str, actor: str | None, detail: Any
    ) -> None:
        db.table("audit_events").insert(
            {
                "run_id": run_id,
                "at": self.now(),
                "kind": kind,
                "actor": actor,
                "detail": _dumps(detail),
            }
        )

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
        with self.write() as db:
            db.table("runs").insert(
                {
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
            )
            self._audit(
                db,
                run_id=run_id,
                kind="run_started",
                actor=started_by,
                detail={"period": period, "mode": mode, "model": model},
            )
        return self.run(run_id)

    def run(self, run_id: str) -> Run:
        rows = self._rows("select * from runs where id = ?", (run_id,))
        if not rows:
            raise NotFoundError(f"no run with id {run_id!r} in {self.path}")
        row = rows[0]
        row["steps"] = json.loads(row["steps"] or "{}")
        return Run(**row)

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
        """Mark every step still running or waiting as done."""
        with self.write() as db:
            steps = json.loads(
                self._rows("select steps from runs where id = ?", (run_id,))[0]["steps"]
            )
            steps = {k: ("done" if v in ("running", "waiting") else v) for k, v in steps.items()}
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
            db.table("messages").insert(
                {
                    "run_id": run_id,
                    "seq": seq,
                    "role": role,
                    "content": _dumps(content),
                    "created_at": self.now(),
                }
            )
            db.execute("update runs set updated_at = ? where id = ?", (self.now(), run_id))
        return seq

    def messages(self, run_id: str) -> list[Message]:
        rows = self._rows(
            "select seq, role, content from messages where run_id = ? order by seq", (run_id,)
        )
        return [
            Message(seq=r["seq"], role=r["role"], content=json.loads(r["content"])) for r in rows
        ]

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
            db.table("tool_calls").insert(
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

    def tool_results(self, run_id: str, *, name: str | None = None) -> list[ToolResult]:
        sql = "select tool_use_id from tool_calls where run_id = ?"
        params: tuple[Any, ...] = (run_id,)
        if name:
            sql += " and name = ?"
            params += (name,)
        rows = self._rows(sql + " order by rowid", params)
        return [r for row in rows if (r := self.tool_result(row["tool_use_id"])) is not None]

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
                db.table("questions").insert(
                    {
                        "id": question_id,
                        "run_id": run_id,
                        "context": context,
                        "questions": _dumps(questions),
                        "status": "pending",
                        "created_at": self.now(),
                        "expires_at": expires_at,
                    }
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
        r = rows[0]
        r["questions"] = json.loads(r["questions"])
        r["answer"] = json.loads(r["answer"]) if r["answer"] else None
        return QuestionRecord(**r)

    def questions(self, run_id: str) -> list[QuestionRecord]:
        rows = self._rows(
            "select id from questions where run_id = ? order by created_at, rowid", (run_id,)
        )
        return [self.question(r["id"]) for r in rows]

    def pending_question(self, run_id: str) -> QuestionRecord | None:
        rows = self._rows(
            "select id from questions where run_id = ? and status = 'pending' order by rowid limit 1",
            (run_id,),
        )
        return self.question(rows[0]["id"]) if rows else None

    def pending_questions(self) -> list[QuestionRecord]:
        rows = self._rows("select id from questions where status = 'pending' order by rowid")
        return [self.question(r["id"]) for r in rows]

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
    ) -> QuestionRecord:
        """Move a pending question to a final status; exactly one concurrent caller wins."""
        with self.write() as db:
            cursor = db.execute(
                "update questions set status = ?, answer = ?, answered_by = ?, source = ?, "
                "answered_at = ? where id = ? and status = 'pending'",
                (
                    status,
                    _dumps(answer) if answer is not None else None,
                    by,
                    source,
                    self.now(),
                    question_id,
                ),
            )
            won = cursor.rowcount == 1
            if won:
                run_id = self._rows("select run_id from questions where id = ?", (question_id,))[0][
                    "run_id"
                ]
                self._audit(
                    db,
                    run_id=run_id,
                    kind=kind,
                    actor=by,
                    detail={"question_id": question_id, "source": source, "answer": answer},
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
        self, question_id: str, *, answer: dict[str, Any], answered_by: str, source: str
    ) -> QuestionRecord:
        """Answer a pending question; AlreadyAnsweredError if another claim got there first."""
        return self._settle_question(
            question_id,
            status="answered",
            answer=answer,
            by=answered_by,
            source=source,
            kind="question_answered",
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

    # -- close exceptions -------------------------------------------------

    def record_exception(
        self,
        run_id: str,
        *,
        exception_id: str,
        kind: str,
        well_id: str | None,
        details: dict[str, Any],
    ) -> dict[str, Any]:
        """Record an exception found by a check once; a re-run of the check keeps the first."""
        with self.write() as db:
            if not self._rows("select id from exceptions where id = ?", (exception_id,)):
                db.table("exceptions").insert(
                    {
                        "id": exception_id,
                        "run_id": run_id,
                        "kind": kind,
                        "well_id": well_id,
                        "details": _dumps(details),
                        "status": "open",
                        "created_at": self.now(),
                    }
                )
                self._audit(
                    db,
                    run_id=run_id,
                    kind="exception_found",
                    actor="agent",
                    detail={"id": exception_id, "kind": kind},
                )
        return self.exception(exception_id)

    def exception(self, exception_id: str) -> dict[str, Any]:
        rows = self._rows("select * from exceptions where id = ?", (exception_id,))
        if not rows:
            raise NotFoundError(f"no exception with id {exception_id!r}")
        return {**rows[0], "details": json.loads(rows[0]["details"])}

    def exceptions(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows("select id from exceptions where run_id = ? order by rowid", (run_id,))
        return [self.exception(r["id"]) for r in rows]

    def resolve_exception(
        self,
        exception_id: str,
        *,
        resolution: str,
        note: str | None,
        question_id: str | None,
        decided_by: str | None,
        decision_source: str | None,
    ) -> dict[str, Any]:
        actor = decided_by
        with self.write() as db:
            db.execute(
                "update exceptions set status = 'resolved', resolution = ?, note = ?, question_id = ?, "
                "decided_by = ?, decision_source = ?, resolved_at = ? where id = ?",
                (
                    resolution,
                    note,
                    question_id,
                    decided_by,
                    decision_source,
                    self.now(),
                    exception_id,
                ),
            )
            run_id = self._rows("select run_id from exceptions where id = ?", (exception_id,))[0][
                "run_id"
            ]
            self._audit(
                db,
                run_id=run_id,
                kind="exception_resolved",
                actor=actor,
                detail={
                    "id": exception_id,
                    "resolution": resolution,
                    "note": note,
                    "question_id": question_id,
                    "source": decision_source,
                },
            )
        return self.exception(exception_id)

    # -- journal entries --------------------------------------------------

    def save_journal_batch(
        self, run_id: str, *, batch_id: str, period: str, lines: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """Save a draft batch (replacing an earlier draft of the same id); posted ones are final."""
        total_debit = sum((line["debit"] for line in lines), start=_ZERO)
        total_credit = sum((line["credit"] for line in lines), start=_ZERO)
        with self.write() as db:
            existing = self._rows("select status from journal_batches where id = ?", (batch_id,))
            if existing and existing[0]["status"] != "draft":
                raise AlreadyAnsweredError(
                    f"batch {batch_id} is already {existing[0]['status']}",
                    status=existing[0]["status"],
                    by=None,
                )
            db.execute("delete from journal_lines where batch_id = ?", (batch_id,))
            db.execute("delete from journal_batches where id = ?", (batch_id,))
            db.table("journal_batches").insert(
                {
                    "id": batch_id,
                    "run_id": run_id,
                    "period": period,
                    "status": "draft",
                    "total_debit": str(total_debit),
                    "total_credit": str(total_credit),
                    "created_at": self.now(),
                }
            )
            db.table("journal_lines").insert_all(
                [
                    {
                        **line,
                        "batch_id": batch_id,
                        "debit": str(line["debit"]),
                        "credit": str(line["credit"]),
                    }
                    for line in lines
                ]
            )
            self._audit(
                db,
                run_id=run_id,
                kind="journal_drafted",
                actor="agent",
                detail={"batch_id": batch_id, "lines": len(lines), "total_debit": str(total_debit)},
            )
        return self.journal_batch(batch_id)

    def journal_batch(self, batch_id: str) -> dict[str, Any]:
        rows = self._rows("select * from journal_batches where id = ?", (batch_id,))
        if not rows:
            raise NotFoundError(f"no journal batch {batch_id!r}")
        return rows[0]

    def journal_batches(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows(
            "select * from journal_batches where run_id = ? order by created_at", (run_id,)
        )

    def journal_lines(self, batch_id: str) -> list[dict[str, Any]]:
        rows = self._rows(
            "select * from journal_lines where batch_id = ? order by entry_no, line_no", (batch_id,)
        )
        return [{**r, "debit": Decimal(r["debit"]), "credit": Decimal(r["credit"])} for r in rows]

    def post_journal_batch(
        self, batch_id: str, *, posted_by: str, approval_question_id: str
    ) -> bool:
        """Mark a draft batch posted; False when it was posted before (posting is idempotent)."""
        with self.write() as db:
            cursor = db.execute(
                "update journal_batches set status = 'posted', posted_at = ?, posted_by = ?, "
                "approval_question_id = ? where id = ? and status = 'draft'",
                (self.now(), posted_by, approval_question_id, batch_id),
            )
            posted = cursor.rowcount == 1
            if posted:
                run_id = self._rows("select run_id from journal_batches where id = ?", (batch_id,))[
                    0
                ]["run_id"]
                self._audit(
                    db,
                    run_id=run_id,
                    kind="journal_posted",
                    actor=posted_by,
                    detail={"batch_id": batch_id, "approval_question_id": approval_question_id},
                )
        return posted

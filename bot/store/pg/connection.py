"""A PostgreSQL connection that the store uses as it uses sqlite3's.

`PgConnection.execute(sql, params)` takes the store's SQL (SQLite's dialect, rewritten by
`bot.store.pg.sql`), returns a cursor with `fetchone`/`fetchall`/`description`/`lastrowid`,
and raises sqlite3's exception classes (a unique violation is an `IntegrityError`, a lock
not granted in time is "database is locked"), so the store's transaction core and its
repositories keep one code path. Values go as untyped literals, as SQLite takes them
(PostgreSQL casts each to its column's type); numbers come back as int or float.

`BEGIN IMMEDIATE` (SQLite's "one writer at a time") is a transaction holding this schema's
transaction-level advisory lock (`pg_advisory_xact_lock`): writers across every replica
queue on the database itself, and a replica that dies mid-transaction loses the lock with its
connection. `PRAGMA busy_timeout = N` is PostgreSQL's `lock_timeout`.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.adapt import Dumper, Loader
from psycopg.pq import TransactionStatus

from bot.store.pg import display
from bot.store.pg.sql import translate

_BUSY = re.compile(r"^\s*pragma\s+busy_timeout\s*=\s*(\d+)\s*$", re.IGNORECASE)
_WRITE_LOCK = "select pg_advisory_xact_lock(hashtext('closebot:' || current_schema()))"


class _Untyped(Dumper):
    """A Python number as an untyped literal: PostgreSQL gives it its column's type, as
    SQLite's loose typing does (an id compared with a text column, a count bound to LIMIT)."""

    oid = 0

    def dump(self, obj: Any) -> bytes:
        if isinstance(obj, bool):
            return b"1" if obj else b"0"
        return str(obj).encode()


class _Number(Loader):
    """numeric (what sum() of integers gives) as int when whole, else float: SQLite's."""

    def load(self, data: Any) -> Any:
        value = Decimal(bytes(data).decode())
        return int(value) if value == value.to_integral_value() else float(value)


class _Flag(Loader):
    """A boolean (what a comparison selected gives) as 1 or 0: SQLite's."""

    def load(self, data: Any) -> Any:
        return 1 if bytes(data) == b"t" else 0


def _adapt(conn: psycopg.Connection[Any]) -> None:
    for kind in (int, bool, float, Decimal):
        conn.adapters.register_dumper(kind, _Untyped)
    conn.adapters.register_loader("numeric", _Number)
    conn.adapters.register_loader("bool", _Flag)


def sqlite_error(e: psycopg.Error) -> sqlite3.Error:
    """The sqlite3 exception the store's code already handles for what PostgreSQL said."""
    text = f"{e.diag.message_primary or e}".strip()
    if isinstance(e, pg_errors.LockNotAvailable | pg_errors.QueryCanceled):
        return sqlite3.OperationalError(f"database is locked ({text})")
    if isinstance(e, pg_errors.ReadOnlySqlTransaction | pg_errors.InsufficientPrivilege):
        return sqlite3.OperationalError(f"attempt to write a readonly database ({text})")
    if isinstance(e, pg_errors.DiskFull | pg_errors.OutOfMemory):
        return sqlite3.OperationalError(f"database or disk is full ({text})")
    if isinstance(e, pg_errors.IntegrityError | pg_errors.RaiseException):
        return sqlite3.IntegrityError(text)
    if isinstance(e, pg_errors.DataCorrupted | pg_errors.IndexCorrupted):
        return sqlite3.DatabaseError(f"database corruption ({text})")
    return sqlite3.OperationalError(text)


class PgCursor:
    """What one statement gave: its rows (read at once), their names, the inserted rowid."""

    def __init__(self, rows: list[tuple[Any, ...]], names: Sequence[str] | None) -> None:
        self._rows = rows
        self._next = 0
        self.description = [(n, None, None, None, None, None, None) for n in names or ()]
        self.lastrowid: int | None = None
        self.rowcount = -1

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[tuple[Any, ...]]:
        rest, self._next = self._rows[self._next :], len(self._rows)
        return rest

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row


_INSERT = re.compile(r"^\s*insert\b", re.IGNORECASE)
_PRAGMA = re.compile(r"^\s*pragma\b", re.IGNORECASE)
_BEGIN_IMMEDIATE = re.compile(r"^\s*begin\s+immediate\s*;?\s*$", re.IGNORECASE)


_TABLE_INFO = re.compile(r"^\s*pragma\s+table_x?info\(\s*[\"\[]?(\w+)[\"\]]?\s*\)", re.IGNORECASE)
# SQLite's PRAGMA table_info (cid, name, type, notnull, dflt_value, pk) in SQLite's type names
_COLUMNS = (
    "select c.ordinal_position - 1 as cid, c.column_name as name, case c.data_type "
    "when 'bigint' then 'INTEGER' when 'integer' then 'INTEGER' when 'text' then 'TEXT' "
    "when 'double precision' then 'REAL' when 'bytea' then 'BLOB' else upper(c.data_type) end "
    "as type, case when c.is_nullable = 'NO' then 1 else 0 end as notnull, "
    "c.column_default as dflt_value, coalesce((select k.ordinal_position from "
    "information_schema.key_column_usage k join information_schema.table_constraints t on "
    "t.constraint_name = k.constraint_name and t.table_schema = k.table_schema "
    "where t.constraint_type = 'PRIMARY KEY' and k.table_schema = c.table_schema and "
    "k.table_name = c.table_name and k.column_name = c.column_name), 0) as pk "
    "from information_schema.columns c where c.table_schema = current_schema() "
    "and c.table_name = ? and c.column_name != 'rowid' order by c.ordinal_position"
)
_NAMES = re.compile(
    r"^\s*select\s+name\s+from\s+sqlite_master\s+where\s+type\s*=\s*'(table|view)'\s*$",
    re.IGNORECASE,
)
_ROWID_NAMED = re.compile(r"\browid\b", re.IGNORECASE)


class PgConnection:
    """One psycopg connection, in autocommit mode: the store says BEGIN and COMMIT itself."""

    def __init__(self, url: str, *, read_only: bool = False, timeout_s: float = 10) -> None:
        try:
            self._conn = psycopg.connect(
                url, autocommit=True, connect_timeout=max(2, int(timeout_s))
            )
        except psycopg.Error as e:
            raise sqlite3.OperationalError(f"unable to open database {display(url)}: {e}") from e
        _adapt(self._conn)
        self._lock_ms = int(timeout_s * 1000)
        self._trace: Callable[[str], object] | None = None
        self._run(f"set lock_timeout = {self._lock_ms}", ())
        if read_only:
            self._run("set default_transaction_read_only = on", ())

    @property
    def in_transaction(self) -> bool:
        return self._conn.info.transaction_status != TransactionStatus.IDLE

    @property
    def closed(self) -> bool:
        return self._conn.closed

    def set_trace_callback(self, trace: Callable[[str], object] | None) -> None:
        """sqlite3's: `trace` is called with each statement the store executes, as written."""
        self._trace = trace

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgCursor:
        if self._trace is not None:
            self._trace(sql)
        busy = _BUSY.match(sql)
        if busy:  # how long a lock is waited for: SQLite's busy timeout
            self._run(f"set lock_timeout = {int(busy.group(1))}", ())
            return PgCursor([], None)
        if _PRAGMA.match(sql):
            return self._pragma(sql)
        names = _NAMES.match(sql)
        if names:  # sqlite-utils' table_names() and view_names()
            kind = "BASE TABLE" if names.group(1).lower() == "table" else "VIEW"
            return self._run(
                "select table_name as name from information_schema.tables where "
                "table_schema = current_schema() and table_type = ? order by table_name",
                (kind,),
            )
        if _BEGIN_IMMEDIATE.match(sql):
            self._run("begin", ())
            try:
                self._run(_WRITE_LOCK, ())
            except sqlite3.Error:
                self._run("rollback", ())
                raise
            return PgCursor([], None)
        if _INSERT.match(sql) and self.in_transaction:
            return self._guarded(sql, params)
        return self._run(sql, params)

    def _pragma(self, sql: str) -> PgCursor:
        """SQLite's own settings: nothing to set here. Its schema cookie (which changes when
        the schema does) is how many migrations the database has; a table's columns are read
        from the catalogue (sqlite-utils' `columns_dict`); other reads say 0."""
        if "=" in sql:
            return PgCursor([], None)
        if re.search(r"schema_version", sql, re.IGNORECASE):
            return self._run("select count(*) from _sqlite_migrations", ())
        info = _TABLE_INFO.match(sql)
        if info:
            return self._run(_COLUMNS, (info.group(1),))
        return PgCursor([(0,)], ["value"])

    def _guarded(self, sql: str, params: Sequence[Any] | dict[str, Any]) -> PgCursor:
        """An insert inside a transaction, behind a savepoint: a constraint it breaks fails
        that statement only, and the transaction goes on (as in SQLite), its caller deciding."""
        self._run("savepoint pg_statement", ())
        try:
            cursor = self._run(sql, params)
        except sqlite3.Error:
            self._run("rollback to savepoint pg_statement", ())
            raise
        self._run("release savepoint pg_statement", ())
        return cursor

    def _run(self, sql: str, params: Sequence[Any] | dict[str, Any]) -> PgCursor:
        insert = bool(_INSERT.match(sql))
        text = translate(sql, bool(params))
        if insert:
            text += " returning rowid"
        try:
            with self._conn.cursor() as cur:
                cur.execute(text, params or None)
                names = [c.name for c in cur.description] if cur.description else None
                rows = cur.fetchall() if names else []
                count = cur.rowcount
        except psycopg.Error as e:
            raise sqlite_error(e) from e
        if insert:
            cursor = PgCursor([], None)
            cursor.lastrowid = int(rows[-1][0]) if rows else None
        elif names and "rowid" in names and not _ROWID_NAMED.search(sql.split("from", 1)[0]):
            # `select *`: SQLite leaves its rowid out; so does this (schema.py adds the column)
            at = names.index("rowid")
            cursor = PgCursor([r[:at] + r[at + 1 :] for r in rows], names[:at] + names[at + 1 :])
        else:
            cursor = PgCursor(rows, names)
        cursor.rowcount = count
        return cursor

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> PgCursor:
        rows = list(seq)
        if not rows:
            return PgCursor([], None)
        text = translate(sql, True)
        try:
            with self._conn.cursor() as cur:
                cur.executemany(text, rows)
        except psycopg.Error as e:
            raise sqlite_error(e) from e
        return PgCursor([], None)

    def commit(self) -> None:
        """sqlite3's: end the open transaction, if any (statements outside one are final)."""
        if self.in_transaction:
            self._run("commit", ())

    def rollback(self) -> None:
        if self.in_transaction:
            self._run("rollback", ())

    def close(self) -> None:
        self._conn.close()

"""The schema on PostgreSQL, from the same append-only migrations as on SQLite.

There is one source of truth: the migration functions (sqlite-utils' `Migrations`). Each is
run against a scratch in-memory SQLite that mirrors the PostgreSQL database's migrations;
the statements it executes there (traced: create, alter, index, insert, update, delete) are
said in PostgreSQL's types and replayed on the database, with the migration recorded in the
same `_sqlite_migrations` table, by name, in the same transaction. Migrations already
recorded there only advance the mirror. A migration's data changes are replayed as SQL, so
they act on the database's own rows; one that reads rows into Python to decide what to
write sees only the mirror's (empty) tables, and must be written as SQL to act here.

Every table gets a `rowid` column, as SQLite gives every table one: the id itself for a
table whose key is an integer, else a sequence; the store orders by it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

if TYPE_CHECKING:
    from bot.store.pg.connection import PgConnection

TABLE = Migrations.migrations_table
_REPLAYED = re.compile(r"^\s*(create|alter|insert|update|delete|drop)\b", re.IGNORECASE)
_CREATE = re.compile(r'^\s*create\s+table\s+(?:if\s+not\s+exists\s+)?"?(\w+)"?', re.IGNORECASE)
_INT_KEY = re.compile(r'"?(\w+)"?\s+INTEGER\s+PRIMARY\s+KEY', re.IGNORECASE)
_TYPES = (
    (re.compile(r"\bINTEGER\s+PRIMARY\s+KEY\b", re.IGNORECASE), "BIGSERIAL PRIMARY KEY"),
    (re.compile(r"\bINTEGER\b", re.IGNORECASE), "BIGINT"),
    (re.compile(r"\b(REAL|FLOAT)\b", re.IGNORECASE), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b", re.IGNORECASE), "BYTEA"),
)


def ddl(statement: str) -> list[str]:
    """A statement SQLite ran, said in PostgreSQL's types (a new table with its rowid)."""
    out = statement.rstrip().rstrip(";")
    if not re.match(r"^\s*(create|alter)\b", statement, re.IGNORECASE):
        return [out]
    for pattern, to in _TYPES:
        out = pattern.sub(to, out)
    made = _CREATE.match(statement)
    if not made:
        return [out]
    table = made.group(1)
    key = _INT_KEY.search(statement)
    rowid = f'bigint generated always as ("{key.group(1)}") stored' if key else "bigserial"
    return [out, f'alter table "{table}" add column rowid {rowid}']


class Mirror:
    """The scratch SQLite that mirrors the PostgreSQL database's applied migrations."""

    def __init__(self) -> None:
        self.db = Database(memory=True, execute_plugins=False)
        self._traced: list[str] | None = None
        self.db.conn.set_trace_callback(self._trace)

    def _trace(self, statement: str) -> None:
        if self._traced is not None and _REPLAYED.match(statement) and TABLE not in statement:
            self._traced.append(statement)

    def run(
        self, migration_set: Migrations, name: str, fn: Callable[[Database], None]
    ) -> list[str]:
        """Run one migration on the mirror; the statements it executed, in order."""
        self._traced = []
        try:
            with self.db.conn:
                fn(self.db)
                self.db.execute(
                    f"insert into {TABLE} (migration_set, name, applied_at) values (?, ?, '')",
                    (migration_set.name, name),
                )
            return self._traced
        finally:
            self._traced = None

    def close(self) -> None:
        self.db.close()


def ensure_table(conn: PgConnection) -> None:
    """The migrations' record, and what SQLite has that PostgreSQL lacks: sum(), min() and
    max() of a comparison (SQLite's are of 1s and 0s: `sum(status = 'open')`)."""
    conn.execute(
        "create or replace function closebot_count_true(bigint, boolean) returns bigint "
        "language sql immutable as "
        "'select case when $2 is null then $1 else coalesce($1, 0) + $2::int end'"
    )
    conn.execute(
        "create or replace aggregate sum(boolean) (sfunc = closebot_count_true, stype = bigint)"
    )
    for name, pick in (("min", "least"), ("max", "greatest")):  # min(a = b): 0 or 1
        conn.execute(
            f"create or replace function closebot_{name}_flag(bigint, boolean) returns bigint "
            f"language sql immutable as 'select case when $2 is null then $1 "
            f"else {pick}(coalesce($1, $2::int), $2::int) end'"
        )
        conn.execute(
            f"create or replace aggregate {name}(boolean) "
            f"(sfunc = closebot_{name}_flag, stype = bigint)"
        )
    conn.execute(
        f"create table if not exists {TABLE} (migration_set text not null, name text not null, "
        "applied_at text, rowid bigserial, primary key (migration_set, name))"
    )


def _resync_rowids(conn: PgConnection) -> None:
    """Each rowid sequence past the rows a migration copied with their rowids (sqlite-utils'
    transform() rebuilds a table so), as SQLite's next rowid is."""
    for (table,) in conn.execute(
        "select table_name from information_schema.columns where table_schema = "
        "current_schema() and column_name = 'rowid' and column_default like 'nextval%'"
    ).fetchall():
        conn.execute(
            f"select setval(pg_get_serial_sequence('\"{table}\"', 'rowid'), "
            f'coalesce(max(rowid), 0) + 1, false) from "{table}"'
        )


def apply(conn: PgConnection, mirror: Mirror, migration_set: Migrations, now: str) -> None:
    """Apply the set's migrations this database lacks, in order, each in one transaction under
    the write lock (another replica applying them at the same moment waits, then finds them)."""
    if not mirror.db.table(TABLE).exists():
        mirror.db.execute(f"create table {TABLE} (migration_set text, name text, applied_at text)")
    for migration in migration_set.pending(mirror.db):
        applied = conn.execute(
            f"select 1 from {TABLE} where migration_set = ? and name = ?",
            (migration_set.name, migration.name),
        ).fetchone()
        statements = mirror.run(migration_set, migration.name, migration.fn)
        if applied:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not conn.execute(
                f"select 1 from {TABLE} where migration_set = ? and name = ?",
                (migration_set.name, migration.name),
            ).fetchone():
                for statement in statements:
                    for said in ddl(statement):
                        conn.execute(said)
                _resync_rowids(conn)
                conn.execute(
                    f"insert into {TABLE} (migration_set, name, applied_at) values (?, ?, ?)",
                    (migration_set.name, migration.name, now),
                )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


__all__ = ["Mirror", "apply", "ddl", "ensure_table"]

"""The transaction core: the writer connection, write transactions, reads, health."""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from bot.core.errors import BusyError, CorruptDatabaseError, ReadOnlyError, StorageFullError
from bot.store import pg
from bot.store.ack_priority import ACKS
from bot.store.locks import QUICK_BUSY_MS, Locks, Readers
from bot.store.migrations import migrations, newer_migrations

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


def insert_row(db: Database, table: str, row: dict[str, Any], *, ignore: bool = False) -> None:
    """One row by plain SQL: sqlite-utils' insert() reads the table's schema on every call."""
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    verb = "insert or ignore" if ignore else "insert"
    db.execute(f"{verb} into {table} ({columns}) values ({marks})", tuple(row.values()))


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def known(cls: type[Any], row: dict[str, Any]) -> dict[str, Any]:
    """The row's columns that `cls` (a dataclass) has: a column a newer closebot added
    (a rolling deploy, before this process notices) is not this code's business."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return {k: v for k, v in row.items() if k in names}


_FIELDS: dict[type[Any], frozenset[str]] = {}

FirstWrite = Callable[[sqlite3.Connection], None]

FULL_SIGNS = ("database or disk is full", "disk i/o error", "no space left")
CORRUPT_SIGNS = ("malformed", "file is not a database", "database corruption")


def storage_fault(e: sqlite3.Error) -> str | None:
    """'full' or 'corrupt' when an SQLite error says the disk or the file failed, else None."""
    text = str(e).lower()
    if any(sign in text for sign in FULL_SIGNS):
        return "full"
    if any(sign in text for sign in CORRUPT_SIGNS):
        return "corrupt"
    return None


def corrupt_error(path: Path, why: str) -> CorruptDatabaseError:
    return CorruptDatabaseError(
        f"the database {path} is damaged ({why}); closebot will not serve from it. "
        "`closebot doctor` says what is wrong; restore the latest backup (README: Backups)"
    )


def full_error(e: sqlite3.Error) -> StorageFullError:
    return StorageFullError(
        f"closebot can't save right now, nothing was changed (the disk is full or failing: {e})"
    )


class StoreCore:
    """SQLite with WAL and a busy timeout: one writer connection behind this process's lock,
    one read connection per thread."""

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], datetime] = utc_now,
        busy_timeout_ms: int = 10_000,
        url: str | None = None,
    ) -> None:
        """`path`: the SQLite file (":memory:" for one only this store sees), or a
        `postgresql://` URL. `url`: a PostgreSQL database to keep the store in, with `path`
        naming it in messages and placing its audit key file (tests run the suite so)."""
        from_url = pg.is_url(path)
        if from_url:
            url, path = str(path), pg.display(str(path))
        self.url = url  # PostgreSQL's, or None: the SQLite file at `path`
        self.path = Path(path)
        # where the audit key file is kept (None: $CLOSEBOT_AUDIT_KEY, or a key of its own)
        self.key_path = None if from_url or str(path) == ":memory:" else self.path
        self.schema: list[Migrations] = []  # the migration sets applied: the platform's first
        self._clock = clock
        self._locks = Locks()
        self._busy_ms = int(busy_timeout_ms)
        self._tx = threading.local()  # whether this thread has a write transaction open
        # what this thread's next write transaction does first (see SlackReplay.request)
        self._first_write = threading.local()
        self._schema_seen: tuple[int, str | None] | None = None  # (schema cookie, newer_schema)
        self.corrupt: str | None = None  # what found the file damaged, once something did
        self._mirror: pg.Mirror | None = None
        if url:
            self.in_memory = False
            self._readers = Readers(
                url, busy_ms=self._busy_ms, connect=lambda: pg.connect(url, read_only=True)
            )
            self.db = Database(pg.connect(url, timeout_ms=self._busy_ms), execute_plugins=False)
            self._mirror = pg.Mirror()
            pg.ensure_table(pg.connection_of(self.db))
        else:
            self.in_memory = str(path) == ":memory:"  # a database only this connection sees
            self._readers = Readers(str(self.path), busy_ms=self._busy_ms)
            self.db = Database(self._open_sqlite(), execute_plugins=False)
        self.migrate(migrations)

    def _open_sqlite(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(self.path), check_same_thread=False, timeout=self._busy_ms / 1000
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            if not self.in_memory:
                found = conn.execute("PRAGMA quick_check(5)").fetchall()
                if [r[0] for r in found] != ["ok"]:
                    raise corrupt_error(self.path, "; ".join(str(r[0]) for r in found))
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as e:
            conn.close()
            if storage_fault(e) == "corrupt" and "not a database" not in str(e):
                raise corrupt_error(self.path, str(e)) from e
            raise  # not SQLite at all: the caller says it cannot use the file
        except CorruptDatabaseError:
            conn.close()
            raise
        return conn

    def _raise_fault(self, e: sqlite3.Error) -> NoReturn:
        """Raise the StorageError `e` stands for (chained to it), or `e` itself (call it in
        the `except` that caught `e`)."""
        fault = self._fault(e)
        if fault is e:
            raise e
        raise fault from e

    def _fault(self, e: sqlite3.Error) -> Exception:
        """The StorageError an SQLite error stands for (remembering a damaged file), or `e`."""
        kind = storage_fault(e)
        if kind == "full":
            return full_error(e)
        if kind == "corrupt":
            self.corrupt = self.corrupt or str(e)
            return corrupt_error(self.path, str(e))
        return e

    def set_first_write(self, do: FirstWrite | None) -> FirstWrite | None:
        """What this thread's next write transaction does first, inside it (None: nothing);
        returns what was set before, if it has not run yet."""
        before: FirstWrite | None = getattr(self._first_write, "do", None)
        self._first_write.do = do
        return before

    def migrate(self, more: Migrations) -> None:
        """Apply a set of migrations (the platform's, or a domain's such as the close's), once
        per Store, and know it from now on: a migration of it that this code lacks, found in
        the database, is a newer closebot's."""
        if any(s is more for s in self.schema):
            return
        with self._locks.locked():
            if any(s is more for s in self.schema):
                return
            if self._mirror is not None:  # PostgreSQL: the same migrations, said its way
                pg.apply(pg.connection_of(self.db), self._mirror, more, self.now())
            else:
                more.apply(self.db)
            self.schema.append(more)
            self._schema_seen = None  # what counts as newer has changed

    def close(self) -> None:
        with self._locks.locked():
            self.db.close()
        self._readers.close_all()
        if self._mirror is not None:
            self._mirror.close()

    def now(self, *, after: timedelta | None = None) -> str:
        """The store's clock as ISO-8601 UTC text (which sorts as time does), optionally ahead."""
        moment = self._clock() + (after or timedelta(0))
        return moment.astimezone(UTC).isoformat(timespec="milliseconds")

    def quick(self) -> AbstractContextManager[None]:
        """Within this block, this thread waits at most QUICK_BUSY_MS for a lock: BusyError after.

        The ack path runs in here, so a database held by another process (a migration, a
        backup, a second closebot) costs the user a "busy, try again", not a missed ack.
        """
        return self._locks.quick()

    @contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction, taken with BEGIN IMMEDIATE so claims never deadlock. Inside
        this thread's open transaction, a write joins it: several writes, one commit."""
        if getattr(self._tx, "open", False):
            with self._locks.locked():  # a savepoint: a failed inner write undoes only itself
                self.db.conn.execute("SAVEPOINT joined")
                try:
                    yield self.db
                except BaseException:
                    self.db.conn.execute("ROLLBACK TO joined")
                    self.db.conn.execute("RELEASE joined")
                    raise
                self.db.conn.execute("RELEASE joined")
            return
        with self._locks.locked():
            conn = self.db.conn
            quick = self._locks.is_quick
            if quick:
                conn.execute(f"PRAGMA busy_timeout = {QUICK_BUSY_MS}")
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:
                if "locked" in str(e) or "busy" in str(e):
                    raise BusyError(f"the database is locked by another writer ({e})") from e
                if "readonly" in str(e) or "read-only" in str(e):
                    raise ReadOnlyError(f"the database is read-only ({e})") from e
                self._raise_fault(e)
            except sqlite3.DatabaseError as e:
                self._raise_fault(e)
            finally:
                if quick:
                    conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            first: FirstWrite | None = getattr(self._first_write, "do", None)
            self._tx.open = True
            try:
                if first:  # e.g. a request's first write records it, in the same transaction
                    first(conn)
                yield self.db
            except sqlite3.DatabaseError as e:
                self._roll_back(conn)
                if "readonly" in str(e) or "read-only" in str(e):
                    raise ReadOnlyError(f"the database is read-only ({e})") from e
                self._raise_fault(e)
            except BaseException:
                self._roll_back(conn)
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.DatabaseError as e:  # the disk filled up at the commit
                    self._roll_back(conn)
                    self._raise_fault(e)
                if first:
                    self._first_write.do = None
            finally:
                self._tx.open = False

    @staticmethod
    def _roll_back(conn: sqlite3.Connection) -> None:
        """Undo the open transaction; SQLite may have rolled it back itself already (a full
        disk, an I/O error), and then there is nothing left to undo."""
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.DatabaseError:
                log.warning("rollback failed; SQLite undoes the transaction at the next open")

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Rows of a read, as dicts: inside this thread's transaction it sees what the
        transaction wrote; otherwise it reads on this thread's own connection, without a lock."""
        if self._locks.held or self.in_memory:
            # Inside a transaction (read what it has written), or a database only this
            # connection can see: the writer's connection, under the lock.
            with self._locks.locked():
                try:
                    return _dicts(self.db.conn.execute(sql, params))
                except sqlite3.DatabaseError as e:
                    self._raise_fault(e)
        ACKS.checkpoint()
        try:
            return _dicts(self._readers.connection().execute(sql, params))
        except sqlite3.DatabaseError as e:
            self._raise_fault(e)

    def newer_schema(self) -> str | None:
        """Why this process must stop taking work, or None: a newer closebot migrated the
        database (a migration this code does not know is applied). Cheap enough for every
        request: SQLite's schema cookie is read, the migrations only when it has changed."""
        try:
            if self.in_memory:
                with self._locks.locked():
                    return self._schema_check(self.db.conn)
            return self._schema_check(self._readers.connection())
        except sqlite3.Error:
            return None  # the store's own errors are reported where they happen

    def _schema_check(self, conn: sqlite3.Connection) -> str | None:
        cookie = int(conn.execute("pragma schema_version").fetchone()[0])
        seen = self._schema_seen
        if seen is not None and seen[0] == cookie:
            return seen[1]
        newer = newer_migrations(conn, self.schema)
        reason = (
            "a newer closebot upgraded the database (it applied "
            + ", ".join(newer)
            + ", which this version does not know): this process takes no more work"
            if newer
            else None
        )
        if reason and (seen is None or seen[1] != reason):
            log.warning("%s", reason)
        self._schema_seen = (cookie, reason)
        return reason

    def health(self) -> str:
        """'ok', 'locked', 'read-only: …' or 'outdated: …' (a newer closebot migrated the
        database): whether this process can take work on this database right now."""
        newer = self.newer_schema()
        if newer:
            return f"outdated: {newer}"
        if self.corrupt:
            return "corrupt"
        try:
            with self.quick(), self.write() as db:
                db.execute("pragma user_version = " + str(self._user_version()))
        except BusyError:
            return "locked"
        except ReadOnlyError as e:
            return f"read-only: {e.__cause__}"
        except StorageFullError:
            return "full"  # a write failed; the next check tries again (space may be back)
        except CorruptDatabaseError:
            return "corrupt"
        except sqlite3.Error as e:
            return f"error: {e}"
        return "ok"

    def _user_version(self) -> int:
        return int(self.db.execute("pragma user_version").fetchone()[0])

"""PostgreSQL behind the store's seam, for the hosted deployment (`CLOSEBOT_DB=postgresql://…`):
a connection the store uses as it uses sqlite3's (connection.py), the store's SQL said
PostgreSQL's way (sql.py), and the schema from the same migrations as SQLite's (schema.py).
SQLite stays the default (psycopg is imported only when a PostgreSQL database is opened); a
deployment of several replicas shares one PostgreSQL database."""

from __future__ import annotations

import re
import sqlite3
from typing import TYPE_CHECKING, cast

from sqlite_utils import Database

from bot.store.pg.schema import Mirror, apply, ensure_table

if TYPE_CHECKING:
    from bot.store.pg.connection import PgConnection

__all__ = ["Mirror", "apply", "connect", "connection_of", "display", "ensure_table", "is_url"]


def is_url(location: object) -> bool:
    """Whether a CLOSEBOT_DB value names a PostgreSQL database rather than a file."""
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def display(url: str) -> str:
    """A database URL without its password, for messages and logs."""
    return re.sub(r"(//[^:/@]+):[^@]*@", r"\1:***@", url)


def connect(url: str, *, read_only: bool = False, timeout_ms: int = 10_000) -> sqlite3.Connection:
    """A PostgreSQL connection with sqlite3's interface (typed as one: the store's code is one)."""
    from bot.store.pg.connection import PgConnection

    return cast(
        sqlite3.Connection, PgConnection(url, read_only=read_only, timeout_s=timeout_ms / 1000)
    )


def connection_of(db: Database) -> PgConnection:
    return cast("PgConnection", db.conn)

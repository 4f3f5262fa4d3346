"""The suite on PostgreSQL: a store opened on a file is kept in a schema of the test server's
database instead, one schema per file path (its name is a digest of the path, so the tests'
process and the `closebot` processes they start find the same one). Used by
tests/pg_backend.py in the tests' process and, through sitecustomize.py on PYTHONPATH, in
every process a test starts (CLOSEBOT_TEST_PG_BASE names the database)."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Any

BASE_ENV = "CLOSEBOT_TEST_PG_BASE"


def schema_for(path: Path) -> str:
    return "s_" + hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()[:20]


def url_for(base: str, path: Path) -> str:
    """The database URL whose search path is the path's own schema (made if missing)."""
    import psycopg

    name = schema_for(path)
    # a schema made by another process at the same moment is as good
    with (
        psycopg.connect(base, autocommit=True) as conn,
        contextlib.suppress(psycopg.errors.UniqueViolation),
    ):
        conn.execute(f"create schema if not exists {name}")
    return f"{base}?options=-csearch_path%3D{name}"


def install(base: str, made: dict[Path, str] | None = None) -> Any:
    """Redirect StoreCore to the server; returns the original __init__ (to put back).
    `made`: the paths redirected, and their URLs, are kept there."""
    from bot.store import pg
    from bot.store.core import StoreCore

    original = StoreCore.__init__
    made = {} if made is None else made

    def on_server(self: StoreCore, path: Any, *, url: str | None = None, **kw: Any) -> None:
        if url is None and not pg.is_url(path) and str(path) != ":memory:":
            key = Path(path)
            if key not in made:
                made[key] = url_for(base, key)
            url = made[key]
        original(self, path, url=url, **kw)

    StoreCore.__init__ = on_server  # type: ignore[method-assign]
    return original

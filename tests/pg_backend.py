"""One set of tests, two backends: with CLOSEBOT_TEST_BACKEND=postgresql, every store a test
opens on a file (`Store(tmp_path / "x.db")`, the `store` fixture, a bot built on
CLOSEBOT_DB) is kept instead in a PostgreSQL database on a real server started for the
session (tests/pg_server.py): one schema per file path, so a test that reopens its file
reopens its schema, and no two tests share one. The file path still names the store in
messages and places its audit key file.

Tests about SQLite files themselves (a damaged file, a backup of the file, a full disk, a
file another process holds) are marked `sqlite_only` with the reason, and skipped there.
Processes a test starts (`closebot` as a subprocess) open their CLOSEBOT_DB file: SQLite.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bot.store import pg
from bot.store.core import StoreCore
from tests import pg_server

BACKEND = os.environ.get("CLOSEBOT_TEST_BACKEND", "sqlite")
DATABASE = "closebot_tests"


def on_postgresql() -> bool:
    return BACKEND == "postgresql"


class Schemas:
    """A schema per file path on the session's server, made when first opened."""

    def __init__(self, server: pg_server.PgServer) -> None:
        self.server = server
        self.base = server.create_database(DATABASE)
        self.admin = psycopg.connect(self.base, autocommit=True)
        self.made: list[str] = []

    def url_for(self, path: Path) -> str:
        name = "s_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:20]
        if name not in self.made:
            self.admin.execute(f"create schema if not exists {name}")
            self.made.append(name)
        return f"{self.base}?options=-csearch_path%3D{name}"

    def drop_all(self) -> None:
        """Drop the test's schemas (a store left open holds locks: then they stay)."""
        made, self.made = self.made, []
        for name in made:
            try:
                self.admin.execute("set lock_timeout = 2000")
                self.admin.execute(f"drop schema {name} cascade")
            except psycopg.Error:
                pass


@pytest.fixture(scope="session")
def pg_schemas() -> Iterator[Schemas | None]:
    if not on_postgresql():
        yield None
        return
    server = pg_server.start()
    try:
        schemas = Schemas(server)
        yield schemas
        schemas.admin.close()
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def store_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """'sqlite' or 'postgresql': where this test's stores are kept (see the module's doc)."""
    if not on_postgresql():
        yield "sqlite"
        return
    only = request.node.get_closest_marker("sqlite_only")
    if only is not None:
        pytest.skip(f"SQLite only: {only.args[0] if only.args else 'about the SQLite file'}")
    schemas: Schemas = request.getfixturevalue("pg_schemas")
    original = StoreCore.__init__

    def on_server(self: StoreCore, path: Any, *, url: str | None = None, **kw: Any) -> None:
        if url is None and not pg.is_url(path) and str(path) != ":memory:":
            url = schemas.url_for(Path(path))
        original(self, path, url=url, **kw)

    monkeypatch.setattr(StoreCore, "__init__", on_server)
    yield "postgresql"
    monkeypatch.undo()
    schemas.drop_all()

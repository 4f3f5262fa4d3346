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

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from bot.store.core import StoreCore
from tests import pg_server

sys.path.insert(0, str(Path(__file__).with_name("pg_site")))
import closebot_pg_redirect as redirect

BACKEND = os.environ.get("CLOSEBOT_TEST_BACKEND", "sqlite")
DATABASE = "closebot_tests"


def on_postgresql() -> bool:
    return BACKEND == "postgresql"


SITE = Path(__file__).with_name("pg_site")


class Schemas:
    """The session's database on the server; the schemas a test made are dropped after it."""

    def __init__(self, server: pg_server.PgServer) -> None:
        self.server = server
        self.base = server.create_database(DATABASE)
        self.admin = psycopg.connect(self.base, autocommit=True)

    def drop_all(self) -> None:
        """Drop every test schema (one a store left open still locks is left: its locks go
        with the store, and the next test drops it)."""
        self.admin.execute("set lock_timeout = 2000")
        names = self.admin.execute(
            "select nspname from pg_namespace where nspname like 's\\_%'"
        ).fetchall()
        for (name,) in names:
            with contextlib.suppress(psycopg.Error):
                self.admin.execute(f"drop schema {name} cascade")


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
    # the processes this test starts keep their stores on the server too (pg_site/)
    monkeypatch.setenv(redirect.BASE_ENV, schemas.base)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH")]))
    )
    original = redirect.install(schemas.base)
    try:
        yield "postgresql"
    finally:
        StoreCore.__init__ = original  # type: ignore[method-assign]
        schemas.drop_all()

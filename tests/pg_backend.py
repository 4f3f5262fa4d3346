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
        self.made: dict[Path, str] = {}  # the files whose stores are kept here, and where

    def drop(self, paths: list[Path]) -> None:
        """Drop the schemas of a test's own files (one a store left open still locks is left;
        a module's files, made under another folder, stay for its other tests)."""
        self.admin.execute("set lock_timeout = 2000")
        for name in {redirect.schema_for(p) for p in paths}:
            for p in paths:
                self.made.pop(p, None)
            with contextlib.suppress(psycopg.Error):
                self.admin.execute(f"drop schema {name} cascade")


@pytest.fixture(scope="session", autouse=True)
def pg_schemas() -> Iterator[Schemas | None]:
    """The session's server, and every store opened on a file kept there from now on (before
    any module's fixtures make theirs), in this process and the ones tests start."""
    if not on_postgresql():
        yield None
        return
    server = pg_server.start()
    saved = {k: os.environ.get(k) for k in (redirect.BASE_ENV, "PYTHONPATH")}
    try:
        schemas = Schemas(server)
        os.environ[redirect.BASE_ENV] = schemas.base
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SITE), saved["PYTHONPATH"]]))
        original = redirect.install(schemas.base, schemas.made)
        yield schemas
        StoreCore.__init__ = original  # type: ignore[method-assign]
        schemas.admin.close()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


@pytest.fixture(autouse=True)
def store_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """'sqlite' or 'postgresql': where this test's stores are kept (see the module's doc)."""
    if not on_postgresql():
        yield "sqlite"
        return
    only = request.node.get_closest_marker("sqlite_only")
    if only is not None:
        pytest.skip(f"SQLite only: {only.args[0] if only.args else 'about the SQLite file'}")
    schemas: Schemas = request.getfixturevalue("pg_schemas")
    own = request.getfixturevalue("tmp_path").resolve()
    yield "postgresql"
    schemas.drop([p for p in list(schemas.made) if p.resolve().is_relative_to(own)])

"""Migrations: each domain migrates its own tables (the close's are the close's), and what the
store asks of sqlite-utils is its public API, held here so that an upgrade breaking it fails."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from bot.close.books.migrations import close_migrations
from bot.store import Store
from bot.store.migrations import migration_names, migrations, newer_migrations

CLOSE_TABLES = {"exceptions", "journal_batches", "journal_lines", "imported_files", "doi_rows"}


def test_migration_names_and_a_round_trip_use_sqlite_utils_public_api() -> None:
    steps = Migrations("roundtrip")

    @steps()
    def first(db: Database) -> None:
        db.table("t").create({"id": int}, pk="id")

    @steps()
    def second(db: Database) -> None:
        db.table("t").add_column("name", str)

    assert migration_names(steps) == ["first", "second"]
    conn = sqlite3.connect(":memory:")
    db = Database(conn)
    steps.apply(db, stop_before="second")
    assert [m.name for m in steps.applied(db)] == ["first"]
    assert [m.name for m in steps.pending(db)] == ["second"]
    steps.apply(db)
    assert steps.pending(db) == []
    assert db.table("t").columns_dict == {"id": int, "name": str}
    assert steps.migrations_table == "_sqlite_migrations"
    recorded = conn.execute("select migration_set, name from _sqlite_migrations order by rowid")
    assert recorded.fetchall() == [("roundtrip", "first"), ("roundtrip", "second")]

    @steps()
    def third(db: Database) -> None:  # a newer release's
        db.table("t").add_column("more", str)

    steps.apply(db)
    older = Migrations("roundtrip")  # what an older release knows of the same set
    for fn in (first, second):
        older()(fn)
    assert newer_migrations(conn, [older]) == ["roundtrip:third"]
    assert newer_migrations(conn, [steps]) == []
    assert newer_migrations(conn, []) == []  # a set this code never heard of is not counted


def test_the_close_migrates_its_own_tables(tmp_path: Path) -> None:
    platform_only = Store(tmp_path / "platform.db")
    assert not CLOSE_TABLES & set(platform_only.db.table_names())
    assert platform_only.schema == [migrations]
    platform_only.migrate(close_migrations)
    platform_only.migrate(close_migrations)  # once per Store
    assert set(platform_only.db.table_names()) >= CLOSE_TABLES
    assert platform_only.schema == [migrations, close_migrations]
    platform_only.close()

    both = Store(tmp_path / "both.db", migrations=[close_migrations])
    assert set(both.db.table_names()) >= CLOSE_TABLES
    assert close_migrations.pending(both.db) == []
    assert "mac" in both.db.table("journal_lines").columns_dict
    assert both.newer_schema() is None
    both.close()


@pytest.mark.sqlite_only("an earlier release's SQLite file, built by hand")
def test_an_older_database_keeps_the_close_tables_it_has(tmp_path: Path) -> None:
    """A database whose platform migrations made the close's tables (before issue 26): the
    close's first migration finds them and makes nothing twice."""
    path = tmp_path / "old.db"
    made = Store(path, migrations=[close_migrations])
    made.runs.create(period="2026-10", mode="console", started_by="alice", model="m")
    with made.write() as db:
        db.execute("delete from _sqlite_migrations where name = 'c000_close_tables'")
        db.execute(
            "insert into column_maps (kind, source, layout, mapping, confirmed_at) "
            "values ('jib', 'op', 'l', '{}', 'now')"
        )
    schema = made.query("select name, sql from sqlite_master order by name")
    made.close()
    store = Store(path, migrations=[close_migrations])
    assert close_migrations.pending(store.db) == []
    assert store.query("select name, sql from sqlite_master order by name") == schema
    assert store.query("select kind from column_maps") == [{"kind": "jib"}]
    store.close()

"""CLOSEBOT_DB=postgresql://… (issue 32): the store on a real PostgreSQL server, shared by
replicas — writers queue on the database's own lock, a run's lease has one holder, a replica
killed inside a transaction frees the database at once. The rest of the suite runs on
PostgreSQL too (`make test-pg`, tests/pg_backend.py); these need a URL of their own."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from bot.close.books.migrations import close_migrations
from bot.core.config import Settings
from bot.core.errors import BusyError
from bot.store import Store
from bot.store.migrations import migration_names, migrations
from tests import pg_server
from tests.conftest import Clock

KEY = "a shared audit key for every replica, 64 hex is best"


@pytest.fixture(scope="module")
def server() -> Iterator[pg_server.PgServer]:
    if pg_server.pg_bin() is None:
        pytest.fail("PostgreSQL is not installed: apt-get install postgresql (.ci/run does)")
    s = pg_server.start()
    yield s
    s.stop()


@pytest.fixture
def url(
    server: pg_server.PgServer, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> str:
    monkeypatch.setenv("CLOSEBOT_AUDIT_KEY", KEY)
    name = "t_" + request.node.name.lower()[:50].replace("-", "_")
    return server.create_database(name)


def test_closebot_db_names_a_postgresql_database_not_a_file() -> None:
    settings = Settings.from_env(
        {"CLOSEBOT_DB": "postgresql://closebot:s3cret@db.internal:5432/books"}
    )
    assert settings.db_url == "postgresql://closebot:s3cret@db.internal:5432/books"
    assert settings.database == "postgresql://closebot:***@db.internal:5432/books"
    assert "s3cret" not in repr(settings)


def test_a_database_url_holds_the_store_with_the_same_migrations(url: str) -> None:
    store = Store(url, migrations=[close_migrations])
    try:
        applied = store.query("select migration_set, name from _sqlite_migrations order by rowid")
        expected = [("closebot", n) for n in migration_names(migrations)] + [
            ("closebot-close", n) for n in migration_names(close_migrations)
        ]
        assert [(r["migration_set"], r["name"]) for r in applied] == expected
        run = store.runs.create(period="2026-10", mode="slack", started_by="U1", model="m")
        assert store.health() == "ok" and store.newer_schema() is None
    finally:
        store.close()
    again = Store(url, migrations=[close_migrations])  # a second replica, or a restart
    try:
        assert again.runs.get(run.id).started_by == "U1"
        assert len(again.query("select * from _sqlite_migrations")) == len(expected)
        with again.write() as db:  # a newer closebot's migration, applied by another replica
            db.execute(
                "insert into _sqlite_migrations (migration_set, name, applied_at) "
                "values ('closebot', 'm999_from_the_future', '')"
            )
        assert "m999_from_the_future" in (again.newer_schema() or "")
        assert again.health().startswith("outdated")
    finally:
        again.close()


def test_replicas_racing_for_a_runs_lease_have_exactly_one_holder(url: str) -> None:
    replicas = [Store(url), Store(url)]
    try:
        runs = [
            replicas[0].runs.create(
                period=f"2026-{m:02d}", mode="slack", started_by="U1", model="m"
            )
            for m in range(1, 11)
        ]
        for run in runs:
            barrier = threading.Barrier(2)
            won: list[int] = []

            def take(
                i: int,
                run_id: str = run.id,
                barrier: threading.Barrier = barrier,
                won: list[int] = won,
            ) -> None:
                barrier.wait()
                # owners on other hosts: only the lease's expiry would free it
                if (
                    replicas[i].leases.acquire(
                        run_id, owner=f"host-{i}:1:-:{i}", ttl=timedelta(minutes=5)
                    )
                    is None
                ):
                    won.append(i)

            threads = [threading.Thread(target=take, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=30)
            assert len(won) == 1, won
            assert replicas[1 - won[0]].leases.holder(run.id) == f"host-{won[0]}:1:-:{won[0]}"
    finally:
        for r in replicas:
            r.close()


def test_a_lease_left_by_a_replica_on_another_host_is_taken_over_when_it_expires(url: str) -> None:
    clock = Clock()
    a, b = Store(url, clock=clock), Store(url, clock=clock)
    try:
        run = a.runs.create(period="2026-10", mode="slack", started_by="U1", model="m")
        assert a.leases.acquire(run.id, owner="host-a:41:-:aa", ttl=timedelta(seconds=90)) is None
        # host-a stops renewing (killed mid-turn): until the lease expires, b keeps off
        assert (
            b.leases.acquire(run.id, owner="host-b:52:-:bb", ttl=timedelta(seconds=90))
            == "host-a:41:-:aa"
        )
        clock.advance(seconds=91)
        assert b.leases.acquire(run.id, owner="host-b:52:-:bb", ttl=timedelta(seconds=90)) is None
        assert a.leases.holder(run.id) == "host-b:52:-:bb"
    finally:
        a.close()
        b.close()


HOLDER = """
import sys, time
from bot.store import Store
store = Store(sys.argv[1])
with store.write() as db:
    db.execute("insert into meta (key, value) values ('held_by', 'the killed replica')")
    print("inside", flush=True)
    time.sleep(600)
"""


def test_a_replica_killed_inside_a_write_transaction_frees_the_database_for_the_others(
    url: str,
) -> None:
    store = Store(url)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CLOSEBOT_AUDIT_KEY": KEY},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "inside"
        with pytest.raises(BusyError), store.quick(), store.write() as db:  # it holds the lock
            db.execute("insert into meta (key, value) values ('mine', '1')")
        holder.kill()
        holder.wait(timeout=30)
        deadline = time.monotonic() + 30  # the server notices the dropped connection
        while True:
            try:
                with store.quick(), store.write() as db:
                    db.execute("insert into meta (key, value) values ('mine', '1')")
                break
            except BusyError:
                assert time.monotonic() < deadline, "the killed replica's lock was never freed"
        rows = store.query("select key from meta where key in ('held_by', 'mine') order by key")
        assert [r["key"] for r in rows] == ["mine"]  # its transaction was rolled back
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.communicate(timeout=30)
        store.close()

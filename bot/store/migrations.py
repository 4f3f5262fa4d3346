"""Append-only, named schema migrations: never edit one that has been applied; add the next."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

migrations = Migrations("closebot")  # the platform's: runs, transcript, questions, audit...

# A domain keeps its own tables in its own migration set (the close: "closebot-close",
# bot/close/books/migrations.py) and hands it to the Store, which applies it after these.
# The schema's version is the list of migrations applied to it (sqlite-utils'
# `_sqlite_migrations`): one this code does not know, in a set it knows, means a newer
# closebot migrated the database, and this process must stop taking work (a rolling deploy:
# README, "Upgrading").


def migration_names(migration_set: Migrations) -> list[str]:
    """Every migration of a set, in order, by sqlite-utils' public API: on an empty database
    each one is pending (tests/test_migrations.py holds sqlite-utils to it)."""
    empty = Database(memory=True)
    try:
        return [m.name for m in migration_set.pending(empty)]
    finally:
        empty.close()


def newer_migrations(conn: sqlite3.Connection, sets: Sequence[Migrations]) -> list[str]:
    """The migrations applied to this database, in these sets, that this code does not know:
    a newer closebot's. Sets this code has never heard of are not counted."""
    if not conn.execute(
        "select 1 from sqlite_master where type = 'table' and name = ?",
        (Migrations.migrations_table,),
    ).fetchone():
        return []
    known = {(s.name, name) for s in sets for name in migration_names(s)}
    names = {s.name for s in sets}
    return [
        f"{name}:{migration}"
        for name, migration in conn.execute(
            f"select migration_set, name from {Migrations.migrations_table} order by rowid"
        )
        if name in names and (name, migration) not in known
    ]


@migrations()
def m001_core(db: Database) -> None:
    """Runs, the append-only transcript, tool calls, questions, audit events."""
    db.table("runs").create(
        {
            "id": str,
            "period": str,
            "mode": str,
            "status": str,
            "started_by": str,
            "channel": str,
            "thread_ts": str,
            "model": str,
            "steps": str,
            "error": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
        not_null={"id", "period", "mode", "status", "created_at", "updated_at"},
    )
    db.table("runs").create_index(["channel", "thread_ts"])
    db.table("messages").create(
        {
            "id": int,
            "run_id": str,
            "seq": int,
            "role": str,
            "content": str,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"run_id", "seq", "role", "content", "created_at"},
    )
    db.table("messages").create_index(["run_id", "seq"], unique=True)
    db.table("tool_calls").create(
        {
            "tool_use_id": str,
            "run_id": str,
            "name": str,
            "input": str,
            "result": str,
            "is_error": int,
            "created_at": str,
        },
        pk="tool_use_id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"tool_use_id", "run_id", "name", "input", "result", "is_error"},
    )
    db.table("questions").create(
        {
            "id": str,
            "run_id": str,
            "context": str,
            "questions": str,
            "status": str,
            "answer": str,
            "answered_by": str,
            "source": str,
            "answered_at": str,
            "channel": str,
            "message_ts": str,
            "created_at": str,
            "expires_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"id", "run_id", "questions", "status", "created_at"},
    )
    db.table("questions").create_index(["run_id", "status"])
    db.table("audit_events").create(
        {
            "id": int,
            "run_id": str,
            "at": str,
            "kind": str,
            "actor": str,
            "detail": str,
        },
        pk="id",
        not_null={"at", "kind"},
    )
    db.table("audit_events").create_index(["run_id"])


@migrations()
def m002_close(db: Database) -> None:
    """The close's exceptions and journal batches: created by the close's own migrations
    since issue 26 (bot/close/books/migrations.py). The name stays, applied, in every
    database made before; a fresh one records it and gets the tables from the close."""


@migrations()
def m003_slack(db: Database) -> None:
    """Slack: the status message of a run, delivered event ids, messages held for a busy run."""
    db.table("runs").add_column("status_ts", str)
    db.table("slack_events").create({"event_id": str, "received_at": str}, pk="event_id")
    db.table("inbox").create(
        {
            "id": int,
            "run_id": str,
            "user": str,
            "text": str,
            "created_at": str,
            "delivered_at": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"run_id", "text", "created_at"},
    )
    db.table("inbox").create_index(["run_id", "delivered_at"])


@migrations()
def m004_evidence(db: Database) -> None:
    """The evidence an auditor reads: each answer's rationale and whether it overrode the
    recommendation; audit events chained by hash, so an edited or deleted row shows."""
    db.table("questions").add_column("rationale", str)
    db.table("questions").add_column("overridden", int)
    db.table("audit_events").add_column("prev_hash", str)
    db.table("audit_events").add_column("hash", str)


@migrations()
def m005_reliability(db: Database) -> None:
    """Per-run leases across processes, who stopped a run, a form shown read-only, reminders."""
    db.table("leases").create(
        {"run_id": str, "owner": str, "expires_at": str},
        pk="run_id",
        not_null={"run_id", "owner", "expires_at"},
    )
    db.table("runs").add_column("stop_requested_by", str)
    db.table("questions").add_column("settled_shown_at", str)
    db.table("questions").add_column("remind_at", str)
    # Forms settled before this migration were shown read-only then: the watchdog must not
    # update every old form again on the first start after the upgrade.
    db.execute(
        "update questions set settled_shown_at = coalesce(answered_at, created_at) "
        "where status != 'pending'"
    )


@migrations()
def m006_usage(db: Database) -> None:
    """Token usage of every model call (input, output, cache read and write), per run."""
    db.table("model_calls").create(
        {
            "id": int,
            "run_id": str,
            "at": str,
            "model": str,
            "stop_reason": str,
            "input_tokens": int,
            "output_tokens": int,
            "cache_read_input_tokens": int,
            "cache_creation_input_tokens": int,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
        not_null={"run_id", "at"},
    )
    db.table("model_calls").create_index(["run_id"])


@migrations()
def m007_versioned_chain(db: Database) -> None:
    """Audit events name the algorithm that hashed them (bot/store/chain/), so a chain written by
    an earlier release verifies with its own algorithm; nothing already hashed is touched.
    Events from before the chain existed (release 68fe5b6) have no hash: the highest such id
    is kept, so an event whose hash is removed later reads as broken, not as old."""
    db.table("audit_events").add_column("hash_alg", str)
    db.table("meta").create({"key": str, "value": str}, pk="key", not_null={"value"})
    db.execute(
        "insert into meta (key, value) select 'audit_unchained_through', "
        "cast(coalesce(max(id), 0) as text) from audit_events where hash is null"
    )


@migrations()
def m008_imports(db: Database) -> None:
    """Imported files, confirmed column mappings and the threads of closes waiting for their
    files: the close's tables, created by its own migrations since issue 26 (as m002_close)."""


@migrations()
def m009_keyed_trail(db: Database) -> None:
    """The tamper-evident trail (bot/store/chain/): what each audit event covers and each
    run's seal. Events already written keep their hashes. (Each journal line's own digest,
    `journal_lines.mac`, was added here until issue 26; the close's migrations add it now.)"""
    db.table("audit_events").add_column("covers", str)
    db.table("run_seals").create(
        {"run_id": str, "head_id": int, "head_hash": str, "events": int, "at": str, "mac": str},
        pk="run_id",
        not_null={"run_id", "head_id", "head_hash", "events", "mac"},
    )


@migrations()
def m010_people(db: Database) -> None:
    """Who a Slack user id is (users.info), kept so names survive restarts and the console
    shows them: the id, the names Slack gave, and when they were fetched (refreshed daily)."""
    db.table("people").create(
        {"id": str, "real_name": str, "display_name": str, "handle": str, "fetched_at": str},
        pk="id",
        not_null={"id", "fetched_at"},
    )


@migrations()
def m011_decide_later(db: Database) -> None:
    """Nothing dead-ends (issue 17): a form put off ("not now") is reopened by Decide
    (`reopened_at`); a decision changed before posting is asked again as a new question that
    names the one it changes (`changes`); a late answer is told to the agent once (`told_at`)."""
    db.table("questions").add_column("reopened_at", str)
    db.table("questions").add_column("changes", str)
    db.table("questions").add_column("told_at", str)


@migrations()
def m012_started_team(db: Database) -> None:
    """The team of the person who started a run (`started_team`), from the payload that
    started it: a stream in its thread answers that person (chat.startStream's
    recipient_team_id), who may belong to another team than the app's (Slack Connect, an
    org-wide install)."""
    db.table("runs").add_column("started_team", str)


@migrations()
def m013_run_prompts_and_retries(db: Database) -> None:
    """Real Claude's rules (issue 28). Each run keeps the system prompt and tool definitions it
    started with (`run_prompts`), sent unchanged for its whole life: a thinking block is bound
    to them, and a changed copy is refused with a 400. `stale_thinking_before`: a run from
    before this kept no copy, so its thinking blocks before that message are left out of every
    request (the documented way). A run the API could not answer for a while waits to retry
    (`retry_at`, `retries`). A model call records the part of its cache writes that went to the
    1-hour cache and its thinking tokens (both already inside the totals)."""
    db.table("run_prompts").create(
        {"run_id": str, "system": str, "tools": str, "stale_thinking_before": int, "at": str},
        pk="run_id",
        not_null={"run_id", "system", "tools", "at"},
    )
    db.table("runs").add_column("retry_at", str)
    db.table("runs").add_column("retries", int)
    db.table("model_calls").add_column("cache_write_1h_input_tokens", int)
    db.table("model_calls").add_column("thinking_tokens", int)


@migrations()
def m014_workspaces(db: Database) -> None:
    """Many workspaces, sealed from each other (issue 32): the workspace a run belongs to
    (`team_id`) and its Enterprise Grid org (`enterprise_id`). Everything of a run (its
    questions, decisions, files, open items, audit chain) is reached through it. A run of an
    earlier release keeps both null: the one workspace that release served."""
    db.table("runs").add_column("team_id", str)
    db.table("runs").add_column("enterprise_id", str)
    db.execute("create index if not exists runs_workspace_period on runs (team_id, period)")


@migrations()
def m015_workspace_settings(db: Database) -> None:
    """Settings a workspace's admins change in Slack (issue 32: approvers, the approval limit,
    the finance channel, the data folder), by workspace (`team_id`) and the name of the
    environment variable each one overrides; who changed it and when. Each change is also an
    audit event (who, old → new) in the register's chain."""
    db.table("workspace_settings").create(
        {"team_id": str, "key": str, "value": str, "changed_by": str, "changed_at": str},
        pk=("team_id", "key"),
        not_null={"team_id", "key", "value", "changed_at"},
    )

"""The close's repository of imported files: the files dropped into a thread or imported at a
terminal, the column mappings people confirmed, and the threads of closes waiting for their
files — the SQL of `imported_files`, `column_maps` and `file_threads`, and how the audit chain
covers them. What a file means (its kind, period, mapping) is bot/close/imports/intake.py's."""

from __future__ import annotations

from typing import Any

from bot.close.books.migrations import close_migrations
from bot.core.tenancy import current, workspace_key
from bot.store import Store
from bot.store.chain import cover


def _here() -> str:
    """The workspace the work in hand is for, as the files' `workspace` names it."""
    return workspace_key(current())


class FileRows:
    """Rows of the imported files, mappings and waiting threads, as the tables keep them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.migrate(close_migrations)  # once per Store: the close's tables are there

    # -- files -----------------------------------------------------------

    def get(self, file_id: int) -> dict[str, Any] | None:
        rows = self.store.query(
            "select * from imported_files where id = ? and workspace = ?", (file_id, _here())
        )
        return rows[0] if rows else None

    def by_slack_file(self, slack_file: str) -> dict[str, Any] | None:
        rows = self.store.query(
            "select * from imported_files where slack_file = ? and workspace = ?",
            (slack_file, _here()),
        )
        return rows[0] if rows else None

    def active(self, period: str) -> list[dict[str, Any]]:
        """The period's files in use, one per kind."""
        return self.store.query(
            "select * from imported_files where period = ? and status = 'active' "
            "and workspace = ? order by kind",
            (period, _here()),
        )

    def active_ids(self, period: str) -> tuple[int, ...]:
        rows = self.store.query(
            "select id from imported_files where period = ? and status = 'active' "
            "and workspace = ? order by id",
            (period, _here()),
        )
        return tuple(r["id"] for r in rows)

    def history(self, period: str) -> list[dict[str, Any]]:
        return self.store.query(
            "select * from imported_files where period = ? and workspace = ? order by id",
            (period, _here()),
        )

    def periods(self) -> list[str]:
        rows = self.store.query(
            "select distinct period from imported_files where status = 'active' "
            "and workspace = ? order by period",
            (_here(),),
        )
        return [r["period"] for r in rows]

    def canonical(self, file_id: int) -> dict[str, Any] | None:
        """A file's kind, the CSV read from it and its hash (None: no such file)."""
        rows = self.store.query(
            "select kind, canonical, sha256 from imported_files where id = ? and workspace = ?",
            (file_id, _here()),
        )
        return rows[0] if rows else None

    def save(self, fields: dict[str, Any], *, file_id: int | None = None) -> int:
        """Insert a file's row, or update the row `file_id`; its id."""
        with self.store.write() as db:
            if file_id:
                sets = ", ".join(f"{k} = ?" for k in fields)
                db.execute(
                    f"update imported_files set {sets} where id = ?", (*fields.values(), file_id)
                )
                return int(file_id)
            fields = {"workspace": _here(), **fields}  # the workspace it was dropped in
            columns = ", ".join(fields)
            marks = ", ".join("?" for _ in fields)
            cursor = db.execute(
                f"insert into imported_files ({columns}) values ({marks})", tuple(fields.values())
            )
            return int(cursor.lastrowid or 0)

    def withdraw(self, file_id: int) -> None:
        with self.store.write() as db:
            db.execute("update imported_files set status = 'withdrawn' where id = ?", (file_id,))

    def supersede(self, file_id: int, *, by: int) -> None:
        """The file `file_id` is replaced by the file `by`."""
        with self.store.write() as db:
            db.execute(
                "update imported_files set status = 'superseded', superseded_by = ? where id = ?",
                (by, file_id),
            )

    def set_form(self, file_id: int, form_ts: str) -> None:
        """The message in Slack that asks about the file."""
        with self.store.write() as db:
            db.execute("update imported_files set form_ts = ? where id = ?", (form_ts, file_id))

    # -- confirmed column mappings ---------------------------------------

    def column_map(self, kind: str, source: str, layout: str) -> dict[str, Any] | None:
        rows = self.store.query(
            "select * from column_maps where kind = ? and source = ? and layout = ?",
            (kind, source, layout),
        )
        return rows[0] if rows else None

    def remember_map(self, *, kind: str, source: str, layout: str, mapping: str, by: str) -> int:
        """Keep (or replace) the mapping confirmed for a kind, source and layout; its id."""
        with self.store.write() as db:
            db.execute(
                "insert into column_maps (kind, source, layout, mapping, confirmed_by, confirmed_at) "
                "values (?, ?, ?, ?, ?, ?) on conflict (kind, source, layout) do update set "
                "mapping = excluded.mapping, confirmed_by = excluded.confirmed_by, "
                "confirmed_at = excluded.confirmed_at",
                (kind, source, layout, mapping, by, self.store.now()),
            )
            return int(
                self.store.query(
                    "select id from column_maps where kind = ? and source = ? and layout = ?",
                    (kind, source, layout),
                )[0]["id"]
            )

    def maps_reading(self, file_ids: list[int]) -> list[int]:
        """The confirmed mappings that read these files (same kind, source and layout)."""
        if not file_ids:
            return []
        marks = ",".join("?" for _ in file_ids)
        rows = self.store.query(
            "select distinct c.id from column_maps c join imported_files f on f.kind = c.kind "
            f"and coalesce(f.source, '') = c.source and f.layout = c.layout where f.id in ({marks})",
            tuple(file_ids),
        )
        return [r["id"] for r in rows]

    # -- closes waiting for their files -----------------------------------

    def open_thread(self, *, channel: str, thread_ts: str, period: str, started_by: str) -> None:
        """A thread where /close waits for the period's files."""
        with self.store.write() as db:
            db.execute(
                "insert or ignore into file_threads (channel, thread_ts, period, started_by, "
                "created_at) values (?, ?, ?, ?, ?)",
                (channel, thread_ts, period, started_by, self.store.now()),
            )

    def waiting_thread(self, *, channel: str, thread_ts: str) -> dict[str, Any] | None:
        rows = self.store.query(
            "select * from file_threads where channel = ? and thread_ts = ?", (channel, thread_ts)
        )
        return rows[0] if rows else None

    def claim_thread(self, *, channel: str, thread_ts: str, run_id: str) -> bool:
        """The waiting thread becomes its close's: True once (the run that claims it)."""
        with self.store.write() as db:
            cursor = db.execute(
                "update file_threads set run_id = ? where channel = ? and thread_ts = ? "
                "and run_id is null",
                (run_id, channel, thread_ts),
            )
            return cursor.rowcount == 1

    def set_thread_run(self, *, channel: str, thread_ts: str, run_id: str) -> None:
        with self.store.write() as db:
            db.execute(
                "update file_threads set run_id = ? where channel = ? and thread_ts = ?",
                (run_id, channel, thread_ts),
            )


# The period's data a close reads, and how a layout is read: covered by the audit chain. A file
# row is recorded when it is kept (and superseded), and again by each close that reads it (its
# `input_files` event); a mapping when it is confirmed, and by each close that reads a file it
# mapped. Both are shared: a later drop supersedes a file, a later confirmation a mapping.
cover(
    "imported_files",
    key=("id",),
    fields=tuple(
        f
        for f in [
            "id",
            "period",
            "kind",
            "filename",
            "sha256",
            "size",
            "content",
            "sheet",
            "canonical",
            "rows",
            "summary",
            "mapping",
            "source",
            "layout",
            "origin",
            "dropped_by",
            "dropped_at",
            "slack_file",
            "channel",
            "thread_ts",
            "run_id",
            "status",
            "superseded_by",
            "problems",
            "decided_by",
            "decided_at",
        ]
    ),
    digests=("content", "canonical"),
    what="an imported file: its bytes and the CSV read from them, hash, mapping, who dropped it, status",
    of_run="with r(id) as (select ?) select * from imported_files where run_id = (select id from r) "
    "or 'imported_files:' || id in (select j.key from audit_events a, json_each(a.covers) j "
    "where a.run_id = (select id from r) and a.covers is not null)",
    shared=True,
    newer=True,
)
cover(
    "column_maps",
    key=("id",),
    fields=("id", "kind", "source", "layout", "mapping", "confirmed_by", "confirmed_at"),
    what="a confirmed column mapping: which columns are read as which, who confirmed it and when",
    of_run="select * from column_maps where 'column_maps:' || id in (select j.key from "
    "audit_events a, json_each(a.covers) j where a.run_id = ? and a.covers is not null)",
    shared=True,
    newer=True,
)

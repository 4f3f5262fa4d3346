"""The imported files and remembered column mappings as records: what a person must
tell about a file (Ask), what became of one (Received), reading them (ImportedFiles,
with the threads where a close waits for its files), the audit chain's cover of both
tables, and a run's evidence of the files it read."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.close import data as close_data
from bot.close.books.migrations import close_migrations
from bot.close.data import FileSource, Problem
from bot.close.imports.convert import Converted
from bot.close.imports.recognize import FILE_KINDS
from bot.core.errors import NotFoundError
from bot.store import Store
from bot.store.chain import cover


@dataclass
class Ask:
    """What a person must tell closebot about a file before it can be used."""

    kind: str  # "" when the kind could not be told
    kinds: list[str]  # the kinds it could be, best first
    period: str  # "" when the period could not be told
    headers: list[str]
    mapping: dict[str, str]  # closebot column → the file's header (the proposal)
    needs: list[str]  # "kind", "period", "mapping"


@dataclass
class Received:
    """What became of a file: its id, status, and what to tell the person who dropped it."""

    id: int
    filename: str
    status: str  # active, pending, refused, duplicate
    kind: str = ""
    period: str = ""
    converted: Converted | None = None
    problems: list[Problem] = field(default_factory=list)
    ask: Ask | None = None
    mapped: str = ""  # how the columns were mapped, in words
    superseded: dict[str, Any] | None = None
    sheet: str = ""
    skipped_titles: list[str] = field(default_factory=list)


class ImportedFiles:
    """The imported files and remembered mappings, over the Store's database."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.migrate(close_migrations)  # once per Store: the close's tables are there

    def file(self, file_id: int) -> dict[str, Any]:
        rows = self.store.query("select * from imported_files where id = ?", (file_id,))
        if not rows:
            raise NotFoundError(f"no imported file with id {file_id}")
        return _file(rows[0])

    def by_slack_file(self, slack_file: str) -> dict[str, Any] | None:
        rows = self.store.query("select * from imported_files where slack_file = ?", (slack_file,))
        return _file(rows[0]) if rows else None

    def active(self, period: str) -> list[dict[str, Any]]:
        """The period's files in use, one per kind."""
        rows = self.store.query(
            "select * from imported_files where period = ? and status = 'active' order by kind",
            (period,),
        )
        return [_file(r) for r in rows]

    def active_ids(self, period: str) -> tuple[int, ...]:
        rows = self.store.query(
            "select id from imported_files where period = ? and status = 'active' order by id",
            (period,),
        )
        return tuple(r["id"] for r in rows)

    def history(self, period: str) -> list[dict[str, Any]]:
        rows = self.store.query(
            "select * from imported_files where period = ? order by id", (period,)
        )
        return [_file(r) for r in rows]

    def periods(self) -> list[str]:
        rows = self.store.query(
            "select distinct period from imported_files where status = 'active' order by period"
        )
        return [r["period"] for r in rows]

    def sources(self, period: str) -> dict[str, FileSource]:
        """The period's imported rows per kind, for the loader."""
        return {
            f["kind"]: FileSource(content=f["canonical"].encode(), digest=f["sha256"])
            for f in self.active(period)
        }

    def sources_of(self, evidence: dict[str, Any]) -> dict[str, FileSource]:
        """The imported files a run read, from its evidence (even if replaced since)."""
        out = {}
        for f in evidence.get("imported") or []:
            if f.get("status") != "active":
                continue
            rows = self.store.query(
                "select kind, canonical, sha256 from imported_files where id = ?", (f["id"],)
            )
            if rows and rows[0]["canonical"] is not None:
                out[rows[0]["kind"]] = FileSource(
                    content=rows[0]["canonical"].encode(), digest=rows[0]["sha256"]
                )
        return out

    def remembered(self, kind: str, source: str, layout: str) -> dict[str, Any] | None:
        rows = self.store.query(
            "select * from column_maps where kind = ? and source = ? and layout = ?",
            (kind, source, layout),
        )
        if not rows:
            return None
        return {**rows[0], "mapping": json.loads(rows[0]["mapping"])}

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

    def missing(self, period: str, data_dir: Path | None) -> list[str]:
        """The kinds the period has neither as an imported file nor in its folder."""
        have = {f["kind"] for f in self.active(period)}
        folder = (data_dir or close_data.SAMPLE_DIR) / period
        return [k for k in FILE_KINDS if k not in have and not (folder / k).is_file()]


def _problem(p: Problem) -> dict[str, Any]:
    return {
        "file": p.file,
        "line": p.line,
        "column": p.column,
        "value": p.value,
        "expected": p.expected,
    }


def _file(r: dict[str, Any]) -> dict[str, Any]:
    return {
        **r,
        "mapping": json.loads(r["mapping"]) if r.get("mapping") else {},
        "problems": [Problem(**p) for p in json.loads(r["problems"])] if r.get("problems") else [],
    }


def input_targets(store: Store, period: str) -> list[tuple[str, str, Any]]:
    """The imported files a close of `period` reads and the mappings that read them, as its
    `input_files` event covers them."""
    out: list[tuple[str, str, Any]] = []
    for f in imported_evidence(store, period):
        out.append(("imported_files", "id", f["id"]))
    ids = [t[2] for t in out]
    if ids:
        marks = ",".join("?" for _ in ids)
        for m in store.query(
            "select distinct c.id from column_maps c join imported_files f on f.kind = c.kind "
            f"and coalesce(f.source, '') = c.source and f.layout = c.layout where f.id in ({marks})",
            tuple(ids),
        ):
            out.append(("column_maps", "id", m["id"]))
    return out


def imported_evidence(store: Store, period: str) -> list[dict[str, Any]]:
    """The period's imported files as a run's evidence: which file, its hash, who dropped it
    and when, the mapping used, and what it superseded."""
    out = []
    for f in ImportedFiles(store).history(period):
        if f["status"] not in ("active", "superseded"):
            continue
        out.append(
            {
                "id": f["id"],
                "kind": f["kind"],
                "filename": f["filename"],
                "sha256": f["sha256"],
                "status": f["status"],
                "dropped_by": f["dropped_by"],
                "dropped_at": f["dropped_at"],
                "mapping": {k: v for k, v in f["mapping"].items() if v and v != k},
                "superseded_by": f["superseded_by"],
            }
        )
    return out


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

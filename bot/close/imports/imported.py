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
from bot.close.books.files import FileRows
from bot.close.data import FileSource, Problem
from bot.close.imports.convert import Converted
from bot.close.imports.recognize import FILE_KINDS
from bot.core.errors import NotFoundError
from bot.store import Store


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
        self.rows = FileRows(store)  # the tables' SQL: the close's repository

    def file(self, file_id: int) -> dict[str, Any]:
        row = self.rows.get(file_id)
        if row is None:
            raise NotFoundError(f"no imported file with id {file_id}")
        return _file(row)

    def by_slack_file(self, slack_file: str) -> dict[str, Any] | None:
        row = self.rows.by_slack_file(slack_file)
        return _file(row) if row else None

    def active(self, period: str) -> list[dict[str, Any]]:
        """The period's files in use, one per kind."""
        return [_file(r) for r in self.rows.active(period)]

    def active_ids(self, period: str) -> tuple[int, ...]:
        return self.rows.active_ids(period)

    def history(self, period: str) -> list[dict[str, Any]]:
        return [_file(r) for r in self.rows.history(period)]

    def periods(self) -> list[str]:
        return self.rows.periods()

    def set_form(self, file_id: int, form_ts: str) -> None:
        """The Slack message that asks about the file."""
        self.rows.set_form(file_id, form_ts)

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
            row = self.rows.canonical(f["id"])
            if row and row["canonical"] is not None:
                out[row["kind"]] = FileSource(
                    content=row["canonical"].encode(), digest=row["sha256"]
                )
        return out

    def remembered(self, kind: str, source: str, layout: str) -> dict[str, Any] | None:
        row = self.rows.column_map(kind, source, layout)
        if row is None:
            return None
        return {**row, "mapping": json.loads(row["mapping"])}

    # -- closes waiting for their files -----------------------------------

    def open_thread(self, *, channel: str, thread_ts: str, period: str, started_by: str) -> None:
        """A thread where /close waits for the period's files."""
        self.rows.open_thread(
            channel=channel, thread_ts=thread_ts, period=period, started_by=started_by
        )

    def waiting_thread(self, *, channel: str, thread_ts: str) -> dict[str, Any] | None:
        return self.rows.waiting_thread(channel=channel, thread_ts=thread_ts)

    def claim_thread(self, *, channel: str, thread_ts: str, run_id: str) -> bool:
        """The waiting thread becomes its close's: True once (the run that claims it)."""
        return self.rows.claim_thread(channel=channel, thread_ts=thread_ts, run_id=run_id)

    def set_thread_run(self, *, channel: str, thread_ts: str, run_id: str) -> None:
        self.rows.set_thread_run(channel=channel, thread_ts=thread_ts, run_id=run_id)

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
    for map_id in FileRows(store).maps_reading([t[2] for t in out]):
        out.append(("column_maps", "id", map_id))
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

"""The imported files and remembered column mappings as records: what a person must
tell about a file (Ask), what became of one (Received), reading them (ImportedFiles,
with the threads where a close waits for its files), the audit chain's cover of both
tables, and a run's evidence of the files it read."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.close import data as close_data
from bot.close.books.files import FileRows
from bot.close.data import FileSource, Problem
from bot.close.imports.convert import DOCUMENT, Converted
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
    needs: list[str]  # "kind", "period", "mapping", "wells"
    # "wells": each well name the DOI has several (or no exact) wells for → [(well id, label)]
    wells: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    header_row: int = 0  # the row read as the header
    top: list[tuple[int, str]] = field(default_factory=list)  # the first rows, to choose another


@dataclass
class Received:
    """What became of a file: its id, status, and what to tell the person who dropped it."""

    id: int
    filename: str
    status: str  # active, pending, refused, duplicate, waiting (for the period's DOI)
    kind: str = ""
    period: str = ""
    converted: Converted | None = None
    problems: list[Problem] = field(default_factory=list)
    ask: Ask | None = None
    mapped: str = ""  # how the columns were mapped, in words
    superseded: dict[str, Any] | None = None
    sheet: str = ""
    skipped_titles: list[str] = field(default_factory=list)
    header_row: int = 0  # the row read as the header
    replaced: list[dict[str, Any]] = field(default_factory=list)  # files it replaced whole
    # earlier files it replaced some documents of: (the file, the documents now read from this)
    partly: list[tuple[dict[str, Any], list[str]]] = field(default_factory=list)
    followups: list[Received] = field(default_factory=list)  # files that waited for this DOI


def documents_of(kind: str, canonical: str) -> set[tuple[str, str]]:
    """The documents (operator and invoice, payor and check) a kept file's rows are on."""
    if kind not in DOCUMENT or not canonical:
        return set()
    source, number = DOCUMENT[kind]
    return {(r[source], r[number]) for r in csv.DictReader(io.StringIO(canonical))}


def union(files: list[dict[str, Any]]) -> dict[str, FileSource]:
    """Each kind's rows from all its files (oldest first): a document several files hold is
    read from the newest of them only; one file alone is read as it is, under its own hash."""
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in sorted(files, key=lambda f: f["id"]):
        by_kind[f["kind"]].append(f)
    out: dict[str, FileSource] = {}
    for kind, group in by_kind.items():
        if len(group) == 1:
            out[kind] = FileSource(
                content=group[0]["canonical"].encode(), digest=group[0]["sha256"]
            )
            continue
        header = list(FILE_KINDS[kind].columns)
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(header)
        later: set[tuple[str, str]] = set()
        kept: list[list[list[str]]] = []
        for f in reversed(group):  # newest first: what a newer file holds is not read again
            rows = list(csv.reader(io.StringIO(f["canonical"])))[1:]
            docs = documents_of(kind, f["canonical"])
            if kind in DOCUMENT:
                source, number = (header.index(c) for c in DOCUMENT[kind])
                rows = [r for r in rows if (r[source], r[number]) not in later]
            kept.append(rows)
            later |= docs
        for rows in reversed(kept):
            writer.writerows(rows)
        content = text.getvalue().encode()
        digest = hashlib.sha256(
            ("union:" + ",".join(f["sha256"] for f in group) + ":").encode() + content
        ).hexdigest()
        out[kind] = FileSource(content=content, digest=digest)
    return out


class ImportedFiles:
    """The imported files and remembered mappings, over the Store's database."""

    def __init__(self, store: Store, data_dir: Path | None = None) -> None:
        self.store = store
        self.rows = FileRows(store)  # the tables' SQL: the close's repository
        self.data_dir = data_dir  # the period folders (the DOI a file's wells are tied to)

    def file(self, file_id: int) -> dict[str, Any]:
        row = self.rows.get(file_id)
        if row is None:
            raise NotFoundError(f"no imported file with id {file_id}")
        return _file(row)

    def by_slack_file(self, slack_file: str) -> dict[str, Any] | None:
        row = self.rows.by_slack_file(slack_file)
        return _file(row) if row else None

    def active(self, period: str) -> list[dict[str, Any]]:
        """The period's files in use (several of a kind: one per operator's document)."""
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
        """The period's imported rows per kind (the union of its files), for the loader."""
        return union(self.active(period))

    def sources_of(self, evidence: dict[str, Any]) -> dict[str, FileSource]:
        """The imported files a run read, from its evidence (even if replaced since)."""
        files = []
        for f in evidence.get("imported") or []:
            if f.get("status") != "active":
                continue
            row = self.rows.canonical(f["id"])
            if row and row["canonical"] is not None:
                files.append({**row, "id": f["id"]})
        return union(files)

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

    def unsettled(self, period: str) -> list[str]:
        """The period's files still asked about or waiting for its DOI (by name)."""
        return [
            f["filename"] for f in self.history(period) if f["status"] in ("pending", "waiting")
        ]

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

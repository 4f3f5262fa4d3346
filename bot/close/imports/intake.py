"""A period's files in the database: receive a dropped file, ask what cannot be told, keep
what was confirmed, and hand the period's rows to the loader.

A file is `pending` while its kind, period or column mapping waits for a person, `refused`
when it has problems (all of them are kept and shown; nothing of it is used), `active`
when it is the period's file of its kind, `superseded` once a later file of the same
kind and period replaced it (an audit event says which, by whom). A mapping someone
confirmed is remembered for that source (operator or payor), kind and header layout.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.close import data as close_data
from bot.close.data import CloseData, FileSource, Problem, check_period
from bot.close.imports.convert import MONTH_COLUMN, Converted, convert, normalise
from bot.close.imports.recognize import (
    KINDS,
    SOURCE_COLUMN,
    Proposal,
    clear_kind,
    layout_key,
    period_from_content,
    period_from_name,
    propose,
    recognise,
)
from bot.close.imports.sheet import Sheet, read_sheets
from bot.core.errors import DataError, NotFoundError
from bot.core.names import Names
from bot.store import Store
from bot.store.chain import cover

PREVIEW_ROWS = 3


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


def sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _pick_sheet(sheets: list[Sheet], filename: str) -> tuple[Sheet, list[Proposal]]:
    """The sheet that reads as one of the eleven kinds (the first sheet if none does)."""
    best: tuple[Sheet, list[Proposal]] | None = None
    for sheet in sheets:
        proposals = recognise(sheet, filename)
        if proposals and (
            best is None
            or not best[1]
            or (proposals[0].share, proposals[0].matched) > (best[1][0].share, best[1][0].matched)
        ):
            best = (sheet, proposals)
    return best or (sheets[0], [])


def _source(sheet: Sheet, kind: str, mapping: dict[str, str]) -> str:
    """The operator or payor a file comes from: the name most of its rows carry."""
    header = mapping.get(SOURCE_COLUMN.get(kind, ""), "")
    if not header or header not in sheet.header:
        return ""
    i = sheet.header.index(header)
    names = Counter(cells[i].strip() for _, cells in sheet.rows if i < len(cells) and cells[i])
    return names.most_common(1)[0][0] if names else ""


def preview(sheet: Sheet, kind: str, mapping: dict[str, str]) -> list[dict[str, str]]:
    """The first rows as closebot would read them under `mapping`."""
    out = []
    for _, cells in sheet.rows[:PREVIEW_ROWS]:
        row = {}
        for column in KINDS[kind].columns:
            header = mapping.get(column, "")
            raw = cells[sheet.header.index(header)] if header in sheet.header else ""
            row[column] = normalise(kind, column, raw)
        out.append(row)
    return out


class Imports:
    """The imported files and remembered mappings, over the Store's database."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- reading ---------------------------------------------------------

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
        return [k for k in KINDS if k not in have and not (folder / k).is_file()]

    # -- receiving -------------------------------------------------------

    def receive(
        self,
        *,
        filename: str,
        raw: bytes,
        dropped_by: str,
        origin: str,
        period: str | None = None,
        kind: str | None = None,
        slack_file: str | None = None,
        channel: str | None = None,
        thread_ts: str | None = None,
        run_id: str | None = None,
    ) -> Received:
        """Read a file, tell its kind, period and mapping, and use it — or say what is wrong,
        or what must be asked. `period` is the close's (a file in its thread); `kind` is
        given only by a person."""
        digest = sha256(raw)
        row: dict[str, Any] = {
            "filename": filename,
            "sha256": digest,
            "size": len(raw),
            "content": raw,
            "origin": origin,
            "dropped_by": dropped_by,
            "dropped_at": self.store.now(),
            "slack_file": slack_file,
            "channel": channel,
            "thread_ts": thread_ts,
            "run_id": run_id,
            "period": period or "",
            "kind": kind or "",
            "status": "pending",
        }
        try:
            sheets = read_sheets(filename, raw)
        except DataError as e:
            problem = Problem(filename, 0, "", "", str(e).removeprefix(f"{filename}: "))
            row.update(status="refused", problems=json.dumps([_problem(problem)]))
            file_id = self._save(row, run_id=run_id, actor=dropped_by)
            return Received(file_id, filename, "refused", problems=[problem])
        if kind:
            sheet = next((s for s in sheets if propose(s, kind).share >= 0.5), sheets[0])
            proposals = [propose(sheet, kind)]
        else:
            sheet, proposals = _pick_sheet(sheets, filename)
        chosen = proposals[0] if kind else clear_kind(proposals, filename)
        kind = chosen.kind if chosen else ""
        mapping = chosen.mapping if chosen else (proposals[0].mapping if proposals else {})
        if not period and kind:
            period = period_from_name(filename) or self._period_from_rows(sheet, chosen)
        row.update(
            period=period or "",
            kind=kind,
            sheet=sheet.name,
            layout=layout_key(sheet.header),
            mapping=json.dumps(mapping),
            source=_source(sheet, kind, mapping) if kind else "",
        )
        mapped = "closebot's own column names"
        needs = []
        if not kind:
            needs.append("kind")
        if not period:
            needs.append("period")
        if kind and chosen and not chosen.exact:
            known = self.remembered(kind, row["source"], row["layout"])
            if known and all(h in sheet.header for h in known["mapping"].values() if h):
                mapping = known["mapping"]
                row["mapping"] = json.dumps(mapping)
                mapped = (
                    f"the mapping {Names(self.store).cached(known['confirmed_by'], 'someone')} confirmed for "
                    f"{row['source'] or 'this layout'} on {known['confirmed_at'][:10]}"
                )
            else:
                needs.append("mapping")
        if needs:
            file_id = self._save(row, run_id=run_id, actor=dropped_by)
            ask = Ask(
                kind=kind,
                kinds=[p.kind for p in proposals] or list(KINDS),
                period=period or "",
                headers=[h for h in sheet.header if h],
                mapping=mapping,
                needs=needs,
            )
            return Received(
                file_id,
                filename,
                "pending",
                kind=kind,
                period=period or "",
                ask=ask,
                sheet=sheet.name,
                skipped_titles=sheet.skipped_titles,
            )
        assert period
        return self._use(row, sheet, kind, period, mapping, mapped=mapped, by=dropped_by)

    def _period_from_rows(self, sheet: Sheet, proposal: Proposal | None) -> str | None:
        if proposal is None or proposal.kind not in MONTH_COLUMN:
            return None
        header = proposal.mapping.get(MONTH_COLUMN[proposal.kind], "")
        if header not in sheet.header:
            return None
        i = sheet.header.index(header)
        months = [
            normalise(proposal.kind, MONTH_COLUMN[proposal.kind], cells[i])
            for _, cells in sheet.rows
            if i < len(cells) and cells[i]
        ]
        return period_from_content(proposal.kind, [m for m in months if len(m) == 7])

    def confirm(
        self,
        file_id: int,
        *,
        by: str,
        kind: str | None = None,
        period: str | None = None,
        mapping: dict[str, str] | None = None,
    ) -> Received:
        """A person said what a pending file is (its kind, period, or columns): use it, or
        ask the rest; a confirmed mapping is remembered for the file's source and layout."""
        f = self.file(file_id)
        if f["status"] != "pending":
            raise DataError(f"{f['filename']} was already {f['status']}; nothing was changed")
        if period:
            check_period(period)
        if kind and kind not in KINDS:
            raise DataError(f"{kind!r} is not one of the eleven kinds")
        if kind and kind != f["kind"] and mapping is None:
            # a new kind: start again from its proposal, keeping the period
            with self.store.write() as db:
                db.execute(
                    "update imported_files set status = 'withdrawn' where id = ?", (file_id,)
                )
            return self.receive(
                filename=f["filename"],
                raw=f["content"],
                dropped_by=f["dropped_by"],
                origin=f["origin"],
                period=period or f["period"] or None,
                kind=kind,
                channel=f["channel"],
                thread_ts=f["thread_ts"],
                run_id=f["run_id"],
            )
        kind = kind or f["kind"]
        period = period or f["period"]
        sheet = self._sheet(f)
        chosen = mapping if mapping is not None else f["mapping"]
        if not kind or not period:
            raise DataError("say which of the eleven files this is, and for which period")
        row = {
            "id": file_id,
            "period": period,
            "kind": kind,
            "mapping": json.dumps(chosen),
            "source": _source(sheet, kind, chosen),
            "decided_by": by,
            "decided_at": self.store.now(),
        }
        exact = propose(sheet, kind).exact and chosen == propose(sheet, kind).mapping
        mapped = (
            "closebot's own column names"
            if exact
            else f"the mapping {Names(self.store).cached(by, 'someone')} confirmed"
        )
        received = self._use(
            {**f, **row}, sheet, kind, period, chosen, mapped=mapped, by=by, remember=not exact
        )
        return received

    def _sheet(self, f: dict[str, Any]) -> Sheet:
        sheets = read_sheets(f["filename"], f["content"])
        return next((s for s in sheets if s.name == (f["sheet"] or "")), sheets[0])

    def _use(
        self,
        row: dict[str, Any],
        sheet: Sheet,
        kind: str,
        period: str,
        mapping: dict[str, str],
        *,
        mapped: str,
        by: str,
        remember: bool = False,
    ) -> Received:
        converted = convert(row["filename"], sheet, kind, mapping)
        row = {
            **row,
            "period": period,
            "kind": kind,
            "mapping": json.dumps(mapping),
            "problems": None,
        }
        base = Received(
            row.get("id") or 0,
            row["filename"],
            "refused",
            kind=kind,
            period=period,
            converted=converted,
            problems=converted.problems,
            mapped=mapped,
            sheet=sheet.name,
            skipped_titles=sheet.skipped_titles,
        )
        if not converted.ok:
            row.update(
                status="refused", problems=json.dumps([_problem(p) for p in converted.problems])
            )
            base.id = self._save(row, run_id=row.get("run_id"), actor=by)
            return base
        earlier = [f for f in self.active(period) if f["kind"] == kind]
        if earlier and earlier[0]["sha256"] == row["sha256"]:
            row.update(status="duplicate")
            base.id = self._save(row, run_id=row.get("run_id"), actor=by)
            base.status = "duplicate"
            base.superseded = earlier[0]
            return base
        row.update(
            status="active",
            canonical=converted.csv_text,
            rows=converted.rows,
            summary=converted.summary(),
            problems=None,
        )
        with self.store.write() as db:
            file_id = self._save(row, run_id=row.get("run_id"), actor=by)
            for old in earlier:
                db.execute(
                    "update imported_files set status = 'superseded', superseded_by = ? where id = ?",
                    (file_id, old["id"]),
                )
                self.store.audit(
                    run_id=row.get("run_id"),
                    kind="file_superseded",
                    covers=[("imported_files", "id", old["id"])],
                    actor=by,
                    detail={
                        "period": period,
                        "kind": kind,
                        "old": {
                            "id": old["id"],
                            "filename": old["filename"],
                            "sha256": old["sha256"],
                        },
                        "new": {
                            "id": file_id,
                            "filename": row["filename"],
                            "sha256": row["sha256"],
                        },
                    },
                )
            if remember and row.get("layout"):
                db.execute(
                    "insert into column_maps (kind, source, layout, mapping, confirmed_by, confirmed_at) "
                    "values (?, ?, ?, ?, ?, ?) on conflict (kind, source, layout) do update set "
                    "mapping = excluded.mapping, confirmed_by = excluded.confirmed_by, "
                    "confirmed_at = excluded.confirmed_at",
                    (
                        kind,
                        row.get("source") or "",
                        row["layout"],
                        json.dumps(mapping),
                        by,
                        self.store.now(),
                    ),
                )
                map_id = self.store.query(
                    "select id from column_maps where kind = ? and source = ? and layout = ?",
                    (kind, row.get("source") or "", row["layout"]),
                )[0]["id"]
                self.store.audit(
                    run_id=row.get("run_id"),
                    kind="column_map_confirmed",
                    actor=by,
                    detail={
                        "kind": kind,
                        "source": row.get("source") or "",
                        "mapping": mapping,
                        "map_id": map_id,
                    },
                    covers=[("column_maps", "id", map_id)],
                )
        base.id, base.status = file_id, "active"
        base.superseded = earlier[0] if earlier else None
        return base

    def _save(self, row: dict[str, Any], *, run_id: str | None, actor: str) -> int:
        """Insert the file, or update it (it has an id); an audit event says what became of it."""
        with self.store.write() as db:
            fields = {k: v for k, v in row.items() if k != "id"}
            if row.get("id"):
                sets = ", ".join(f"{k} = ?" for k in fields)
                db.execute(
                    f"update imported_files set {sets} where id = ?", (*fields.values(), row["id"])
                )
                file_id = int(row["id"])
            else:
                columns = ", ".join(fields)
                marks = ", ".join("?" for _ in fields)
                cursor = db.execute(
                    f"insert into imported_files ({columns}) values ({marks})",
                    tuple(fields.values()),
                )
                file_id = int(cursor.lastrowid or 0)
            self.store.audit(
                run_id=run_id,
                kind=f"file_{row['status']}",
                covers=[("imported_files", "id", file_id)],
                actor=actor,
                detail={
                    "id": file_id,
                    "filename": row["filename"],
                    "sha256": row["sha256"],
                    "period": row.get("period") or "",
                    "kind": row.get("kind") or "",
                    "origin": row.get("origin") or "",
                    "mapping": json.loads(row["mapping"]) if row.get("mapping") else {},
                    "problems": len(json.loads(row["problems"])) if row.get("problems") else 0,
                },
            )
        return file_id


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


# -- the period's data, wherever it is ------------------------------------------


def period_sources(store: Store | None, period: str) -> dict[str, FileSource]:
    return Imports(store).sources(period) if store is not None else {}


def periods_with_data(store: Store | None, data_dir: Path | None) -> list[str]:
    """Periods with a folder of data or imported files, oldest first."""
    imported = Imports(store).periods() if store is not None else []
    return sorted({*close_data.available_periods(data_dir), *imported})


def has_data(store: Store | None, period: str, data_dir: Path | None) -> bool:
    """Whether `period` has a folder of data or imported files (its folder is looked up, not
    every period listed: a /close asks this on its ack path)."""
    if close_data.has_folder(period, data_dir):
        return True
    return period in (Imports(store).periods() if store is not None else [])


def require_data(store: Store | None, period: str, data_dir: Path | None) -> None:
    """DataError naming the periods that have data, when `period` has none."""
    check_period(period)
    if not has_data(store, period, data_dir):
        have = periods_with_data(store, data_dir)
        raise DataError(
            f"no close data for {period}; periods with data: {', '.join(have) or 'none'}. "
            "Drop the files into a DM with closebot, or `closebot data import`"
        )


def latest_period(store: Store | None, data_dir: Path | None) -> str:
    periods = periods_with_data(store, data_dir)
    if not periods:
        raise DataError(
            "no close data yet: drop the files into a DM with closebot, or `closebot data import`"
        )
    return periods[-1]


def load_period(store: Store | None, period: str, data_dir: Path | None) -> CloseData:
    """The period's data: its imported files, and the folder's for any kind not imported."""
    return close_data.load(period, data_dir, imported=period_sources(store, period))


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
    for f in Imports(store).history(period):
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

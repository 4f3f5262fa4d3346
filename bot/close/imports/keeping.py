"""Keeping a file whose kind, period and mapping are known: converted and refused with
its problems, asked about the well names it holds that fit several wells, waiting for the
period's DOI, a duplicate, or one of the period's files of its kind — replacing only the
earlier files of the same documents (an operator's invoice, a payor's check), a confirmed
mapping remembered once a file imported with it — each step audited."""

from __future__ import annotations

import json
from typing import Any

from bot.close.data import Problem
from bot.close.imports.convert import WELL_COLUMNS, Converted, convert
from bot.close.imports.imported import Ask, ImportedFiles, Received, _problem, documents_of
from bot.close.imports.mapping import header_row
from bot.close.imports.period_data import period_doi
from bot.close.imports.recognize import FILE_KINDS
from bot.close.imports.sheet import Sheet, read_sheets
from bot.close.imports.wells import WellIndex

WAITING = "the period's DOI master (doi.csv), to tie this file's wells to: import it first"


class FileKeeping(ImportedFiles):
    """Saves a file's record as it is decided, with its audit event."""

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
        names_wells = kind != "doi.csv" and any(c in FILE_KINDS[kind].columns for c in WELL_COLUMNS)
        doi = period_doi(self.store, period, self.data_dir) if names_wells else []
        if names_wells and not doi:
            return self._wait(row, sheet, kind, period, mapping, by=by)
        wells = WellIndex.of(doi) if doi else None
        converted = convert(row["filename"], sheet, kind, mapping, wells)
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
            header_row=sheet.header_row,
        )
        if not converted.ok:
            row.update(
                status="refused", problems=json.dumps([_problem(p) for p in converted.problems])
            )
            base.id = self._save(row, run_id=row.get("run_id"), actor=by)
            return base
        if converted.ambiguous and wells is not None:
            return self._ask_wells(row, base, sheet, converted, wells, by=by)
        earlier = [f for f in self.active(period) if f["kind"] == kind]
        same = next((f for f in earlier if f["sha256"] == row["sha256"]), None)
        if same is not None:
            row.update(status="duplicate")
            base.id = self._save(row, run_id=row.get("run_id"), actor=by)
            base.status = "duplicate"
            base.superseded = same
            return base
        replaced, partly = _replaces(kind, converted, earlier)
        row.update(
            status="active",
            canonical=converted.csv_text,
            rows=converted.rows,
            summary=converted.summary(),
            problems=None,
        )
        with self.store.write():  # the file, what it replaces and the mapping: one commit
            file_id = self._save(row, run_id=row.get("run_id"), actor=by)
            for old, documents in partly:
                self.store.audit.record(
                    run_id=row.get("run_id"),
                    kind="file_documents_replaced",
                    covers=[("imported_files", "id", old["id"])],
                    actor=by,
                    detail={
                        "period": period,
                        "kind": kind,
                        "old": {"id": old["id"], "filename": old["filename"]},
                        "new": {"id": file_id, "filename": row["filename"]},
                        "documents": documents,
                    },
                )
            for old in replaced:
                self.rows.supersede(old["id"], by=file_id)
                self.store.audit.record(
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
                map_id = self.rows.remember_map(
                    kind=kind,
                    source=row.get("source") or "",
                    layout=row["layout"],
                    mapping=json.dumps(mapping),
                    by=by,
                )
                self.store.audit.record(
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
        base.superseded = replaced[0] if replaced else None
        base.replaced = replaced
        base.partly = partly
        if kind == "doi.csv":
            base.followups = self._after_doi(period)
        return base

    def _ask_wells(
        self,
        row: dict[str, Any],
        base: Received,
        sheet: Sheet,
        converted: Converted,
        wells: WellIndex,
        *,
        by: str,
    ) -> Received:
        """Well names the DOI has several wells for (or none exactly): asked, nothing used."""
        row.update(status="pending", problems=None)
        base.id = self._save(row, run_id=row.get("run_id"), actor=by)
        mapping = json.loads(row["mapping"])
        base.status = "pending"
        base.problems = []
        base.ask = Ask(
            kind=base.kind,
            kinds=[base.kind],
            period=base.period,
            headers=[h for h in sheet.header if h],
            mapping=mapping,
            needs=["wells"],
            wells={
                name: [(w, wells.label(w)) for w in candidates]
                for name, candidates in converted.ambiguous.items()
            },
            header_row=sheet.header_row,
            top=sheet.top,
        )
        return base

    def _wait(
        self,
        row: dict[str, Any],
        sheet: Sheet,
        kind: str,
        period: str,
        mapping: dict[str, str],
        *,
        by: str,
    ) -> Received:
        """No DOI yet to tie the file's wells to: kept, waiting; read again once one comes."""
        problem = _problem_waiting(row["filename"])
        row = {
            **row,
            "period": period,
            "kind": kind,
            "mapping": json.dumps(mapping),
            "status": "waiting",
            "problems": json.dumps([_problem(problem)]),
        }
        file_id = self._save(row, run_id=row.get("run_id"), actor=by)
        return Received(
            file_id,
            row["filename"],
            "waiting",
            kind=kind,
            period=period,
            problems=[problem],
            sheet=sheet.name,
            skipped_titles=sheet.skipped_titles,
        )

    def _after_doi(self, period: str) -> list[Received]:
        """The period's files that waited for its DOI, read again now."""
        out = []
        for f in self.history(period):
            if f["status"] != "waiting":
                continue
            sheets = self._sheets(f)
            sheet = next((s for s in sheets if s.name == (f["sheet"] or "")), sheets[0])
            kept = {k: v for k, v in f.items() if k not in ("problems",)}
            out.append(
                self._use(
                    kept,
                    sheet,
                    f["kind"],
                    period,
                    f["mapping"],
                    mapped="the mapping kept with it",
                    by=f["decided_by"] or f["dropped_by"],
                )
            )
        return out

    def _sheets(self, f: dict[str, Any]) -> list[Sheet]:
        return read_sheets(f["filename"], f["content"], header_row(f["mapping"] or {}))

    def _save(self, row: dict[str, Any], *, run_id: str | None, actor: str) -> int:
        """Insert the file, or update it (it has an id); an audit event says what became of it."""
        with self.store.write():  # the row and its audit event: one commit
            fields = {k: v for k, v in row.items() if k != "id"}
            file_id = self.rows.save(fields, file_id=row.get("id") or None)
            self.store.audit.record(
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


def _problem_waiting(filename: str) -> Problem:
    return Problem(filename, 0, "", "", WAITING)


def _replaces(
    kind: str, converted: Converted, earlier: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], list[str]]]]:
    """The earlier files a new one replaces whole (every document they hold is in it, or it
    holds some of them and comes from the same operators or payors: a newer version of that
    file; for a kind without documents, the one file of the kind), and those it replaces some
    documents of (a statement of several operators, one of them sent again: it stays, and its
    other documents are still read). A file of other documents replaces nothing."""
    mine = set(converted.documents)
    sources = {s for s, _ in mine}
    replaced, partly = [], []
    for f in earlier:
        theirs = documents_of(kind, f.get("canonical") or "")
        whole = theirs <= mine or (theirs & mine and {s for s, _ in theirs} <= sources)
        if not mine or not theirs or whole:
            replaced.append(f)  # the same documents, from the same operators or payors
        elif theirs & mine:
            partly.append((f, sorted(f"{s} {n}" for s, n in theirs & mine)))
    return replaced, partly

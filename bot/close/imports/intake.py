"""A period's files in the database: receive a dropped file, ask what cannot be told, keep
what was confirmed, and hand the period's rows to the loader.

A file is `pending` while its kind, period or column mapping waits for a person, `refused`
when it has problems (all of them are kept and shown; nothing of it is used), `active`
when it is the period's file of its kind, `superseded` once a later file of the same
kind and period replaced it (an audit event says which, by whom). A mapping someone
confirmed is remembered for that source (operator or payor), kind and header layout.

Beside it: imported (the records, reading them, their audit cover), keeping (a
decided file kept), period_data (the period's data wherever it is); their names that
callers use are re-exported here.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

from bot.close.data import Problem, check_period
from bot.close.imports.choosing import clear_kind, period_of
from bot.close.imports.convert import normalise
from bot.close.imports.imported import Ask, Received, _problem, imported_evidence, input_targets
from bot.close.imports.keeping import FileKeeping
from bot.close.imports.mapping import (
    HEADER_KEY,
    columns_of,
    fixed_value,
    headers_used,
    wells_said,
    with_wells,
)
from bot.close.imports.mapping import header_row as row_of
from bot.close.imports.period_data import (
    has_data,
    latest_period,
    load_period,
    period_doi,
    period_sources,
    periods_with_data,
    require_data,
)
from bot.close.imports.recognize import (
    FILE_KINDS,
    SOURCE_COLUMN,
    Proposal,
    layout_key,
    optional,
    propose,
    recognise,
)
from bot.close.imports.sheet import Sheet, read_sheets
from bot.close.imports.wells import WellIndex
from bot.core.errors import DataError
from bot.core.names import Names

PREVIEW_ROWS = 3


def sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _pick_sheet(
    sheets: list[Sheet], filename: str, wells: WellIndex | None
) -> tuple[Sheet, list[Proposal]]:
    """The sheet that reads as one of the eleven kinds (the first sheet if none does)."""
    best: tuple[Sheet, list[Proposal]] | None = None
    for sheet in sheets:
        proposals = recognise(sheet, filename, wells)
        if proposals and (
            best is None
            or not best[1]
            or (proposals[0].share, proposals[0].matched) > (best[1][0].share, best[1][0].matched)
        ):
            best = (sheet, proposals)
    return best or (sheets[0], [])


def _source(sheet: Sheet, kind: str, mapping: dict[str, str]) -> str:
    """The operator or payor a file comes from: the name most of its rows carry (or the one
    value the whole file has)."""
    mapped = mapping.get(SOURCE_COLUMN.get(kind, ""), "")
    value = fixed_value(mapped)
    if value is not None:
        return value
    if not mapped or mapped not in sheet.header:
        return ""
    i = sheet.header.index(mapped)
    names = Counter(cells[i].strip() for _, cells in sheet.rows if i < len(cells) and cells[i])
    return names.most_common(1)[0][0] if names else ""


def preview(sheet: Sheet, kind: str, mapping: dict[str, str]) -> list[dict[str, str]]:
    """The first rows as closebot would read them under `mapping`."""
    out = []
    for _, cells in sheet.rows[:PREVIEW_ROWS]:
        row = {}
        for column in FILE_KINDS[kind].columns:
            header = mapping.get(column, "")
            value = fixed_value(header)
            if value is not None:
                raw = value
            else:
                i = sheet.header.index(header) if header in sheet.header else -1
                raw = cells[i] if 0 <= i < len(cells) else ""
            row[column] = normalise(kind, column, raw)
        out.append(row)
    return out


class Imports(FileKeeping):
    """The imported files and remembered mappings, over the Store's database."""

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
        mapping: dict[str, str] | None = None,
    ) -> Received:
        """Read a file, tell its kind, period and mapping, and use it — or say what is wrong,
        or what must be asked. `period` is the close's (a file in its thread); `kind` and
        `mapping` (a --map file's) are given only by a person."""
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
        given = mapping or {}
        try:
            sheets = read_sheets(filename, raw, row_of(given))
        except DataError as e:
            problem = Problem(filename, 0, "", "", str(e).removeprefix(f"{filename}: "))
            row.update(status="refused", problems=json.dumps([_problem(problem)]))
            file_id = self._save(row, run_id=run_id, actor=dropped_by)
            return Received(file_id, filename, "refused", problems=[problem])
        doi = period_doi(self.store, period, self.data_dir)
        wells = WellIndex.of(doi) if doi else None
        if kind:
            sheet = next((s for s in sheets if propose(s, kind).share >= 0.5), sheets[0])
            proposals = [propose(sheet, kind, wells)]
        else:
            sheet, proposals = _pick_sheet(sheets, filename, wells)
        chosen = proposals[0] if kind else clear_kind(proposals, sheet, filename, period)
        kind = chosen.kind if chosen else ""
        mapping = chosen.mapping if chosen else (proposals[0].mapping if proposals else {})
        said = bool(columns_of(given) or wells_said(given))
        if given:  # a mapping said beforehand (a --map file): it stands, the proposal fills in
            mapping = {**mapping, **given}
        if not period and kind:
            period = period_of(sheet, chosen, filename)
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
        if said and kind:
            mapped = "the mapping given"
            missing = [
                c for c in FILE_KINDS[kind].columns if not mapping.get(c) and not optional(kind, c)
            ]
            if missing:
                needs.append("mapping")
        elif kind and chosen and not chosen.exact:
            known = self.remembered(kind, row["source"], row["layout"])
            if known and all(h in sheet.header for h in headers_used(known["mapping"])):
                mapping = known["mapping"]
                row["mapping"] = json.dumps(mapping)
                mapped = (
                    f"the mapping confirmed by {Names(self.store).cached(known['confirmed_by'], 'someone')} for "
                    f"{row['source'] or 'this layout'} on {known['confirmed_at'][:10]}"
                )
            else:
                needs.append("mapping")
        if needs:
            file_id = self._save(row, run_id=run_id, actor=dropped_by)
            ask = Ask(
                kind=kind,
                kinds=[p.kind for p in proposals] or list(FILE_KINDS),
                period=period or "",
                headers=[h for h in sheet.header if h],
                mapping=mapping,
                needs=needs,
                header_row=sheet.header_row,
                top=sheet.top,
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
        return self._use(
            row, sheet, kind, period, mapping, mapped=mapped, by=dropped_by, remember=said
        )

    def confirm(
        self,
        file_id: int,
        *,
        by: str,
        kind: str | None = None,
        period: str | None = None,
        mapping: dict[str, str] | None = None,
        wells: dict[str, str] | None = None,
        header_row: int | None = None,
    ) -> Received:
        """A person said what a pending file is (its kind, period, columns, header row, or the
        wells its names are): use it, or ask the rest; a confirmed mapping is remembered for
        the file's source and layout once the file is imported with it."""
        f = self.file(file_id)
        if f["status"] != "pending":
            raise DataError(f"{f['filename']} was already {f['status']}; nothing was changed")
        if period:
            check_period(period)
        if kind and kind not in FILE_KINDS:
            raise DataError(f"{kind!r} is not one of the eleven kinds")
        moved = header_row is not None and header_row != self._sheet(f).header_row
        if mapping is not None and row_of(f["mapping"]) and not row_of(mapping):
            mapping = {**mapping, HEADER_KEY: str(row_of(f["mapping"]))}  # the row chosen before
        if (kind and kind != f["kind"] and mapping is None) or moved:
            # a new kind or header row: start again from its proposal, keeping the period
            self.rows.withdraw(file_id)
            return self.receive(
                filename=f["filename"],
                raw=f["content"],
                dropped_by=f["dropped_by"],
                origin=f["origin"],
                period=period or f["period"] or None,
                kind=kind or (f["kind"] if moved else None) or None,
                channel=f["channel"],
                thread_ts=f["thread_ts"],
                run_id=f["run_id"],
                mapping={HEADER_KEY: str(header_row)} if moved else None,
            )
        kind = kind or f["kind"]
        period = period or f["period"]
        sheet = self._sheet(f)
        chosen = mapping if mapping is not None else f["mapping"]
        if wells:
            chosen = with_wells(chosen, wells)
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
        proposal = propose(sheet, kind)
        exact = proposal.exact and columns_of(chosen) == proposal.mapping
        mapped = (
            "closebot's own column names"
            if exact
            else f"the mapping confirmed by {Names(self.store).cached(by, 'someone')}"
        )
        received = self._use(
            {**f, **row}, sheet, kind, period, chosen, mapped=mapped, by=by, remember=not exact
        )
        return received

    def cancel(self, file_id: int, *, by: str) -> dict[str, Any]:
        """A person said not to use a pending file: it is withdrawn (audited), nothing used."""
        f = self.file(file_id)
        if f["status"] not in ("pending", "waiting"):
            raise DataError(f"{f['filename']} was already {f['status']}; nothing was changed")
        with self.store.write():
            self.rows.withdraw(file_id)
            self.store.audit.record(
                run_id=f["run_id"],
                kind="file_withdrawn",
                covers=[("imported_files", "id", file_id)],
                actor=by,
                detail={"id": file_id, "filename": f["filename"], "sha256": f["sha256"]},
            )
        return f

    def sheet_of(self, file_id: int) -> Sheet:
        """A kept file's table, as it was read (its header row)."""
        return self._sheet(self.file(file_id))

    def is_doi(self, filename: str, raw: bytes) -> bool:
        """Whether a file reads as the DOI master (imported first: the others tie to it)."""
        try:
            sheets = read_sheets(filename, raw)
        except DataError:
            return False
        _, proposals = _pick_sheet(sheets, filename, None)
        return bool(proposals) and proposals[0].kind == "doi.csv"

    def _sheet(self, f: dict[str, Any]) -> Sheet:
        sheets = self._sheets(f)
        return next((s for s in sheets if s.name == (f["sheet"] or "")), sheets[0])


__all__ = [
    "PREVIEW_ROWS",
    "Ask",
    "Imports",
    "Received",
    "has_data",
    "imported_evidence",
    "input_targets",
    "latest_period",
    "load_period",
    "period_sources",
    "periods_with_data",
    "preview",
    "require_data",
    "sha256",
]

"""Keeping a file whose kind, period and mapping are known: converted and refused with
its problems, a duplicate of the period's file, or the period's file of its kind (an
earlier one superseded, a confirmed mapping remembered), each step audited."""

from __future__ import annotations

import json
from typing import Any

from bot.close.imports.convert import convert
from bot.close.imports.imported import ImportedFiles, Received, _problem
from bot.close.imports.sheet import Sheet


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
        with self.store.write():  # the file, what it replaces and the mapping: one commit
            file_id = self._save(row, run_id=row.get("run_id"), actor=by)
            for old in earlier:
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
        base.superseded = earlier[0] if earlier else None
        return base

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

"""The decision log of a run: who decided what, when and how — as rows and as CSV."""

from __future__ import annotations

import csv
import io
from typing import Any

from bot.questions import answer_text
from bot.store import Store

ENTRY_COLUMNS = (
    "entry_no",
    "line_no",
    "entry",
    "account",
    "account_name",
    "debit",
    "credit",
    "well_id",
    "memo",
    "source",
    "ref",
)
DECISION_COLUMNS = (
    "run_id",
    "question_id",
    "number",
    "question",
    "status",
    "answer",
    "answered_by",
    "answered_at",
    "source",
)


def decision_rows(store: Store, run_id: str) -> list[dict[str, Any]]:
    """One row per question asked in the run, in the order asked."""
    store.run(run_id)  # NotFoundError for an unknown id
    rows = []
    for record in store.questions(run_id):
        for number, q in enumerate(record.questions, start=1):
            entry = (record.answer or {}).get(str(number), {})
            rows.append(
                {
                    "run_id": run_id,
                    "question_id": record.id,
                    "number": number,
                    "question": q["question"],
                    "status": record.status,
                    "answer": answer_text(entry) if record.status == "answered" else "",
                    "answered_by": record.answered_by or "",
                    "answered_at": record.answered_at or "",
                    "source": record.source or "",
                }
            )
    return rows


def _safe_cell(value: Any) -> Any:
    """Spreadsheets run cells that start with = + - @ as formulas; quote them out."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def to_csv(rows: list[dict[str, Any]], columns: tuple[str, ...] = DECISION_COLUMNS) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _safe_cell(row.get(k, "")) for k in columns})
    return out.getvalue()

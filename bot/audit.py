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
    "asked_at",
    "header",
    "context",
    "question",
    "options",
    "recommended",
    "reasoning",
    "status",
    "answer",
    "answered_by",
    "answered_at",
    "source",
    "overridden",
    "rationale",
    "os_login",
    "input_files",
)


def _no_why(evidence: dict[str, Any], overridden: bool) -> str:
    """An override taken on a form without a "Why" box (an earlier release's) says so."""
    form = evidence.get("form")
    return f"(none: {form})" if overridden and isinstance(form, str) else ""


def decision_rows(store: Store, run_id: str) -> list[dict[str, Any]]:
    """One row per question asked in the run, in the order asked: what was shown, what was
    chosen, by whom, when, how, whether it overrode the recommendation and why, and the
    SHA-256 of every input file the run read."""
    store.run(run_id)  # NotFoundError for an unknown id
    events = store.audit_events(run_id)
    inputs = next((e.detail for e in reversed(events) if e.kind == "input_files"), {})
    imported = {f["kind"]: f for f in inputs.get("imported") or [] if f["status"] == "active"}
    files = "; ".join(
        f"{name}={digest}{_imported(imported.get(name))}"
        for name, digest in sorted((inputs.get("files") or {}).items())
    )
    answered = {
        e.detail.get("question_id"): e.detail for e in events if e.kind == "question_answered"
    }
    rows = []
    for record in store.questions(run_id):
        evidence = answered.get(record.id, {})
        overrode = {
            n: _overrode(q, (record.answer or {}).get(str(n), {}))
            for n, q in enumerate(record.questions, start=1)
        }
        for number, q in enumerate(record.questions, start=1):
            entry = (record.answer or {}).get(str(number), {})
            options = [o["label"] for o in q.get("options", [])]
            recommended = q.get("recommended")
            rows.append(
                {
                    "run_id": run_id,
                    "question_id": record.id,
                    "number": number,
                    "asked_at": record.created_at,
                    "header": q.get("header") or "",
                    "context": record.context,
                    "question": q["question"],
                    "options": " | ".join(options),
                    "recommended": options[recommended - 1]
                    if recommended and recommended <= len(options)
                    else "",
                    "reasoning": q.get("reasoning") or "",
                    "status": record.status,
                    "answer": answer_text(entry) if record.status == "answered" else "",
                    "answered_by": record.answered_by or "",
                    "answered_at": record.answered_at or "",
                    "source": record.source or "",
                    "overridden": ("yes" if overrode[number] else "no")
                    if record.status == "answered"
                    else "",
                    # the form's one "Why" explains the questions it overrode (or, if none, all)
                    "rationale": (record.rationale or _no_why(evidence, overrode[number]))
                    if overrode[number] or not any(overrode.values())
                    else "",
                    "os_login": evidence.get("os_login") or "",
                    "input_files": files,
                }
            )
    return rows


def _imported(f: dict[str, Any] | None) -> str:
    """Where an imported file came from, beside its hash in the decision log."""
    if not f:
        return ""
    mapped = ", ".join(f"{k}←{v}" for k, v in f["mapping"].items())
    return (
        f" ({f['filename']}, dropped by {f['dropped_by']} at {f['dropped_at']}"
        + (f"; mapped {mapped}" if mapped else "")
        + ")"
    )


def _overrode(q: dict[str, Any], entry: dict[str, Any]) -> bool:
    """Did this one answer depart from the question's recommendation?"""
    recommended = q.get("recommended")
    if recommended is None or not entry or entry.get("skipped"):
        return False
    chosen = entry.get("selected") or []
    if entry.get("other"):
        return True
    if q.get("type") == "multiple_choice":
        return recommended not in chosen
    return chosen != [recommended]


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

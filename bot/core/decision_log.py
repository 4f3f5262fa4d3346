"""The decision log of a run: who decided what, when and how — as rows and as CSV."""

from __future__ import annotations

import calendar
import csv
import io
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypedDict

from bot.core.names import Names, is_slack_id, named_text
from bot.core.questions import answer_text
from bot.store import QuestionRecord, Store

ENTRY_COLUMNS = (
    "batch_id",
    "period",
    "entry_date",
    "status",
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
    "option_books",
    "recommended",
    "reasoning",
    "status",
    "answer",
    "answered_by",
    "answered_by_name",
    "answered_at",
    "source",
    "overridden",
    "rationale",
    "os_login",
    "exception",
    "batch_id",
    "content_hash",
    "self_approved",
    "approval_ids",
    "input_files",
    "audit_seal",
)
REF_RE = re.compile(r"\[ref ([A-Za-z0-9_:.\-]+)\]")
BATCH_RE = re.compile(r"\bJE-\d{4}-\d{2}-[A-Za-z0-9]+-\d+\b")


def period_end(period: str) -> str:
    """The last day of an accounting period: the date a month-end close's entries carry."""
    year, month = (int(x) for x in period.split("-"))
    return f"{period}-{calendar.monthrange(year, month)[1]:02d}"


def journal_rows(
    batch: Mapping[str, Any], lines: Iterable[Mapping[str, Any]]
) -> Iterator[dict[str, Any]]:
    """A batch's lines as the journal CSV has them: batch id, period, entry date (the period's
    last day), the batch's status, entry and line numbers, account, amounts, well, memo, source
    and the document reference. Made as the lines come (a batch may be 300,000 lines)."""
    dated = period_end(batch["period"])
    for line in lines:
        yield {
            **line,
            "batch_id": batch["id"],
            "period": batch["period"],
            "entry_date": dated,
            "status": batch["status"],
        }


def iter_named_lines(
    lines: Iterable[Mapping[str, Any]], names: Names
) -> Iterator[Mapping[str, Any]]:
    """`named_lines` as the lines come (a batch read a page at a time is never held whole)."""
    known = list(names.store.people.of())
    for line in lines:
        if not known:
            yield line
            continue
        yield {
            **line,
            **{
                k: named_text(line[k], known, names.cached)
                for k in ("entry", "memo")
                if isinstance(line.get(k), str)
            },
        }


def named_lines(lines: Sequence[Mapping[str, Any]], names: Names) -> Sequence[Mapping[str, Any]]:
    """Journal lines with the people in their entry descriptions and memos by name, for the
    CSVs and the ledger's import files ('Decision: … (by U0ALICE)' reads '(by Alice Park)');
    the stored lines, and so the batch's content hash, keep the ids."""
    known = list(names.store.people.of())
    if not known:
        return lines
    return [
        {
            **line,
            **{
                k: named_text(line[k], known, names.cached)
                for k in ("entry", "memo")
                if isinstance(line.get(k), str)
            },
        }
        for line in lines
    ]


def _no_why(evidence: dict[str, Any], overridden: bool) -> str:
    """An override taken on a form without a "Why" box (an earlier release's) says so."""
    form = evidence.get("form")
    return f"(none: {form})" if overridden and isinstance(form, str) else ""


class DecisionRow(TypedDict):
    """A row of the decision log (`decision_rows`): its keys are DECISION_COLUMNS."""

    run_id: str
    question_id: str
    number: int  # the question's number on its form
    asked_at: str
    header: str
    context: str
    question: str
    options: str  # the labels, ' | ' between them
    option_books: str  # each option with what it would book, as the question showed it
    recommended: str
    reasoning: str
    status: str
    answer: str
    answered_by: str
    answered_by_name: str
    answered_at: str
    source: str
    overridden: str  # yes, no, or '' when not answered
    rationale: str
    os_login: str
    exception: str  # the refs the question names
    batch_id: str
    content_hash: str
    self_approved: str
    approval_ids: str
    input_files: str
    audit_seal: str


def decision_rows(store: Store, run_id: str) -> list[DecisionRow]:
    """One row per question asked in the run, in the order asked: what was shown, what was
    chosen, by whom, when, how, whether it overrode the recommendation and why, and the
    SHA-256 of every input file the run read."""
    store.runs.get(run_id)  # NotFoundError for an unknown id
    names = Names(store)  # Slack's names as last looked up (users.info, cached)
    events = store.audit.events(run_id)
    inputs = next((e.detail for e in reversed(events) if e.kind == "input_files"), {})
    imported: dict[str, list[dict[str, Any]]] = {}  # kind → its files as dropped (several JIBs)
    for f in inputs.get("imported") or []:
        if f["status"] == "active":
            imported.setdefault(f["kind"], []).append(f)
    files = "; ".join(
        f"{name}={digest}" + "".join(_imported(f, names) for f in imported.get(name, []))
        for name, digest in sorted((inputs.get("files") or {}).items())
    )
    answered = {
        e.detail.get("question_id"): e.detail for e in events if e.kind == "question_answered"
    }
    sealed = store.audit.seal(run_id)
    seal = sealed.short() if sealed else ""
    drafted = {e.detail.get("batch_id"): e.detail for e in events if e.kind == "journal_drafted"}
    posted: dict[str, dict[str, Any]] = {}  # approval question id → the posting it gave
    for e in events:
        if e.kind == "journal_posted":
            for key in ("approval_question_id", "second_approval_question_id"):
                if e.detail.get(key):
                    posted[e.detail[key]] = e.detail
    rows: list[DecisionRow] = []
    for record in store.questions.of_run(run_id):
        evidence = answered.get(record.id, {})
        overrode = {
            n: _overrode(q, (record.answer or {}).get(str(n), {}))
            for n, q in enumerate(record.questions, start=1)
        }
        for number, q in enumerate(record.questions, start=1):
            entry = (record.answer or {}).get(str(number), {})
            options = [o["label"] for o in q.get("options", [])]
            recommended = q.get("recommended")
            refs = REF_RE.findall(q["question"])
            post = posted.get(record.id)
            batches = BATCH_RE.findall(q["question"]) if number == 1 else []
            batch_id = (post or {}).get("batch_id") or (batches[0] if batches else "")
            digest = (post or {}).get("content_hash") or (drafted.get(batch_id) or {}).get(
                "content_hash", ""
            )
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
                    "option_books": " | ".join(
                        f"{o['label']}: {o['description']}"
                        for o in q.get("options", [])
                        if o.get("description")
                    ),
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
                    "rationale": _why(record, entry, overrode, number)
                    or _no_why(evidence, overrode[number]),
                    "os_login": evidence.get("os_login") or "",
                    "answered_by_name": _name(record.answered_by, evidence, names),
                    "exception": " ".join(refs),
                    "batch_id": batch_id,
                    "content_hash": digest,
                    "self_approved": ("yes" if post.get("self_approved") else "no") if post else "",
                    "approval_ids": "; ".join(
                        x
                        for x in (
                            (post or {}).get("approval_question_id"),
                            (post or {}).get("second_approval_question_id"),
                        )
                        if x
                    ),
                    "input_files": files,
                    "audit_seal": seal,
                }
            )
    return rows


def _why(
    record: QuestionRecord, entry: dict[str, Any], overrode: dict[int, bool], number: int
) -> str:
    """This question's own "Why". Answers recorded before reasons were kept per question
    carry one for the form: it is shown against the questions it overrode (or, if none, all)."""
    if any("why" in e for e in (record.answer or {}).values() if isinstance(e, dict)):
        return str(entry.get("why") or "")
    if overrode[number] or not any(overrode.values()):
        return record.rationale or ""
    return ""


def _name(user: str | None, evidence: dict[str, Any], names: Names) -> str:
    """The person's name beside the id: what the answer's evidence recorded, else Slack's name
    for the id as last looked up (a login is its own name); empty for nobody, or for an id
    Slack never named."""
    for key in ("user_name", "real_name", "name"):
        if evidence.get(key):
            return str(evidence[key])
    if not user:
        return ""
    name = names.cached(user)
    return "" if name == user and is_slack_id(user) else name


def _imported(f: dict[str, Any], names: Names) -> str:
    """Where an imported file came from, beside its kind's hash in the decision log: its name,
    its own sha256, who dropped it and when, its mapping."""
    mapped = ", ".join(f"{k}←{v}" for k, v in f["mapping"].items())
    sha = f", sha256 {f['sha256']}" if f.get("sha256") else ""
    return (
        f" ({f['filename']}, dropped by {names.labelled(f['dropped_by'])} at {f['dropped_at']}{sha}"
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


def to_csv(rows: Iterable[Mapping[str, Any]], columns: tuple[str, ...] = DECISION_COLUMNS) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _safe_cell(row.get(k, "")) for k in columns})
    return out.getvalue()

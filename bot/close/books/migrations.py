"""The close's tables, migrated by the close: one append-only set of named migrations
("closebot-close"), which the Store applies after the platform's (`Store(path,
migrations=[close_migrations])`, or `store.migrate(close_migrations)` as Ledger does).
Never edit one that has been applied; add the next."""

from __future__ import annotations

import json
from typing import Any

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


close_migrations = Migrations("closebot-close")


@close_migrations()
def c000_close_tables(db: Database) -> None:
    """The close's first tables, made by the close itself (issue 26): exceptions and their
    resolutions, journal batches with their lines and each line's own digest (`mac`, read by
    the audit chain), imported files, confirmed column mappings and the threads of closes
    waiting for their files. Until issue 26 the platform's m002_close, m008_imports and
    m009_keyed_trail made them: in a database made before, what exists is left as it is
    and only what is missing is made, exactly as those did."""
    if not db.table("exceptions").exists():
        db.table("exceptions").create(
            {
                "id": str,
                "run_id": str,
                "kind": str,
                "well_id": str,
                "details": str,
                "status": str,
                "resolution": str,
                "note": str,
                "question_id": str,
                "decided_by": str,
                "decision_source": str,
                "resolved_at": str,
                "created_at": str,
            },
            pk="id",
            foreign_keys=[("run_id", "runs", "id")],
            not_null={"id", "run_id", "kind", "details", "status", "created_at"},
        )
    if not db.table("journal_batches").exists():
        db.table("journal_batches").create(
            {
                "id": str,
                "run_id": str,
                "period": str,
                "status": str,
                "total_debit": str,
                "total_credit": str,
                "created_at": str,
                "posted_at": str,
                "posted_by": str,
                "approval_question_id": str,
            },
            pk="id",
            foreign_keys=[("run_id", "runs", "id")],
            not_null={"id", "run_id", "period", "status", "total_debit", "total_credit"},
        )
    if not db.table("journal_lines").exists():
        db.table("journal_lines").create(
            {
                "id": int,
                "batch_id": str,
                "entry_no": int,
                "line_no": int,
                "entry": str,
                "account": str,
                "account_name": str,
                "debit": str,
                "credit": str,
                "well_id": str,
                "memo": str,
            },
            pk="id",
            foreign_keys=[("batch_id", "journal_batches", "id")],
            not_null={"batch_id", "entry_no", "line_no", "account", "debit", "credit"},
        )
        db.table("journal_lines").create_index(["batch_id", "entry_no", "line_no"], unique=True)
    if not db.table("imported_files").exists():
        db.table("imported_files").create(
            {
                "id": int,
                "period": str,
                "kind": str,
                "filename": str,
                "sha256": str,
                "size": int,
                "content": bytes,
                "sheet": str,
                "canonical": str,
                "rows": int,
                "summary": str,
                "mapping": str,
                "source": str,
                "layout": str,
                "origin": str,
                "dropped_by": str,
                "dropped_at": str,
                "slack_file": str,
                "channel": str,
                "thread_ts": str,
                "run_id": str,
                "status": str,
                "superseded_by": int,
                "problems": str,
                "form_ts": str,
                "decided_by": str,
                "decided_at": str,
            },
            pk="id",
            not_null={"filename", "sha256", "origin", "status", "dropped_at"},
        )
        db.table("imported_files").create_index(["period", "kind", "status"])
        db.table("imported_files").create_index(["slack_file"], unique=True)
    if not db.table("column_maps").exists():
        db.table("column_maps").create(
            {
                "id": int,
                "kind": str,
                "source": str,
                "layout": str,
                "mapping": str,
                "confirmed_by": str,
                "confirmed_at": str,
            },
            pk="id",
            not_null={"kind", "source", "layout", "mapping", "confirmed_at"},
        )
        db.table("column_maps").create_index(["kind", "source", "layout"], unique=True)
    if not db.table("file_threads").exists():
        db.table("file_threads").create(
            {
                "channel": str,
                "thread_ts": str,
                "period": str,
                "started_by": str,
                "created_at": str,
                "run_id": str,
            },
            pk=("channel", "thread_ts"),
            not_null={"period", "created_at"},
        )
    if "mac" not in db.table("journal_lines").columns_dict:
        db.table("journal_lines").add_column("mac", str)


@close_migrations()
def c001_v2(db: Database) -> None:
    """Line sources and refs, DOI rows closebot adds, one posting per period, open items."""
    db.table("journal_lines").add_column("source", str)
    db.table("journal_lines").add_column("ref", str)
    db.table("doi_rows").create(
        {
            "id": int,
            "well_id": str,
            "row": str,
            "effective_from": str,
            "status": str,
            "run_id": str,
            "batch_id": str,
            "question_id": str,
            "decided_by": str,
            "created_at": str,
            "in_force_at": str,
        },
        pk="id",
        not_null={"well_id", "row", "effective_from", "status", "run_id", "created_at"},
    )
    db.table("period_posts").create(
        {"period": str, "batch_id": str, "posted_at": str, "posted_by": str},
        pk="period",
        not_null={"batch_id", "posted_at"},
    )
    db.table("open_items").create(
        {
            "id": int,
            "run_id": str,
            "period": str,
            "kind": str,
            "text": str,
            "amount": str,
            "owner": str,
            "due": str,
            "status": str,
            "created_at": str,
        },
        pk="id",
        not_null={"run_id", "period", "kind", "text", "status", "created_at"},
    )


@close_migrations()
def c002_content_hash(db: Database) -> None:
    """A batch's content hash: what an approval binds to."""
    db.table("journal_batches").add_column("content_hash", str)


# Exception kinds of release 68fe5b6 whose name changed since, and the step that finds each.
LEGACY_KINDS = {"wi_nri_mismatch": ("wi_nri", "WI/NRI validation")}


@close_migrations()
def c003_carry_earlier_releases(db: Database) -> None:
    """What earlier releases left, in today's shape (issue 15).

    - Periods posted before `period_posts` existed (release 68fe5b6) are claimed by the batch
      that posted them (the first, if ever there were two), so posting refuses them.
    - Exceptions of release 68fe5b6 (no `ref`, `step` or `summary` in their details) get them,
      derived from their id and kind; their original details and decision stay under
      `legacy`. Those of runs still in flight are reopened: a step finds them again in today's
      shape and a person decides them on today's form (nothing of such a run was posted).
    """
    db.execute(
        "insert or ignore into period_posts (period, batch_id, posted_at, posted_by) "
        "select period, id, coalesce(posted_at, created_at, ''), posted_by from journal_batches "
        "where status = 'posted' order by coalesce(posted_at, created_at), rowid"
    )
    legacy = db.execute(
        "select e.id, e.run_id, e.kind, e.details, e.status, e.resolution, e.note, "
        "e.decided_by, e.decision_source, r.status from exceptions e "
        "join runs r on r.id = e.run_id where e.details not like '%\"ref\":%'"
    ).fetchall()
    for exc_id, run_id, kind, raw, status, resolution, note, by, source, run_status in legacy:
        old = json.loads(raw)
        new_kind, step = LEGACY_KINDS.get(kind, (kind, ""))
        subject = old.get("well_name") or old.get("well_id") or exc_id
        details = {
            "ref": exc_id.removeprefix(f"{run_id}:"),
            "step": step,
            "subject": subject,
            "summary": f"{subject}: found by an earlier release ({kind})",
            "question": "",
            "recommended": "",
            "reasoning": old.get("reasoning") or "",
            "facts": {},
            "amount": "0.00",
            "options": [],
            "legacy": {
                "kind": kind,
                "details": old,
                "status": status,
                "resolution": resolution,
                "note": note,
                "decided_by": by,
                "source": source,
            },
        }
        db.execute(
            "update exceptions set kind = ?, details = ?, note = ? where id = ?",
            (new_kind, _dumps(details), _dumps({"note": note}) if note else None, exc_id),
        )
        if run_status not in ("done", "cancelled"):
            db.execute(
                "update exceptions set status = 'open', resolution = null, decided_by = null, "
                "decision_source = null, question_id = null, resolved_at = null where id = ?",
                (exc_id,),
            )


@close_migrations()
def c004_open_items_as_work(db: Database) -> None:
    """An open item knows the decision it came from and the balance that decision left on a
    holding account (what writing it off reverses); owners and due dates are chosen at sign-off."""
    table = db.table("open_items")
    if "exception_id" not in table.columns_dict:
        table.add_column("exception_id", str)
    if "held_balance" not in table.columns_dict:
        table.add_column("held_balance", str)


@close_migrations()
def c005_exceptions_by_run(db: Database) -> None:
    """A run's exceptions found by an index, not a scan of every close's (issue 31): the
    index also answers, alone, whether a run's exceptions changed (bot/close/books/
    exception_index.py reads how many, the last, the last decided and how many are open)."""
    db.execute(
        "create index if not exists exceptions_by_run on exceptions (run_id, status, resolved_at)"
    )


@close_migrations()
def c006_posts_by_workspace(db: Database) -> None:
    """One posting per period per workspace (issue 32): a period's claim, and each file
    dropped for a period, names the workspace it belongs to (`workspace`: "" for the one
    workspace of a single install, as every row made before). The covered fields are
    unchanged (bot/close/books/covers.py)."""
    table = db.table("period_posts")
    if "workspace" not in table.columns_dict:
        table.add_column("workspace", str, not_null_default="")
    table.transform(pk=("workspace", "period"))
    # a period's files dropped in Slack are the workspace's they were dropped in
    files = db.table("imported_files")
    if "workspace" not in files.columns_dict:
        files.add_column("workspace", str, not_null_default="")
    db.execute(
        "create index if not exists imported_files_by_workspace "
        "on imported_files (workspace, period, status)"
    )

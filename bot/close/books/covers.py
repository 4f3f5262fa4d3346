"""The close's tables that make the books or the record, as the audit chain covers them
(bot/store/chain/): each write to them is audited with the digest of the rows it wrote."""

from __future__ import annotations

from bot.store.chain import cover

cover(
    "exceptions",
    key=("id",),
    fields=(
        "id",
        "run_id",
        "kind",
        "well_id",
        "details",
        "status",
        "resolution",
        "note",
        "question_id",
        "decided_by",
        "decision_source",
        "resolved_at",
        "created_at",
    ),
    what="an exception and its resolution: the option, who decided it, how and when",
    of_run="select * from exceptions where run_id = ?",
)
cover(
    "journal_batches",
    key=("id",),
    fields=(
        "id",
        "run_id",
        "period",
        "status",
        "total_debit",
        "total_credit",
        "created_at",
        "posted_at",
        "posted_by",
        "approval_question_id",
        "content_hash",
    ),
    what="a journal batch: its status, totals, content hash, who posted it and when",
    of_run="select * from journal_batches where run_id = ?",
)
cover(
    "period_posts",
    key=("period",),
    fields=("period", "batch_id", "posted_at", "posted_by"),
    what="the claim on a posted period: which batch posted it, who and when",
    of_run="select * from period_posts where batch_id in "
    "(select id from journal_batches where run_id = ?)",
)
cover(
    "doi_rows",
    key=("id",),
    fields=(
        "id",
        "well_id",
        "row",
        "effective_from",
        "status",
        "run_id",
        "batch_id",
        "question_id",
        "decided_by",
        "created_at",
        "in_force_at",
    ),
    what="a DOI row closebot added: the well's WI/NRI, from when, who decided it, in force or not",
    of_run="select * from doi_rows where run_id = ?",
)


cover(
    "open_items",
    key=("id",),
    fields=(
        "id",
        "run_id",
        "period",
        "kind",
        "text",
        "amount",
        "owner",
        "due",
        "status",
        "created_at",
        "exception_id",
        "held_balance",  # what a write-off of it books next month
    ),
    what="an open item carried forward: what is open, its amount, owner, due date, status "
    "and the balance its decision held",
    of_run="select * from open_items where run_id = ?",
    shared=True,  # the next close settles, writes off or keeps it
    newer=True,
)

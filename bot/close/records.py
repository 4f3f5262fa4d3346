"""The close's records as the ledger reads them back: an exception and its decision, a journal
batch and its lines, a DOI row closebot added, an open item carried forward, and the decisions
so far as a run's view of its period holds them.

They are `TypedDict`s: at run time each is the plain dict the ledger has always returned (no
conversion, no copy), while strict mypy checks every key a reader names against the columns of
`bot/store/migrations.py` (m002_close) and `bot/close/books/migrations.py` (c001-c004). A column SQLite
may leave null is `X | None`; a key a record may lack is `NotRequired`.

No `from __future__ import annotations` here: evaluated, the annotations give each record its
`__required_keys__` and `__optional_keys__` at run time too (tests/test_close_records.py).
"""

from decimal import Decimal
from typing import Any, NotRequired, TypedDict

# What a decision books or holds: account, debit, credit, memo, ref, well (kinds/entries.Line).
BookedLines = list[dict[str, Any]]


class ExceptionDetails(TypedDict):
    """An exception's `details` column (JSON), as `ToolBase._record` writes it from a Finding
    (and c003 for an exception of an earlier release)."""

    ref: str  # the Finding's id, kind:key: quoted as [ref …] in its question
    step: str
    subject: str
    summary: str
    question: str
    recommended: str  # an option code, or '' when none is recommended
    reasoning: str
    facts: dict[str, Any]  # the kind's own numbers (kinds/entries.Facts)
    amount: str  # Decimal as text
    options: list[str]  # the option codes offered
    group: NotRequired[str]  # the ref of the alike exceptions asked as one (groups.py)
    legacy: NotRequired[dict[str, Any]]  # what an earlier release recorded (c003)


class InGroup(TypedDict, total=False):
    """The `group` of an exception's details, when it is asked with alike ones."""

    group: str


class ExceptionRow(TypedDict):
    """An `exceptions` row with its JSON columns read (`Ledger.exception`): what was found and
    how it was decided (the option in `resolution`, who, how, when, and the decision's extra)."""

    id: str  # run_id:ref
    run_id: str
    kind: str
    well_id: str | None
    details: ExceptionDetails
    status: str  # open, resolved
    resolution: str | None  # the option code decided: set once decided (null while undecided)
    note: str | None  # the decision's extra as stored (JSON); read as `extra`
    question_id: str | None
    decided_by: str | None
    decision_source: str | None
    resolved_at: str | None
    created_at: str
    extra: dict[str, Any]  # the note read: what the decision recorded beyond its option


class DecisionView(TypedDict):
    """A decision as a run's view of its period holds it (`Close.decisions`, by ref)."""

    status: str
    option: str  # '' while undecided
    extra: dict[str, Any]
    lines: list[str]  # the document lines the exception is about (jib.csv:N, revenue.csv:N)
    holds: bool  # the option holds, maps or replaces those lines


class BatchRow(TypedDict):
    """A `journal_batches` row."""

    id: str  # JE-<period>-<run>-<n>
    run_id: str
    period: str
    status: str  # building, draft, superseded, posted
    total_debit: str  # Decimal as text
    total_credit: str
    created_at: str | None
    posted_at: str | None
    posted_by: str | None
    approval_question_id: str | None
    content_hash: str | None  # None for a batch of a release before c002


class StoredJournalLine(TypedDict):
    """A `journal_lines` row as SQLite has it (amounts as text)."""

    id: int
    batch_id: str
    entry_no: int
    line_no: int
    entry: str | None
    account: str
    account_name: str | None
    debit: str
    credit: str
    well_id: str | None
    memo: str | None
    source: str | None
    ref: str | None
    mac: str | None


class JournalLine(TypedDict):
    """A journal line of a stored batch as the ledger reads it (`Ledger.lines`, `iter_lines`):
    its amounts in Decimal."""

    id: int
    batch_id: str
    entry_no: int
    line_no: int
    entry: str | None
    account: str
    account_name: str | None
    debit: Decimal
    credit: Decimal
    well_id: str | None
    memo: str | None
    source: str | None
    ref: str | None
    mac: str | None


class AccountTotal(TypedDict):
    """A batch's debits and credits on one account (`Ledger.account_totals`)."""

    account: str
    account_name: str
    debit: Decimal
    credit: Decimal


class DoiRecord(TypedDict):
    """A DOI row closebot added (`Ledger.doi_rows`), its row read: the well's WI/NRI from when."""

    id: int
    well_id: str
    row: dict[str, Any]  # well_id, effective_from, wi, nri, royalty, orri… (data.DoiRow's fields)
    effective_from: str
    status: str
    run_id: str
    batch_id: str | None
    question_id: str | None
    decided_by: str | None
    created_at: str
    in_force_at: str | None


class OpenItemRow(TypedDict):
    """An open item carried forward (`Ledger.open_items`, `carried_into`), its held balance read."""

    id: int
    run_id: str
    period: str
    kind: str
    text: str
    amount: str | None
    owner: str | None
    due: str | None
    status: str
    created_at: str
    exception_id: str | None
    held_balance: BookedLines  # what its decision left on a holding account


class OpenItem(TypedDict):
    """An item a run leaves open (`ToolBase._open_items`): what the sign-off asks an owner and
    a due date for and `Ledger.carry_forward` stores."""

    kind: str  # an exception kind, or undecided, carried, history_gap, journal, step
    text: str
    amount: NotRequired[str | None]
    owner: NotRequired[str | None]
    due: NotRequired[str | None]
    exception_id: NotRequired[str | None]
    held_balance: NotRequired[BookedLines]
    carried_id: NotRequired[int]  # the open item of an earlier month it carries on

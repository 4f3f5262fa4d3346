"""The close's records (bot/close/records.py) and the decision log's rows are TypedDicts, checked
by mypy only: here their keys are held to the tables' columns, so a column added, renamed or
dropped shows in the type too."""

from __future__ import annotations

from typing import get_type_hints

from bot.close.ledger import Ledger
from bot.close.records import (
    AccountTotal,
    BatchRow,
    DoiRecord,
    ExceptionDetails,
    ExceptionRow,
    JournalLine,
    OpenItemRow,
    StoredJournalLine,
)
from bot.core.decision_log import DECISION_COLUMNS, DecisionRow
from bot.store import Store


def _columns(store: Store, table: str) -> set[str]:
    return {row["name"] for row in store.query(f"pragma table_info({table})")}


def test_records_have_their_tables_columns(store: Store) -> None:
    Ledger(store)  # the close's migrations
    assert set(ExceptionRow.__annotations__) == _columns(store, "exceptions") | {"extra"}
    assert set(BatchRow.__annotations__) == _columns(store, "journal_batches")
    assert set(JournalLine.__annotations__) == _columns(store, "journal_lines")
    assert set(StoredJournalLine.__annotations__) == _columns(store, "journal_lines")
    assert set(DoiRecord.__annotations__) == _columns(store, "doi_rows")
    assert set(OpenItemRow.__annotations__) == _columns(store, "open_items")


def test_optional_keys_are_the_ones_a_record_may_lack() -> None:
    assert ExceptionDetails.__optional_keys__ == frozenset({"group", "legacy"})
    for record in (ExceptionRow, BatchRow, JournalLine, DoiRecord, OpenItemRow, AccountTotal):
        assert not record.__optional_keys__, record
        assert get_type_hints(record)  # every annotation resolves


def test_decision_rows_have_the_decision_logs_columns() -> None:
    assert set(DecisionRow.__annotations__) == set(DECISION_COLUMNS)
    assert len(DECISION_COLUMNS) == len(DecisionRow.__annotations__)

"""Starting a close, the same from every front end (the terminal's `closebot run`, Slack's
`/close`, "close October" in a DM, a files thread whose files are all in): one close per
period. A posted period is not closed again (it is reopened only by a reversing batch in the
ledger), and a period whose close is live is not started twice. What a front end says about
it (a link to the thread, the approvers, how to resume) stays the front end's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from bot.close.ledger import Ledger
from bot.close.records import BatchRow
from bot.core.errors import PeriodTakenError
from bot.store import Run, Store


class PeriodPostedError(PeriodTakenError):
    """The period is posted (`batch`, by run `run_id`): a period is closed once."""

    def __init__(self, message: str, *, batch: BatchRow) -> None:
        super().__init__(message, run_id=str(batch["run_id"]))
        self.batch = batch


@dataclass(frozen=True)
class Taken:
    """Why a period may not be closed now: its live close, or its posted batch."""

    period: str
    live: Run | None
    posted: BatchRow | None


def period_taken(store: Store, period: str) -> Taken | None:
    """The period's live close or posted batch; None when a close of it may start (reads only)."""
    live = store.runs.live(period)
    posted = _posted(store, period)
    if live is None and posted is None:
        return None
    return Taken(period, live, posted)


def start_close(
    store: Store,
    period: str,
    *,
    mode: str,
    started_by: str | None,
    model: str | None,
    channel: str | None = None,
    thread_ts: str | None = None,
    one_per_period: bool = True,
) -> Run:
    """A new run of `period`'s close, running. `one_per_period` (every start but a files
    thread's, which its files claimed): PeriodPostedError when the period is posted,
    PeriodTakenError when a close of it is live — the store's claim, one write transaction, so
    of two starts at the same instant one makes a run and the other is told."""
    if one_per_period and (batch := _posted(store, period)) is not None:
        raise PeriodPostedError(
            f"{period} is already posted (batch {batch['id']}); a period is closed once",
            batch=batch,
        )
    return store.runs.create(
        period=period,
        mode=mode,
        started_by=started_by,
        model=model,
        channel=channel,
        thread_ts=thread_ts,
        one_per_period=one_per_period,
    )


def _posted(store: Store, period: str) -> BatchRow | None:
    """The period's posted batch; if its rows were deleted, what the register recorded of it
    (a period posts once, even then: `closebot doctor` names the deletion)."""
    ledger = Ledger(store)
    batch = ledger.posted_batch(period)
    if batch is not None:
        return batch
    registered = ledger.posted_in_register(period)
    if registered is None:
        return None
    return cast(
        BatchRow,
        {
            "id": registered["batch_id"],
            "run_id": registered["run_id"],
            "period": period,
            "status": "posted",
            "posted_by": registered.get("posted_by"),
            "posted_at": registered.get("posted_at"),
            "content_hash": registered.get("content_hash"),
        },
    )

"""A run's exceptions decoded once and kept indexed, per store (issue 31).

Every decision used to read and JSON-decode every exception of the run again (the step's
result, what is still open): a month of 643 exceptions made 744,628 `json.loads`. The rows are
decoded once per run and kept, each write of the Ledger (an exception recorded, decided or
changed) puts the row as written in place, and a cheap stamp of the table (how many rows, the
last one, the last decision, how many are open) says at each read whether anything else
changed them (another process, a transaction rolled back): then the run is read again whole.

Rows handed out are shared: treat them as read-only (build a new dict to change one).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bot.close.records import ExceptionRow
from bot.store import Store

Decode = Callable[[dict[str, Any]], ExceptionRow]
STAMP_SQL = (
    "select count(*) as n, max(rowid) as last, max(resolved_at) as decided, "
    "sum(status = 'open') as open from exceptions where run_id = ?"
)


@dataclass(frozen=True)
class RunExceptions:
    stamp: tuple[Any, ...]
    rows: list[ExceptionRow]
    at: dict[str, int]  # exception id → its place in rows
    by_step: dict[str, list[str]] = field(default_factory=dict)  # step → its ids, in order

    def of_step(self, step: str) -> Iterator[ExceptionRow]:
        for exception_id in self.by_step.get(step, ()):
            yield self.rows[self.at[exception_id]]


_runs: weakref.WeakKeyDictionary[Store, dict[str, RunExceptions]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _stamp(store: Store, run_id: str) -> tuple[Any, ...]:
    return tuple(store.query(STAMP_SQL, (run_id,))[0].values())


def _indexed(stamp: tuple[Any, ...], rows: list[ExceptionRow]) -> RunExceptions:
    by_step: dict[str, list[str]] = {}
    for e in rows:
        by_step.setdefault(str(e["details"].get("step")), []).append(e["id"])
    return RunExceptions(stamp, rows, {e["id"]: n for n, e in enumerate(rows)}, by_step)


def run_exceptions(store: Store, run_id: str, decode: Decode) -> RunExceptions:
    """The run's exceptions as they stand, decoded once while nothing else changes them."""
    stamp = _stamp(store, run_id)
    with _lock:
        kept = _runs.get(store, {}).get(run_id)
    if kept is not None and kept.stamp == stamp:
        return kept
    rows = store.query("select * from exceptions where run_id = ? order by rowid", (run_id,))
    fresh = _indexed(stamp, [decode(r) for r in rows])
    with _lock:
        _runs.setdefault(store, {})[run_id] = fresh
    return fresh


def written(store: Store, run_id: str, exception_id: str, decode: Decode) -> None:
    """After the Ledger wrote one exception (inside its transaction): the kept run takes the
    row as written, under the stamp it makes. A rollback changes the stamp back: read again."""
    with _lock:
        kept = _runs.get(store, {}).get(run_id)
    if kept is None:
        return
    found = store.query("select * from exceptions where id = ?", (exception_id,))
    stamp = _stamp(store, run_id)
    if not found:
        forget(store, run_id)
        return
    row = decode(found[0])
    rows = list(kept.rows)
    if exception_id in kept.at:
        rows[kept.at[exception_id]] = row
        fresh = RunExceptions(stamp, rows, kept.at, kept.by_step)
        if str(row["details"].get("step")) != str(
            kept.rows[kept.at[exception_id]]["details"].get("step")
        ):
            fresh = _indexed(stamp, rows)  # its step changed (an earlier release's, upgraded)
    else:  # a new one: the last row
        rows.append(row)
        step = str(row["details"].get("step"))
        by_step = {**kept.by_step, step: [*kept.by_step.get(step, ()), exception_id]}
        fresh = RunExceptions(stamp, rows, {**kept.at, exception_id: len(rows) - 1}, by_step)
    with _lock:
        _runs.setdefault(store, {})[run_id] = fresh


def forget(store: Store, run_id: str) -> None:
    with _lock:
        _runs.get(store, {}).pop(run_id, None)

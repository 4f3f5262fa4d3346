"""A run's exceptions decoded once and kept indexed, per store (issue 31).

Every decision used to read and JSON-decode every exception of the run again (the step's
result, what is still open): a month of 643 exceptions made 744,628 `json.loads`. The rows are
decoded once per run and kept, each write of the Ledger (an exception recorded, decided or
changed) puts the row as written in place, and a cheap stamp of the table (how many rows, the
last one, the last decision, how many are open) says at each read whether anything else
changed them (another process, a transaction rolled back): then the run is read again whole.

Rows handed out are shared: treat them as read-only (build a new dict to change one).

Each step's entries as its result lists them (each exception on its own, a group of alike
ones once) are kept too, with the open ones in order: what is still open is found without
walking the exceptions already decided (a decision's work does not grow with them).
"""

from __future__ import annotations

import heapq
import threading
import weakref
from bisect import bisect_left, insort
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


LINE_BY_LINE_CODE = "line_by_line"  # recorded on each member (open) when a group is split


def group_of(exc: ExceptionRow) -> str | None:
    """The group an exception is asked in, or None: asked on its own (never grouped, or its
    group was split to be decided line by line)."""
    ref = exc["details"].get("group")
    if not ref or exc.get("extra", {}).get(LINE_BY_LINE_CODE):
        return None
    return str(ref)


@dataclass
class StepEntries:
    """A step's entries, by place in the run's rows: its exceptions on their own (the open
    ones' places, in order) and its groups (each one's members' places, how many are open).
    Shared once kept: a write changes a copy."""

    singles: int = 0
    open_singles: list[int] = field(default_factory=list)
    groups: dict[str, list[int]] = field(default_factory=dict)
    open_members: dict[str, int] = field(default_factory=dict)

    def copy(self) -> StepEntries:
        return StepEntries(
            self.singles, list(self.open_singles), dict(self.groups), dict(self.open_members)
        )

    def count(self) -> int:
        return self.singles + len(self.groups)

    def add(self, at: int, row: ExceptionRow, sign: int = 1) -> None:
        """The row at `at` counted in (sign 1) or out (sign -1)."""
        group = group_of(row)
        # as a step's result reads them: an exception open when its status is, a group while
        # any member is not resolved
        is_open = row["status"] == "open" if group is None else row["status"] != "resolved"
        if group is None:
            self.singles += sign
            if is_open and sign > 0:
                insort(self.open_singles, at)
            elif is_open:
                del self.open_singles[bisect_left(self.open_singles, at)]
            return
        members = list(self.groups.get(group, ()))
        if sign > 0:
            insort(members, at)
        else:
            members.remove(at)
        if members:
            self.groups[group] = members
        else:
            self.groups.pop(group, None)
        self.open_members[group] = self.open_members.get(group, 0) + (sign if is_open else 0)
        if group not in self.groups:
            self.open_members.pop(group, None)

    def first_open(self, limit: int) -> list[tuple[int, str | None]]:
        """The first `limit` open entries in the order found: (the place of the exception, or
        of its group's first member; the group or None)."""
        groups = sorted(
            (members[0], ref)
            for ref, members in self.groups.items()
            if self.open_members.get(ref, 0) > 0
        )
        singles = ((at, None) for at in self.open_singles)
        merged: Iterator[tuple[int, str | None]] = heapq.merge(singles, groups)
        return [entry for entry, _ in zip(merged, range(limit), strict=False)]


@dataclass(frozen=True)
class RunExceptions:
    stamp: tuple[Any, ...]
    rows: list[ExceptionRow]
    at: dict[str, int]  # exception id → its place in rows
    by_step: dict[str, list[str]] = field(default_factory=dict)  # step → its ids, in order
    entries: dict[str, StepEntries] = field(default_factory=dict)  # step → its entries

    def of_step(self, step: str) -> Iterator[ExceptionRow]:
        for exception_id in self.by_step.get(step, ()):
            yield self.rows[self.at[exception_id]]

    def step_entries(self, step: str) -> StepEntries:
        return self.entries.get(step) or StepEntries()


_runs: weakref.WeakKeyDictionary[Store, dict[str, RunExceptions]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _stamp(store: Store, run_id: str) -> tuple[Any, ...]:
    return tuple(store.query(STAMP_SQL, (run_id,))[0].values())


def _step(row: ExceptionRow) -> str:
    return str(row["details"].get("step"))


def _indexed(stamp: tuple[Any, ...], rows: list[ExceptionRow]) -> RunExceptions:
    by_step: dict[str, list[str]] = {}
    entries: dict[str, StepEntries] = {}
    for n, e in enumerate(rows):
        by_step.setdefault(_step(e), []).append(e["id"])
        entries.setdefault(_step(e), StepEntries()).add(n, e)
    return RunExceptions(stamp, rows, {e["id"]: n for n, e in enumerate(rows)}, by_step, entries)


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


def _stamp_after(
    kept: RunExceptions, exception_id: str, row: ExceptionRow, rowid: int
) -> tuple[Any, ...]:
    """The stamp the table has after this one write to the kept run, worked out (not read:
    the read is a scan of the run's rows — issue 31). Anything else that changed the table
    since the kept stamp makes the next read's stamp differ from it, so the run is read again
    (reading the stamp here would have taken that change in without its rows)."""
    n, last, decided, open_ = kept.stamp
    at = kept.at.get(exception_id)
    before = kept.rows[at] if at is not None else None
    if before is None:
        n, last = n + 1, max(last or 0, rowid)
    times = [t for t in (decided, row["resolved_at"]) if t is not None]
    opened = (row["status"] == "open") - (before is not None and before["status"] == "open")
    return (n, last, max(times) if times else None, (open_ or 0) + opened)


def written(store: Store, run_id: str, exception_id: str, decode: Decode) -> None:
    """After the Ledger wrote one exception (inside its transaction): the kept run takes the
    row as written, under the stamp that write makes. A rollback changes the table's stamp
    back: read again."""
    with _lock:
        kept = _runs.get(store, {}).get(run_id)
    if kept is None:
        return
    found = store.query("select rowid as _at, * from exceptions where id = ?", (exception_id,))
    if not found:
        forget(store, run_id)
        return
    rowid = found[0].pop("_at")
    row = decode(found[0])
    stamp = _stamp_after(kept, exception_id, row, rowid)
    rows = list(kept.rows)
    step = _step(row)
    entries = dict(kept.entries)
    if exception_id in kept.at:
        at = kept.at[exception_id]
        before = kept.rows[at]
        rows[at] = row
        if _step(before) != step:  # its step changed (an earlier release's, upgraded)
            fresh = _indexed(stamp, rows)
        else:
            if (group_of(before), before["status"]) != (group_of(row), row["status"]):
                changed = entries[step].copy()
                changed.add(at, before, -1)
                changed.add(at, row)
                entries[step] = changed
            fresh = RunExceptions(stamp, rows, kept.at, kept.by_step, entries)
    else:  # a new one: the last row
        rows.append(row)
        by_step = {**kept.by_step, step: [*kept.by_step.get(step, ()), exception_id]}
        added = entries[step].copy() if step in entries else StepEntries()
        added.add(len(rows) - 1, row)
        entries[step] = added
        fresh = RunExceptions(
            stamp, rows, {**kept.at, exception_id: len(rows) - 1}, by_step, entries
        )
    with _lock:
        _runs.setdefault(store, {})[run_id] = fresh


def forget(store: Store, run_id: str) -> None:
    with _lock:
        _runs.get(store, {}).pop(run_id, None)

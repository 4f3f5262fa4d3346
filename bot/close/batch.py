"""A journal batch as it is built: entries of balanced lines, numbered and closed one by
one (kept, or sent to a sink so a batch of any size takes the memory of one entry),
their totals by account and the source lines behind each line."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bot.close.data import ZERO
from bot.close.doi_master import ACCOUNT_NAMES, money
from bot.store.chain import LINE_FIELDS

ACCOUNTS = ACCOUNT_NAMES


# a line as a batch writer takes it: the store's columns after batch_id, amounts as Decimal
LINE_ROW = LINE_FIELDS[1:]
LineRow = tuple[int, int, str, str, str, Decimal, Decimal, str, str, str, str]


class JournalError(ValueError):
    """Entries could not be built (they would not balance)."""


@dataclass
class Entry:
    """One entry's lines, compact while it is built: a plain line is a tuple (account, debit,
    credit, well, memo, ref); a summarized line a dict that later lines of its group add to.
    `iter_lines()` gives them as the store's line dicts."""

    number: int
    description: str
    source: str
    _rows: list[Any] = field(default_factory=list, repr=False)
    # summarized lines: (account, well, side, group) → the line; and, when the batch keeps
    # it, each line's detail (the source lines behind it), by position
    _groups: dict[tuple[str, str, str, str], dict[str, Any]] = field(
        default_factory=dict, repr=False
    )
    detail: dict[int, list[dict[str, Any]]] | None = field(default=None, repr=False)
    _debit: Decimal = ZERO
    _credit: Decimal = ZERO

    def add(
        self,
        account: str,
        *,
        debit: Decimal = ZERO,
        credit: Decimal = ZERO,
        well_id: str = "",
        memo: str = "",
        ref: str = "",
        group: str = "",
    ) -> None:
        """One line; with `group`, lines of the same account, well and side in this entry
        are summed into one whose memo is `group` and the count of its lines."""
        if debit < 0 or credit < 0:  # a negative amount belongs on the other side
            debit, credit = -credit, -debit
        if debit == ZERO and credit == ZERO:
            return
        self._debit += debit
        self._credit += credit
        index = len(self._rows)
        if group:
            key = (account, well_id, "dr" if debit else "cr", group)
            line = self._groups.get(key)
            if line is not None:
                line["debit"] += debit
                line["credit"] += credit
                line["refs"].append(ref)  # its memo is the group's and the count (`finish`)
                if self.detail is not None:
                    self.detail[line["index"]].append(_detail(debit, credit, memo, ref))
                return
            line = {
                "account": account,
                "debit": debit,
                "credit": credit,
                "well_id": well_id,
                "memo": memo,
                "ref": ref,
                "refs": [ref],
                "index": index,
            }
            self._groups[key] = line
            self._rows.append(line)
        else:
            self._rows.append((account, debit, credit, well_id, memo, ref))
        if self.detail is not None:
            self.detail[index] = [_detail(debit, credit, memo, ref)]

    @property
    def amount(self) -> Decimal:
        """The entry's debits."""
        return self._debit

    def check_balanced(self) -> None:
        if self._debit != self._credit:
            raise JournalError(
                f"entry {self.number} ({self.description}) does not balance: {money(self._debit)} ≠ {money(self._credit)}"
            )

    def finish(self) -> None:
        """Summarized lines become plain lines (their count stays in the memo)."""
        for (_, _, _, group), line in self._groups.items():
            refs = line.pop("refs")
            if len(refs) > 1:
                line["memo"] = f"{group} ({len(refs)} lines)"
            line["ref"] = _refs(refs)
        self._groups.clear()

    def iter_lines(self) -> Iterator[dict[str, Any]]:
        """The lines as the store keeps them, numbered."""
        for n, row in enumerate(self._rows, start=1):
            if isinstance(row, dict):
                account, debit, credit = row["account"], row["debit"], row["credit"]
                well_id, memo, ref = row["well_id"], row["memo"], row["ref"]
            else:
                account, debit, credit, well_id, memo, ref = row
            yield {
                "entry_no": self.number,
                "line_no": n,
                "entry": self.description,
                "account": account,
                "account_name": ACCOUNTS[account],
                "debit": debit,
                "credit": credit,
                "well_id": well_id,
                "memo": memo,
                "source": self.source,
                "ref": ref,
            }

    def iter_rows(self) -> Iterator[LineRow]:
        """The lines as tuples in the store's column order (`LINE_ROW`): what a batch writer
        takes without a dict per line."""
        number, description, source = self.number, self.description, self.source
        for n, row in enumerate(self._rows, start=1):
            if isinstance(row, dict):
                account, debit, credit = row["account"], row["debit"], row["credit"]
                well_id, memo, ref = row["well_id"], row["memo"], row["ref"]
            else:
                account, debit, credit, well_id, memo, ref = row
            yield (number, n, description, account, ACCOUNTS[account], debit, credit,
                   well_id, memo, source, ref)  # fmt: skip

    @property
    def lines(self) -> list[dict[str, Any]]:
        return list(self.iter_lines())

    def account_sums(self) -> Iterator[tuple[str, Decimal, Decimal]]:
        for row in self._rows:
            if isinstance(row, dict):
                yield row["account"], row["debit"], row["credit"]
            else:
                yield row[0], row[1], row[2]


def _refs(refs: list[str]) -> str:
    """'jib.csv:2,6', or for many lines 'jib.csv:2,3,…,40 (17 lines)'; refs that share only
    their file, 'production.csv:W-1:oil:2026-09,W-1:gas:2026-09'; refs with nothing in
    common, each in full."""
    if len(refs) == 1:
        return refs[0]
    file, tails, sep = "", refs, ", "
    for split in (_last_colon, _first_colon):
        parts = [split(r) for r in refs]
        if len({file for file, _ in parts}) == 1 and all(tail is not None for _, tail in parts):
            file, tails, sep = parts[0][0] + ":", [str(tail) for _, tail in parts], ","
            break
    if len(tails) <= 8:
        return file + sep.join(tails)
    return f"{file}{tails[0]}{sep}{tails[1]}{sep}…{sep}{tails[-1]} ({len(tails)} lines)"


def _last_colon(ref: str) -> tuple[str, str | None]:
    file, colon, tail = ref.rpartition(":")
    return (file, tail) if colon else (ref, None)


def _first_colon(ref: str) -> tuple[str, str | None]:
    file, colon, tail = ref.partition(":")
    return (file, tail) if colon else (ref, None)


def _detail(debit: Decimal, credit: Decimal, memo: str, ref: str) -> dict[str, Any]:
    return {"debit": debit, "credit": credit, "memo": memo, "ref": ref}


class Batch:
    """The batch's entries, each closed (balanced, numbered) when the next one starts. With a
    `sink`, a closed entry's lines go to it and are not kept: only the entries' totals and
    the totals by account stay, so a batch of any size is built in the memory of one entry."""

    def __init__(
        self,
        *,
        keep_detail: bool = False,
        sink: Callable[[Iterable[dict[str, Any]]], None] | None = None,
        detail_sink: Callable[[list[dict[str, Any]]], None] | None = None,
        row_sink: Callable[[Iterable[LineRow]], None] | None = None,
    ) -> None:
        self.entries: list[Entry] = []  # closed entries with lines, numbered from 1
        self.keep_detail = keep_detail or detail_sink is not None
        self.sink = sink
        self.row_sink = row_sink
        self.detail_sink = detail_sink
        self.totals: dict[str, list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
        self._open: Entry | None = None

    def entry(self, description: str, source: str) -> Entry:
        self.close_entry()
        e = Entry(len(self.entries) + 1, description, source)
        if self.keep_detail:
            e.detail = {}
        self._open = e
        return e

    def close_entry(self) -> None:
        """The open entry is done: summarized, balanced, numbered, and sent to the sink."""
        e, self._open = self._open, None
        if e is None:
            return
        e.finish()
        e.check_balanced()
        if not e._rows:
            return
        e.number = len(self.entries) + 1
        for account, debit, credit in e.account_sums():
            sums = self.totals[account]
            sums[0] += debit
            sums[1] += credit
        self.entries.append(e)
        if self.detail_sink is not None:
            self.detail_sink(_detail_rows(e))
            e.detail = None
        if self.sink is not None:
            self.sink(e.iter_lines())  # dicts made a chunk at a time as the sink takes them
            e._rows = []
        elif self.row_sink is not None:
            self.row_sink(e.iter_rows())  # the same lines as tuples
            e._rows = []

    @property
    def lines(self) -> list[dict[str, Any]]:
        """Every line (only when the batch keeps them: no sink)."""
        return [line for e in self.entries for line in e.lines]

    def by_account(self) -> list[dict[str, Any]]:
        """Debits and credits per account, in account order."""
        return [
            {"account": a, "account_name": ACCOUNTS.get(a, a), "debit": d, "credit": c}
            for a, (d, c) in sorted(self.totals.items())
        ]

    def detail_rows(self) -> list[dict[str, Any]]:
        """Every source line behind every entry line, keyed to it (entry_no, line_no)."""
        return [row for e in self.entries for row in _detail_rows(e)]


def _detail_rows(e: Entry) -> list[dict[str, Any]]:
    out = []
    for index, line in enumerate(e.iter_lines()):
        for d in (e.detail or {}).get(index, []):
            out.append(
                {
                    "entry_no": line["entry_no"],
                    "line_no": line["line_no"],
                    "account": line["account"],
                    "well_id": line["well_id"],
                    **d,
                }
            )
    return out


def totals_by_account(lines: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Debits and credits per account, in account order."""
    acc: dict[str, list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
    for line in lines:
        acc[line["account"]][0] += line["debit"]
        acc[line["account"]][1] += line["credit"]
    return [
        {"account": a, "account_name": ACCOUNTS.get(a, a), "debit": d, "credit": c}
        for a, (d, c) in sorted(acc.items())
    ]

"""Periods read lately, kept while their files are unchanged (issue 33): a resume, and every
tool call of a turn, reuses the period its run read instead of reading the month again.

Bounded by the rows kept, not by the periods: many small periods at once (a close per
period, interleaved) all stay, while one period of hundreds of thousands of lines is kept
alone. The most recent period is always kept, whatever its size. A key says exactly which
files were read (their paths, sizes and modification times, and the SHA-256 of files
imported from the database), so a changed file is read again; the run then compares the
hashes it reads with its evidence (bot/close/toolbase.py)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.close.data.loading import CloseData

KEEP_ROWS = 50_000  # some 35 MB of rows; the sample period is some 200 rows


class Kept:
    def __init__(self, rows: int = KEEP_ROWS) -> None:
        self.rows = rows
        self._kept: OrderedDict[Hashable, tuple[CloseData, int]] = OrderedDict()
        self._guard = threading.Lock()

    def get(self, key: Hashable) -> CloseData | None:
        with self._guard:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, data: CloseData) -> None:
        size = sum(data.counts.values())
        with self._guard:
            self._kept[key] = (data, size)
            self._kept.move_to_end(key)
            total = sum(n for _, n in self._kept.values())
            while len(self._kept) > 1 and total > self.rows:
                _, (_, dropped) = self._kept.popitem(last=False)
                total -= dropped

    def clear(self) -> None:
        with self._guard:
            self._kept.clear()

    def __len__(self) -> int:
        with self._guard:
            return len(self._kept)

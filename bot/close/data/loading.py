"""One period loaded whole (CloseData): every file read once, checked across rows, every
problem collected before anything is used; the last load kept while its files are
unchanged, and progress told while a big period reads."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.close.data.folders import available_periods, require_period
from bot.close.data.history import History, _HistoryReader
from bot.close.data.kept import Kept
from bot.close.data.problems import DataProblems, Problem
from bot.close.data.reading import FileSource, _read_file
from bot.close.data.rows import (
    AccrualRow,
    AfeRow,
    DoiRow,
    JibLine,
    JoaRow,
    PriceRow,
    ProductionRow,
    RevenueLine,
    TbRow,
)
from bot.close.data.specs import FILES, HISTORY_FILES, _decimal_share, _number
from bot.close.data.values import CATEGORIES, PRODUCTS, SAMPLE_DIR, add_months, check_period
from bot.core import gc_pause as bulk
from bot.core.errors import DataError


@dataclass
class CloseData:
    """One period's documents and reference data, as read (nothing derived yet). The history
    files are not held: `history` has what the checks need from them."""

    period: str
    doi: list[DoiRow]
    jib: list[JibLine]
    revenue: list[RevenueLine]
    production: list[ProductionRow]
    prices: list[PriceRow]
    afe: list[AfeRow]
    joa: list[JoaRow]
    accruals: list[AccrualRow]
    tb_activity: list[TbRow]
    history: History = field(default_factory=History)
    hashes: dict[str, str] = field(default_factory=dict)

    @property
    def service_month(self) -> str:
        """The JIB service month this close books (the month before the period)."""
        return add_months(self.period, -1)

    @property
    def counts(self) -> dict[str, int]:
        """Rows read per file."""
        own = {
            spec.name: len(getattr(self, spec.attr))
            for spec in FILES
            if spec.attr and spec.name not in HISTORY_FILES
        }
        return {**own, **self.history.counts}


def _cross_checks(data: CloseData, problems: list[Problem]) -> None:
    """What must hold across rows for the data to be usable at all."""
    seen: dict[tuple[str, str], int] = {}
    for row in data.doi:
        key = (row.well_id, row.effective_from)
        if key in seen:
            problems.append(
                Problem(
                    "doi.csv",
                    row.line,
                    "effective_from",
                    row.effective_from,
                    f"one row per well and date; line {seen[key]} has the same",
                )
            )
        seen[key] = row.line
    for a in data.accruals:
        named = a.product_or_category.casefold()
        if a.kind == "revenue" and named not in PRODUCTS:
            problems.append(
                Problem(
                    "accruals.csv",
                    a.line,
                    "product_or_category",
                    a.product_or_category,
                    "a product: oil, gas, ngl (or condensate)",
                )
            )
        elif a.kind == "loe" and CATEGORIES.get(named) not in ("LOE", "Overhead", "Workover"):
            problems.append(
                Problem(
                    "accruals.csv",
                    a.line,
                    "product_or_category",
                    a.product_or_category,
                    "an LOE category: LOE, Overhead or Workover",
                )
            )
    for tb in data.tb_activity:
        if tb.debit and tb.credit:
            problems.append(
                Problem(
                    "tb_activity.csv",
                    tb.line,
                    "credit",
                    str(tb.credit),
                    "debit or credit, not both",
                )
            )


KEPT = Kept()  # the periods read lately, while their files are unchanged


def _stamp(folder: Path) -> tuple[Any, ...]:
    """What identifies the files as read: each one's path, size and modification time."""
    out: list[Any] = [str(folder.resolve())]
    for spec in FILES:
        try:
            st = (folder / spec.name).stat()
            out.append((spec.name, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((spec.name, None))
    return tuple(out)


Progress = Callable[[str], None]


class ReadProgress:
    """Tells `say` what has been read so far (file by file, with row counts) while a period
    takes long to read: the first line after `every` seconds, then at most one per `every`
    seconds, and the whole count at the end once anything was said. A quick read says nothing."""

    def __init__(self, say: Progress, period: str, *, every: float = 2.0) -> None:
        self.say, self.period, self.every = say, period, every
        self.started = self.last = time.monotonic()
        self.read: list[str] = []
        self.said = False

    def file(self, name: str, rows: int) -> None:
        self.read.append(f"{name} {rows:,}")
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last, self.said = now, True
            self.say(f"Reading {self.period}: {', '.join(self.read)} rows so far…")

    def done(self) -> None:
        if self.said:
            self.say(f"Read {self.period}: {', '.join(self.read)} rows.")


def load(
    period: str,
    data_dir: Path | None = None,
    imported: Mapping[str, FileSource] | None = None,
    *,
    progress: ReadProgress | None = None,
) -> CloseData:
    """Read and check one period's files whole, each once as a stream; DataProblems lists
    every problem. The history files are reduced to `History` as they are read.

    The periods loaded lately are kept while their files are unchanged (size and mtime;
    the imported files' SHA-256), so the check before a run, the run's own intake and every
    later tool call and resume of the run read the files once between them (KEPT).

    A kind in `imported` (files dropped in Slack or imported at a terminal, from the
    database) is read from there instead of the folder, which may then not exist."""
    if imported:
        check_period(period)
        folder = (data_dir or SAMPLE_DIR) / period
        digests = tuple(sorted((name, source.digest) for name, source in imported.items()))
        key: tuple[Any, ...] = (period, _stamp(folder), digests)
    else:
        folder = require_period(period, data_dir)
        key = (period, _stamp(folder), ())
    data = KEPT.get(key)
    if data is None:
        data = _read(period, folder, imported, progress)
        KEPT.put(key, data)
    return data


def _read(
    period: str,
    folder: Path,
    imported: Mapping[str, FileSource] | None,
    progress: ReadProgress | None,
) -> CloseData:
    """`_load` as bulk work: its rows make no reference cycles and live as long as the close
    (see bot/core/gc_pause.py)."""
    with bulk.paused():
        data = _load(period, folder, imported, progress)
    bulk.long_lived()
    return data


def _load(
    period: str,
    folder: Path,
    imported: Mapping[str, FileSource] | None = None,
    progress: ReadProgress | None = None,
) -> CloseData:
    problems: list[Problem] = []
    read: dict[str, list[Any]] = {}
    hashes: dict[str, str] = {}
    history = History(folder=folder, sources=dict(imported or {}))
    data = CloseData(
        period=period,
        doi=[],
        jib=[],
        revenue=[],
        production=[],
        prices=[],
        afe=[],
        joa=[],
        accruals=[],
        tb_activity=[],
        history=history,
        hashes=hashes,
    )
    feeder: _HistoryReader | None = None
    for spec in FILES:
        sink: Callable[[Sequence[Any], int], None] | None = None
        if spec.name in HISTORY_FILES:
            if feeder is None:
                history.property_map = {
                    r.operator_property_no: r.well_id for r in data.doi if r.operator_property_no
                }
                feeder = _HistoryReader(period, data, history)
            sink = feeder.jib if spec.name == "jib_history.csv" else feeder.revenue
        rows, digest, count = _read_file(
            folder, spec, problems, sink, (imported or {}).get(spec.name)
        )
        if progress is not None:
            progress.file(spec.name, count)
        if spec.name in HISTORY_FILES:
            history.counts[spec.name] = count
        else:
            read[spec.name] = rows
            setattr(data, spec.attr, rows)
        if digest:
            hashes[spec.name] = digest
    history.hashes = hashes
    if feeder is not None:
        feeder.finish()
        problems.extend(feeder.problems)
    _cross_checks(data, problems)
    # the caches shared repeated values while reading; the rows keep the values they shared
    _number.cache_clear()
    _decimal_share.cache_clear()
    if progress is not None:
        progress.done()
    if problems:
        raise DataProblems(folder, problems)
    return data


def check(data_dir: Path, period: str | None = None) -> dict[str, list[Problem]]:
    """Problems per period folder (an empty list: the period is clean)."""
    periods = [period] if period else available_periods(data_dir)
    if not periods:
        raise DataError(f"no period folders (YYYY-MM) in {data_dir}")
    out: dict[str, list[Problem]] = {}
    for p in periods:
        try:
            load(p, data_dir)
            out[p] = []
        except DataProblems as e:
            out[p] = e.problems
    return out

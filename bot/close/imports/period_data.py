"""The period's data, wherever it is: its imported files, and its folder's for any kind
not imported (what the close loads, and which periods have data)."""

from __future__ import annotations

from pathlib import Path

from bot.close import data as close_data
from bot.close.data import CloseData, DoiRow, FileSource, Problem, check_period, read_kind
from bot.close.imports.imported import ImportedFiles
from bot.core.errors import DataError
from bot.store import Store


def period_sources(store: Store | None, period: str) -> dict[str, FileSource]:
    return ImportedFiles(store).sources(period) if store is not None else {}


def periods_with_data(store: Store | None, data_dir: Path | None) -> list[str]:
    """Periods with a folder of data or imported files, oldest first."""
    imported = ImportedFiles(store).periods() if store is not None else []
    return sorted({*close_data.available_periods(data_dir), *imported})


def has_data(store: Store | None, period: str, data_dir: Path | None) -> bool:
    """Whether `period` has a folder of data or imported files (its folder is looked up, not
    every period listed: a /close asks this on its ack path)."""
    if close_data.has_folder(period, data_dir):
        return True
    return period in (ImportedFiles(store).periods() if store is not None else [])


def require_data(store: Store | None, period: str, data_dir: Path | None) -> None:
    """DataError naming the periods that have data, when `period` has none."""
    check_period(period)
    if not has_data(store, period, data_dir):
        have = periods_with_data(store, data_dir)
        raise DataError(
            f"no close data for {period}; periods with data: {', '.join(have) or 'none'}. "
            "Drop the files into a DM with closebot, or `closebot data import`"
        )


def latest_period(store: Store | None, data_dir: Path | None) -> str:
    periods = periods_with_data(store, data_dir)
    if not periods:
        raise DataError(
            "no close data yet: drop the files into a DM with closebot, or `closebot data import`"
        )
    return periods[-1]


def load_period(store: Store | None, period: str, data_dir: Path | None) -> CloseData:
    """The period's data: its imported files, and the folder's for any kind not imported."""
    return close_data.load(period, data_dir, imported=period_sources(store, period))


def period_doi(store: Store | None, period: str | None, data_dir: Path | None) -> list[DoiRow]:
    """The DOI a file of `period` is tied to: the period's (imported, or its folder's), else
    the latest earlier period's (or the latest of all when the period is not known yet); an
    empty list when there is none anywhere."""
    imported = ImportedFiles(store) if store is not None else None
    have = periods_with_data(store, data_dir)
    order = [period] if period else []
    order += sorted((p for p in have if not period or p < period), reverse=True)
    for p in order:
        problems: list[Problem] = []
        source = imported.sources(p).get("doi.csv") if imported is not None else None
        if source is not None:
            rows = read_kind("doi.csv", source.stream(), problems)
        else:
            path = (data_dir or close_data.SAMPLE_DIR) / p / "doi.csv"
            if not path.is_file():
                continue
            with path.open(encoding="utf-8-sig", newline="") as f:
                rows = read_kind("doi.csv", f, problems)
        if rows and not problems:
            return rows
    return []

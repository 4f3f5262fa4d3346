"""The period's data, wherever it is: its imported files, and its folder's for any kind
not imported (what the close loads, and which periods have data)."""

from __future__ import annotations

from pathlib import Path

from bot.close import data as close_data
from bot.close.data import CloseData, FileSource, check_period
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

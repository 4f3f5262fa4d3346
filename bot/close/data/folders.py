"""Where a period's files are: the data directory's period folders (the shipped sample
when none is given), and writing the sample out."""

from __future__ import annotations

import shutil
from pathlib import Path

from bot.close.data.values import PERIOD_RE, SAMPLE_DIR, check_period
from bot.core.errors import DataError


def available_periods(data_dir: Path | None = None) -> list[str]:
    """Periods that have a folder of data, oldest first."""
    root = data_dir or SAMPLE_DIR
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and PERIOD_RE.match(p.name))


def has_folder(period: str, data_dir: Path | None = None) -> bool:
    """Whether `period` has a folder of data (as available_periods would list it)."""
    return bool(PERIOD_RE.match(period)) and ((data_dir or SAMPLE_DIR) / period).is_dir()


def latest_period(data_dir: Path | None = None) -> str:
    periods = available_periods(data_dir)
    if not periods:
        raise DataError(
            f"no close data in {data_dir or SAMPLE_DIR}: expected folders named YYYY-MM"
        )
    return periods[-1]


def require_period(period: str, data_dir: Path | None = None) -> Path:
    """The period's folder; DataError naming the periods that do have data."""
    check_period(period)
    folder = (data_dir or SAMPLE_DIR) / period
    if not folder.is_dir():
        have = available_periods(data_dir)
        listing = ", ".join(have) if have else "none"
        where = f" in {data_dir}" if data_dir else ""
        raise DataError(f"no close data for {period}{where}; periods with data: {listing}")
    return folder


def write_sample(target: Path) -> list[str]:
    """Copy the shipped sample periods into `target`; the periods written."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for p in available_periods(SAMPLE_DIR):
        dest = target / p
        if dest.exists():
            raise DataError(f"{dest} already exists; choose an empty folder")
        shutil.copytree(SAMPLE_DIR / p, dest)
        written.append(p)
    account_map = SAMPLE_DIR / "account_map.csv"  # the entries' GL import files need it
    if account_map.is_file() and not (target / account_map.name).exists():
        shutil.copyfile(account_map, target / account_map.name)
    return written

"""Close data for one accounting period, in the v2 format of CLOSE.md, checked whole.

A data directory holds one folder per period (`2026-10/`) with eleven CSV files. Loading
reads every file and collects every problem — file, line, column, the value and what was
expected — before anything is used: one bad value refuses the whole period, and nothing
is imported. Semantic doubts (line math, duplicates, unknown wells) are not load errors:
the close's steps ask a person about them.

The package: values (periods, months, money), rows (one type per file), specs (the
files' columns and parsers), problems, reading (one file, streamed and hashed), history
(the history files reduced to indexes), folders (where periods are), loading (a period
whole). What other modules use is re-exported here: `from bot.close import data`.
"""

from __future__ import annotations

from bot.close.data.folders import (
    available_periods,
    has_folder,
    latest_period,
    require_period,
    write_sample,
)
from bot.close.data.history import History
from bot.close.data.loading import CloseData, ReadProgress, check, load
from bot.close.data.problems import DataProblems, Problem
from bot.close.data.reading import FileSource, read_kind
from bot.close.data.rows import (
    AccrualRow,
    AfeRow,
    DoiRow,
    JibHistoryLine,
    JibLine,
    JoaRow,
    PriceRow,
    ProductionRow,
    RevenueLine,
    TbRow,
)
from bot.close.data.specs import FILES, SPECS, FileSpec
from bot.close.data.values import (
    ACCRUAL_KINDS,
    CATEGORIES,
    CENT,
    DATE_RE,
    MONTHS,
    PERIOD_RE,
    PRODUCTS,
    SAMPLE_DIR,
    ZERO,
    add_months,
    cents,
    check_period,
    months_between,
    parse_amount,
    period_label,
)

__all__ = [
    "ACCRUAL_KINDS",
    "CATEGORIES",
    "CENT",
    "DATE_RE",
    "FILES",
    "MONTHS",
    "PERIOD_RE",
    "PRODUCTS",
    "SAMPLE_DIR",
    "SPECS",
    "ZERO",
    "AccrualRow",
    "AfeRow",
    "CloseData",
    "DataProblems",
    "DoiRow",
    "FileSource",
    "FileSpec",
    "History",
    "JibHistoryLine",
    "JibLine",
    "JoaRow",
    "PriceRow",
    "Problem",
    "ProductionRow",
    "ReadProgress",
    "RevenueLine",
    "TbRow",
    "add_months",
    "available_periods",
    "cents",
    "check",
    "check_period",
    "has_folder",
    "latest_period",
    "load",
    "months_between",
    "parse_amount",
    "period_label",
    "read_kind",
    "require_period",
    "write_sample",
]

"""A mapping file (`closebot data import --map FILE`): how each operator's files are read,
said once and used without a question — TOML (or JSON), one table per file-name pattern:

    ["Red Butte*.xlsx"]
    kind = "jib.csv"              # optional: which of the eleven files
    period = "2026-10"            # optional: the period (else the close's, or read from the rows)
    header_row = 7                # optional: the row that names the columns (else found)
    ["Red Butte*.xlsx".columns]   # closebot column = the file's header
    well_id = "Well Name"
    ["Red Butte*.xlsx".whole_file]  # one value for every row (a column the file lacks)
    operator = "Red Butte Operating LLC"
    ["Red Butte*.xlsx".wells]     # a well name the DOI has several wells for = the well id
    "Smith" = "W-TX-001"

`template` writes the section for a file from its proposal, for a person to edit.
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.close.data import check_period
from bot.close.imports.mapping import (
    HEADER_KEY,
    columns_of,
    fixed,
    fixed_value,
    wells_said,
    with_wells,
)
from bot.close.imports.recognize import FILE_KINDS
from bot.core.errors import ConfigError

KEYS = {"kind", "period", "header_row", "columns", "whole_file", "wells"}


@dataclass
class FileMap:
    """What a mapping file says for the files its pattern names."""

    pattern: str
    kind: str | None = None
    period: str | None = None
    mapping: dict[str, str] = field(default_factory=dict)


def read_map_file(path: Path) -> list[FileMap]:
    """The mapping file's sections, checked whole: ConfigError names every problem."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror or e}") from None
    try:
        raw = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: not readable as {path.suffix or 'TOML'}: {e}") from None
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{path}: no sections (one per file-name pattern)")
    out, problems = [], []
    for pattern, section in raw.items():
        if not isinstance(section, dict):
            problems.append(f"[{pattern}] is not a table")
            continue
        out.append(_section(pattern, section, problems))
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))
    return out


def _section(pattern: str, section: dict[str, Any], problems: list[str]) -> FileMap:
    where = f"[{pattern}]"
    for k in section:
        if k not in KEYS:
            problems.append(f"{where}: {k!r} is not one of {', '.join(sorted(KEYS))}")
    kind = section.get("kind")
    if kind is not None and kind not in FILE_KINDS:
        problems.append(f"{where}: kind {kind!r} is not one of {', '.join(FILE_KINDS)}")
    period = section.get("period")
    if period is not None:
        try:
            check_period(str(period))
        except Exception as e:  # DataError: said as this file's problem
            problems.append(f"{where}: {e}")
    mapping: dict[str, str] = {}
    columns = FILE_KINDS[kind].columns if kind in FILE_KINDS else None
    for table, make in (("columns", str), ("whole_file", fixed)):
        for column, value in (section.get(table) or {}).items():
            if columns is not None and column not in columns:
                problems.append(f"{where}.{table}: {column!r} is not a column of {kind}")
            mapping[column] = make(str(value))
    if "header_row" in section:
        row = section["header_row"]
        if not isinstance(row, int) or row < 1:
            problems.append(f"{where}: header_row is a row number (1 is the first row)")
        else:
            mapping[HEADER_KEY] = str(row)
    mapping = with_wells(mapping, {str(k): str(v) for k, v in (section.get("wells") or {}).items()})
    return FileMap(pattern, kind, str(period) if period else None, mapping)


def map_for(maps: list[FileMap], filename: str) -> FileMap | None:
    """The first section whose pattern names the file (case-insensitive)."""
    for m in maps:
        if fnmatch.fnmatch(filename.casefold(), m.pattern.casefold()):
            return m
    return None


def _toml(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def template(filename: str, kind: str, period: str, mapping: dict[str, str], row: int) -> str:
    """The mapping file's section for one file, as its proposal stands (to edit and keep)."""
    name = _toml(filename)
    lines = [f"[{name}]", f"kind = {_toml(kind)}"]
    if period:
        lines.append(f"period = {_toml(period)}")
    lines.append(f"header_row = {row}")
    columns = columns_of(mapping)
    read = {c: h for c, h in columns.items() if h and fixed_value(h) is None}
    whole = {c: fixed_value(h) for c, h in columns.items() if h and fixed_value(h) is not None}
    lines.append(f"[{name}.columns]")
    lines += [f"{c} = {_toml(h)}" for c, h in read.items()]
    if whole:
        lines.append(f"[{name}.whole_file]")
        lines += [f"{c} = {_toml(v or '')}" for c, v in whole.items()]
    said = wells_said(mapping)
    if said:
        lines.append(f"[{name}.wells]")
        lines += [f"{_toml(k)} = {_toml(v)}" for k, v in said.items()]
    return "\n".join(lines) + "\n"

"""Reading one file: a stream of CSV parsed row by row (a plain row by one regular
expression, any other cell by cell, every problem named), hashed as it is read; from
a period's folder or from a file kept in the database (FileSource)."""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import operator
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from bot.close.data.problems import Problem
from bot.close.data.specs import PLAIN, SPECS, FileSpec


@dataclass(frozen=True)
class FileSource:
    """One kind's rows from elsewhere than the period's folder (a file dropped in Slack or
    imported at a terminal, kept in the database): CSV in closebot's layout for that kind,
    and the SHA-256 of the file as it was received (the evidence)."""

    content: bytes
    digest: str

    def stream(self) -> TextIO:
        return io.TextIOWrapper(io.BytesIO(self.content), encoding="utf-8-sig", newline="")


class _Hashing(io.RawIOBase):
    """A binary file read through SHA-256: the digest of exactly the bytes parsed."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.raw.readinto(buffer)  # type: ignore[attr-defined]
        if n:
            self.sha.update(memoryview(buffer)[:n])
        return n or 0

    def drain(self) -> None:
        while chunk := self.raw.read(1 << 20):
            self.sha.update(chunk)

    def hexdigest(self) -> str:
        return self.sha.hexdigest()


def _text_stream(raw: io.RawIOBase) -> TextIO:
    return io.TextIOWrapper(io.BufferedReader(raw, 1 << 16), encoding="utf-8-sig", newline="")


def _rows(
    spec: FileSpec, stream: TextIO, problems: list[Problem], *, partial: bool = False
) -> Iterator[tuple[Sequence[Any], int]]:
    """Each good row's parsed values (in `spec.columns` order) and line number, streamed;
    every problem collected, bad rows skipped."""
    lines = iter(stream)
    header = next(csv.reader(lines), None)
    if header is None:
        problems.append(Problem(spec.name, 1, "", "", "a header row"))
        return
    header = [h.strip() for h in header]
    missing = [c for c in spec.columns if c not in header]
    if missing:
        problems.append(
            Problem(spec.name, 1, ", ".join(missing), "", "these column(s) in the header")
        )
        return
    plan = [(header.index(name), name, parse) for name, parse in spec.columns.items()]
    fast = [(index, parse) for index, _, parse in plan]
    width = len(header)
    # A row whose every cell is already in its plain form (what exports mostly write) is
    # checked by one regular expression and converted by C calls; any other row takes the
    # cell-by-cell path, which accepts the other forms and names every problem.
    plain = {name: parse for name, parse in spec.columns.items()}
    row_re = re.compile(
        "\x1f".join(f"(?:{PLAIN[plain[h]][0]})" if h in plain else "[^\x1f]*" for h in header)
    )
    # the same check on a line's own text, for a line without quotes: its cells are what
    # splitting it on its commas gives (as csv.reader would), and none can hold a comma
    line_re = re.compile(row_re.pattern.replace("\x1f", ",").replace("\\x1f", ","))
    convert = [(index, PLAIN[parse][1]) for index, parse in fast]
    # partial: each row as its cells' text in column order, converted by whoever uses it
    # (the history indexes convert the few values they keep)
    texts = operator.itemgetter(*[index for index, _ in fast])
    for line_no, line in enumerate(lines, start=2):
        if '"' in line:  # quoted cells, perhaps over several lines: csv.reader reads them
            cells = next(csv.reader(itertools.chain((line,), lines)))
        else:
            text = line.rstrip("\r\n")
            cells = text.split(",")
            if line_re.fullmatch(text):
                if partial:
                    yield texts(cells), line_no
                else:
                    yield [conv(cells[index]) for index, conv in convert], line_no
                continue
        if len(cells) != width:
            if not any(c.strip() for c in cells):
                continue
            problems.append(
                Problem(
                    spec.name,
                    line_no,
                    "",
                    ",".join(cells)[:80],
                    f"{width} fields, found {len(cells)} (an unquoted comma in an amount?)",
                )
            )
            continue
        if row_re.fullmatch("\x1f".join(cells)):
            if partial:
                yield texts(cells), line_no
            else:
                yield [conv(cells[index]) for index, conv in convert], line_no
            continue
        if not cells[0].strip() and not any(c.strip() for c in cells):
            continue
        try:
            values = [parse(cells[index].strip()) for index, parse in fast]
        except ValueError:
            for index, name, parse in plan:  # again, cell by cell, to name every problem
                raw_value = cells[index].strip()
                try:
                    parse(raw_value)
                except ValueError as e:
                    problems.append(Problem(spec.name, line_no, name, raw_value, str(e)))
            continue
        if partial:  # the values in their plain text, as a plain row would give them
            yield tuple(v if isinstance(v, str) else str(v) for v in values), line_no
        else:
            yield values, line_no


def _typed(spec: FileSpec, stream: TextIO, problems: list[Problem]) -> Iterator[Any]:
    make, extra = spec.row_type, spec.extra
    for values, line_no in _rows(spec, stream, problems):
        yield make(*values, line_no, *extra)


def read_kind(name: str, stream: TextIO, problems: list[Problem]) -> list[Any]:
    """The typed rows of one file of kind `name` (`jib.csv`, `doi.csv`, …) from a text stream:
    the loader's one entry point for rows, whatever brought the file (a folder, an upload).
    Problems (file, line, column, value, what was expected) are appended to `problems`."""
    return list(_typed(SPECS[name], stream, problems))


def _read_file(
    folder: Path,
    spec: FileSpec,
    problems: list[Problem],
    sink: Callable[[Sequence[Any], int], None] | None,
    source: FileSource | None = None,
) -> tuple[list[Any], str, int]:
    """One file streamed once: its rows (or each row to `sink`), its SHA-256 and row count.
    A `source` (an imported file's rows) is read instead of the folder's file."""
    if source is not None:
        if sink is None:
            typed = list(_typed(spec, source.stream(), problems))
            return typed, source.digest, len(typed)
        fed = 0
        for values, line_no in _rows(spec, source.stream(), problems, partial=True):
            fed += 1
            sink(values, line_no)
        return [], source.digest, fed
    path = folder / spec.name
    if not path.is_file():
        problems.append(Problem(spec.name, 0, "", "", "the file (it is missing)"))
        return [], "", 0
    rows: list[Any] = []
    count = 0
    with path.open("rb") as raw:
        hashing = _Hashing(raw)
        try:
            if sink is None:
                rows = list(_typed(spec, _text_stream(hashing), problems))
                count = len(rows)
            else:  # history: values to the index, no row objects
                for values, line_no in _rows(spec, _text_stream(hashing), problems, partial=True):
                    count += 1
                    sink(values, line_no)
        except UnicodeDecodeError:
            data = path.read_bytes()
            try:
                data.decode("utf-8-sig")
            except UnicodeDecodeError as e:
                line = data[: e.start].count(b"\n") + 1
                problems.append(
                    Problem(spec.name, line, "", data[e.start : e.start + 1].hex(), "UTF-8 text")
                )
            return [], hashlib.sha256(data).hexdigest(), 0
        hashing.drain()
    return rows, hashing.hexdigest(), count

"""What is wrong in a period's files: one Problem per file, line, column and value, and
DataProblems, which refuses the period whole and lists them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.core.errors import DataError


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong in one file: where, the value, and what was expected."""

    file: str
    line: int
    column: str
    value: str
    expected: str

    def __str__(self) -> str:
        where = f"{self.file} line {self.line}" if self.line else self.file
        if self.column:
            where += f", column {self.column}"
        shown = f"{self.value!r}: " if self.value else ""
        return f"{where}: {shown}expected {self.expected}"


class DataProblems(DataError):
    """A period's files were refused whole; every problem is listed."""

    def __init__(self, folder: Path, problems: list[Problem]) -> None:
        self.folder = folder
        self.problems = problems
        head = f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in {folder}; nothing was imported"
        lines = [f"  - {p}" for p in problems[:50]]
        if len(problems) > 50:
            lines.append(f"  … and {len(problems) - 50} more")
        super().__init__(head + ":\n" + "\n".join(lines))

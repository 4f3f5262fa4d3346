"""The journal import formats, one module per format in this package: each declares its
`Format` (its name for `closebot entries --format`, its title, what it follows in the list,
how it writes a batch). `formats()` imports every module here and lists them in order; the
CLI's choices, the files Slack attaches to a posted close and the tests all read it. A new
format is its module here (and its test), nothing else. What every format shares (the
account map, the checks, the memo, CSV writing) is bot/close/exports/batch.py.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from bot.close.registry import in_order
from bot.core.errors import DataError

if TYPE_CHECKING:
    from bot.close.exports.batch import Export

DECLARED: dict[str, Format] = {}  # every format declared, by name; formats() orders them
SHARED = ("batch",)  # the modules here that are not a format


@dataclass(frozen=True)
class Format:
    """One ledger's journal import file; declaring it registers it."""

    id: str  # the name `closebot entries --format` takes, and the file name's suffix
    title: str  # "QuickBooks Online"
    render: Callable[[Export], str] = field(compare=False, repr=False)
    after: str | None  # the format it is listed after (None: the first)
    before: str | None = None
    max_lines: int | None = None  # the most lines the ledger imports from one file
    # attached to a posted close's thread (closebot's own CSV is attached as the journal)
    attached: bool = True

    def __post_init__(self) -> None:
        known = DECLARED.get(self.id)
        if known is not None and known is not self:
            raise ValueError(f"two export formats are declared with the name {self.id!r}")
        DECLARED[self.id] = self


@cache
def formats() -> tuple[Format, ...]:
    """Every format, in the order they are listed."""
    for module in pkgutil.iter_modules(__path__):
        if module.name not in SHARED:
            importlib.import_module(f"{__name__}.{module.name}")
    return in_order(DECLARED, "export format")


def names() -> tuple[str, ...]:
    return tuple(f.id for f in formats())


def format_named(name: str) -> Format:
    """A format by its name; DataError naming the formats when there is none."""
    for f in formats():
        if f.id == name:
            return f
    raise DataError(f"{name!r} is not a format; choose one of {', '.join(names())}")

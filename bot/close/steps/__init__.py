"""The close's steps, one module per step. Each module declares its `Step` (bot/close/registry.py)
with the step it follows, registers its tool (`@STEP.tool`) and its checks (`@STEP.check`);
`registry()` imports every module here and returns the steps in order. Nothing else lists
them: a new step is a new module here (and its test)."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from bot.close.registry import DECLARED, Step, in_order


@cache
def registry() -> tuple[Step, ...]:
    """Every step of the close, in the order they run."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return in_order(DECLARED)


def names() -> tuple[str, ...]:
    """The steps' names, in order (the keys of a run's step states)."""
    return tuple(s.name for s in registry())


def step(key: str) -> Step:
    """A step by its id or its name."""
    for s in registry():
        if key in (s.id, s.name):
            return s
    raise KeyError(f"no close step {key!r}; the steps are {', '.join(s.id for s in registry())}")


def books_steps() -> tuple[Step, ...]:
    """The steps the books depend on: every one up to the journal's draft."""
    steps = registry()
    return steps[: steps.index(step("journal")) + 1]

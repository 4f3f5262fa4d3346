"""Bulk work and Python's cyclic garbage collector.

Reading a month's files and writing its journal make millions of objects (rows, lines) and
no reference cycles: reference counting frees every one of them as soon as it goes. The cyclic
collector, though, runs every 700 new container objects and, every so often, walks every
object alive; at 200,000 JIB lines those walks were 2 s of a 14 s close (issue 19). So:

- `paused()` stops the automatic collections for the length of such work (nested and across
  threads: they resume when the last one ends), and
- `long_lived()` tells the collector that what exists now (a period's rows, which live as
  long as its close) needs no more walking: young cycles are collected first, then the
  survivors are moved out of the collector's generations (`gc.freeze`). They are still freed
  by reference counting when the close lets them go.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = True


@contextmanager
def paused() -> Iterator[None]:
    """No automatic cyclic collection while the block runs (in any thread)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def long_lived() -> None:
    """What exists now is kept for a while: collect the young cycles, freeze the rest."""
    gc.collect(1)
    gc.freeze()

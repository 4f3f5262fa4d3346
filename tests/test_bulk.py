"""bot/core/gc_pause.py: the cyclic collector is paused for bulk work and resumes when the last
piece of it ends, in whatever order they end and on whatever thread."""

from __future__ import annotations

import gc
import threading
import weakref

from bot.core import gc_pause as bulk


def test_collection_resumes_when_the_last_bulk_work_ends_in_any_order() -> None:
    assert gc.isenabled()
    started, release = threading.Event(), threading.Event()

    def other() -> None:
        with bulk.paused():
            started.set()
            assert release.wait(10)

    t = threading.Thread(target=other)
    with bulk.paused():
        assert not gc.isenabled()
        with bulk.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still running
        t.start()
        assert started.wait(10)
    assert not gc.isenabled()  # the other thread's block is still running
    release.set()
    t.join(10)
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    try:
        with bulk.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_collection_resumes_when_bulk_work_fails() -> None:
    try:
        with bulk.paused():
            raise ValueError("bad row")
    except ValueError:
        pass
    assert gc.isenabled()


def test_what_lives_long_is_frozen_and_young_cycles_are_collected_first() -> None:
    class Node:
        other: Node

    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    before = gc.get_freeze_count()
    try:
        bulk.long_lived()
        assert gc.get_freeze_count() > before
        assert gone() is None  # the cycle was collected, not frozen
    finally:
        gc.unfreeze()

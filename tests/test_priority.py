"""Acks first: background work waits at its checkpoints while a request is being answered."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from bot.store import Store
from bot.store.ack_priority import AckFirst


def checkpoint_in_thread(gate: AckFirst) -> threading.Event:
    passed = threading.Event()

    def work() -> None:
        gate.checkpoint()
        passed.set()

    threading.Thread(target=work, daemon=True).start()
    return passed


def test_background_work_waits_while_a_request_is_answered_and_goes_on_after() -> None:
    gate = AckFirst(max_wait=30)
    with gate.ack():
        passed = checkpoint_in_thread(gate)
        assert not passed.wait(0.3), "background work ran beside a request being answered"
    assert passed.wait(10)
    assert gate.in_flight == 0


def test_the_wait_is_bounded_so_a_stream_of_requests_never_starves_work() -> None:
    gate = AckFirst(max_wait=0.05)
    with gate.ack():
        assert checkpoint_in_thread(gate).wait(10)  # went on while the request was still open


def test_the_thread_answering_a_request_never_waits_on_itself() -> None:
    gate = AckFirst(max_wait=30)
    done = threading.Event()

    def answer() -> None:
        with gate.ack():
            gate.checkpoint()  # e.g. the claim's own database call
            done.set()

    threading.Thread(target=answer, daemon=True).start()
    assert done.wait(10)


def test_with_nothing_in_flight_a_checkpoint_returns_at_once() -> None:
    assert checkpoint_in_thread(AckFirst(max_wait=30)).wait(10)


def test_a_thread_inside_a_transaction_is_not_held_at_its_nested_calls(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transaction paused at a checkpoint would hold the lock the waiting request needs."""
    from bot.store import core, locks

    gate = AckFirst(max_wait=30)
    monkeypatch.setattr(locks, "ACKS", gate)  # where the lock is taken
    monkeypatch.setattr(core, "ACKS", gate)  # where reads pass a checkpoint
    store = Store(db_path)
    try:
        entered = threading.Event()
        release = threading.Event()
        finished = threading.Event()

        def background() -> None:
            with store.write():
                entered.set()
                release.wait(10)
                store.runs.for_thread(channel="C", thread_ts="1")  # nested: takes the lock again
            finished.set()

        threading.Thread(target=background, daemon=True).start()
        assert entered.wait(10)
        with gate.ack():
            release.set()
            assert finished.wait(10), "the transaction waited for the request it was blocking"
    finally:
        store.close()

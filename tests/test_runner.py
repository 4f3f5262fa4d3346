"""The runner's scheduling: one job at a time per run, in order, runs in parallel with each other."""

from __future__ import annotations

import threading

from bot.core.runner import Runner
from bot.store import Store


def scheduler(store: Store, workers: int = 4) -> Runner:
    return Runner(max_workers=workers)


def test_jobs_of_one_run_are_serial_and_in_order_while_other_runs_proceed(store: Store) -> None:
    runner = scheduler(store)
    gate = threading.Event()
    other_ran = threading.Event()
    log: list[str] = []
    lock = threading.Lock()

    def job(name: str, wait: bool = False) -> None:
        with lock:
            log.append(f"start {name}")
        if wait:
            assert gate.wait(timeout=20)
        with lock:
            log.append(f"end {name}")

    runner.submit("run-a", lambda: job("a1", wait=True))
    for i in range(2, 6):
        runner.submit("run-a", lambda i=i: job(f"a{i}"))  # type: ignore[misc]
    runner.submit("run-b", lambda: (job("b1"), other_ran.set()))  # type: ignore[func-returns-value]
    assert other_ran.wait(timeout=20)  # run-b is not stuck behind run-a
    with lock:
        assert log.count("start a1") == 1 and "start a2" not in log  # nothing of run-a overtook a1
    gate.set()
    assert runner.wait_idle(timeout=20)
    a_events = [e for e in log if " a" in e]
    assert a_events == [f"{kind} a{i}" for i in range(1, 6) for kind in ("start", "end")]
    runner.shutdown()


def test_a_failing_job_does_not_stop_the_jobs_behind_it(store: Store) -> None:
    runner = scheduler(store, workers=1)
    done = []

    def boom() -> None:
        raise RuntimeError("boom")

    runner.submit("run-a", boom)
    runner.submit("run-a", lambda: done.append("after"))
    assert runner.wait_idle(timeout=20)
    assert done == ["after"]
    runner.shutdown()


def test_shutdown_drains_the_job_in_flight_and_takes_no_new_ones(store: Store) -> None:
    runner = scheduler(store)
    started, release = threading.Event(), threading.Event()
    done: list[str] = []

    def turn() -> None:
        started.set()
        assert release.wait(20)
        done.append("turn")

    runner.submit("run-a", turn)
    assert started.wait(20)
    result: list[bool] = []
    stopping = threading.Thread(target=lambda: result.append(runner.shutdown(timeout=20)))
    stopping.start()
    assert runner.busy("run-a")  # SIGTERM arrived mid-turn: shutdown waits for it
    release.set()
    stopping.join(20)
    assert result == [True] and done == ["turn"]
    runner.submit("run-b", lambda: done.append("late"))  # after the drain: not started
    assert done == ["turn"] and not runner.busy("run-b")


def test_quick_jobs_run_while_every_turn_worker_waits_on_a_model() -> None:
    runner = Runner(max_workers=2, fast_workers=1)
    release = threading.Event()
    for run in ("run-a", "run-b", "run-c"):  # more turns than workers, each stuck
        runner.submit(run, lambda: (release.wait(timeout=20), None)[1])
    shown = threading.Event()
    opened = threading.Event()
    runner.fast(shown.set)  # a form turning read-only
    runner.fast(lambda: (opened.wait(timeout=20), None)[1], key="run-d")  # a thread opening

    assert shown.wait(timeout=20)  # not behind the stuck turns
    assert runner.busy("run-d")  # a keyed quick job keeps its run busy (the watchdog waits)
    opened.set()
    release.set()
    assert runner.wait_idle(timeout=20)  # idle waits for quick jobs too
    assert not runner.busy("run-d")
    runner.shutdown()

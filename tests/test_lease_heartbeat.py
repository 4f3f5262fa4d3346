"""One heartbeat for every lease a process holds (issue 33): threads do not grow with the
runs held, every held lease is still renewed, and the heartbeat ends with the last hold."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

from bot.store import Store

HOLDS = 300


def _expiries(store: Store) -> dict[str, str]:
    rows = store.leases.core.query("select run_id, expires_at from leases order by run_id")
    return {r["run_id"]: r["expires_at"] for r in rows}


def _wait(check: Callable[[], bool], timeout: float = 20.0) -> bool:
    """True once `check` holds, polled for at most `timeout` seconds (a bound, not a timing)."""
    tick = threading.Event()
    for _ in range(int(timeout * 20)):
        if check():
            return True
        tick.wait(0.05)
    return check()


def test_many_held_leases_share_one_heartbeat_thread_that_renews_them_all(store: Store) -> None:
    owner = "host-a:1:-:abcdef closebot serve"
    ttl = timedelta(seconds=3)
    before = threading.active_count()
    runs = [f"run-{i:04d}" for i in range(HOLDS)]
    for run_id in runs:
        assert store.leases.hold(run_id, owner=owner, ttl=ttl) is None
    # before issue 33: one `lease-<run>` thread per hold, 300 more threads here
    assert threading.active_count() - before <= 1
    assert [t.name for t in threading.enumerate()].count("lease-heartbeat") == 1
    first = _expiries(store)
    assert sorted(first) == runs
    # every held lease is renewed by the one heartbeat (each expiry moves on)
    assert _wait(lambda: all(e > first[r] for r, e in _expiries(store).items()))
    for run_id in runs:
        store.leases.let_go(run_id, owner=owner)
    assert _expiries(store) == {}
    assert _wait(lambda: "lease-heartbeat" not in [t.name for t in threading.enumerate()])


def test_the_heartbeat_leaves_a_lease_another_owner_took_over(store: Store) -> None:
    ours, theirs = "host-a:1:-:aaaaaa closebot serve", "host-b:2:-:bbbbbb closebot serve"
    ttl = timedelta(minutes=5)
    assert store.leases.hold("run-a", owner=ours, ttl=ttl) is None
    assert store.leases.hold("run-b", owner=ours, ttl=ttl) is None
    # run-b's lease expired unrenewed and another process took it over
    with store.leases.core.write() as db:
        db.execute("update leases set owner = ? where run_id = 'run-b'", (theirs,))
    assert store.leases.renew_held() == 1  # only run-a is still ours
    assert store.leases.holder("run-b") == theirs
    store.leases.let_go("run-a", owner=ours)
    store.leases.let_go("run-b", owner=ours)
    assert store.leases.holder("run-b") == theirs  # letting go never deletes their row

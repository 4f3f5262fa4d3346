"""Status updates coalesce: one at once, the rest folded into one at the window's end."""

from __future__ import annotations

import threading
from pathlib import Path

from bot.debounce import Debounce
from tests.fake_slack import FakeSlack
from tests.slack_harness import Harness


class Sent:
    def __init__(self) -> None:
        self.keys: list[str] = []
        self.arrived = threading.Condition()

    def __call__(self, key: str) -> None:
        with self.arrived:
            self.keys.append(key)
            self.arrived.notify_all()

    def wait_for(self, count: int, timeout: float = 10) -> bool:
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.keys) >= count, timeout=timeout)


def test_a_burst_of_touches_becomes_one_update_after_the_window() -> None:
    sent = Sent()
    debounce = Debounce(sent, window=0.2)
    for _ in range(10):
        debounce.touch("run")
    assert sent.keys == [] and debounce.pending() == 1  # nothing yet: the state is moving
    assert sent.wait_for(1)
    assert sent.keys == ["run"] and debounce.pending() == 0


def test_flush_sends_a_pending_update_now_and_only_if_one_is_pending() -> None:
    sent = Sent()
    debounce = Debounce(sent, window=60)
    debounce.flush("run")
    assert sent.keys == []
    debounce.touch("run")
    debounce.touch("run")
    debounce.flush("run")
    assert sent.keys == ["run"] and debounce.pending() == 0
    debounce.flush("run")
    assert sent.keys == ["run"]


def test_drop_forgets_a_pending_update() -> None:
    sent = Sent()
    debounce = Debounce(sent, window=60)
    debounce.touch("a")
    debounce.drop("a")
    debounce.flush("a")
    assert sent.keys == [] and debounce.pending() == 0


def test_keys_do_not_hold_each_other_up() -> None:
    sent = Sent()
    debounce = Debounce(sent, window=0.1)
    debounce.touch("a")
    debounce.touch("b")
    debounce.flush("b")
    assert sent.keys == ["b"]
    assert sent.wait_for(2)
    assert sorted(sent.keys) == ["a", "b"]


def status_updates(fake: FakeSlack, ts: str) -> list[dict[str, object]]:
    return [p for p in fake.to("chat.update") if p.get("ts") == ts]


def test_a_turn_moves_the_status_message_once_and_ends_on_its_true_state(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    run = bot.start()  # intake runs, then the first question
    status_ts = bot.store.run(run.id).status_ts
    assert status_ts
    first_turn = status_updates(fake, status_ts)
    assert len(first_turn) == 1, len(first_turn)
    assert "waiting on you" in str(bot.message(status_ts)["blocks"]).lower()
    bot.finish(run.id)
    final = str(bot.message(status_ts)["blocks"]).lower()
    assert "waiting on you" not in final and "running" not in final
    bot.close()

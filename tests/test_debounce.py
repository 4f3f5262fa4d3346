"""Status updates coalesce: one at once, the rest folded into one at the window's end."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from bot.sandbox.slack_api import FakeSlack
from bot.slack.presenter.debounce import Debounce
from tests.slack_harness import Harness, refuse_streams


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
    refuse_streams(fake)  # the status message as an ordinary message, moved by chat.update
    bot = Harness(fake, db_path)
    run = bot.start()  # intake runs, then the first question
    status_ts = bot.store.runs.get(run.id).status_ts
    assert status_ts
    first_turn = status_updates(fake, status_ts)
    assert len(first_turn) == 1, len(first_turn)
    assert "waiting on you" in str(bot.message(status_ts)["blocks"]).lower()
    bot.finish(run.id)
    final = str(bot.message(status_ts)["blocks"]).lower()
    assert "waiting on you" not in final and "running" not in final
    bot.close()


def test_a_folded_update_still_in_flight_never_lands_after_the_final_state(
    fake: FakeSlack, db_path: Path
) -> None:
    refuse_streams(fake)  # the status message as an ordinary message, moved by chat.update
    bot = Harness(fake, db_path)
    run = bot.start()
    presenter = bot.service.presenter
    status_ts = bot.store.runs.get(run.id).status_ts
    assert status_ts
    step = next(s for s, state in bot.store.runs.get(run.id).steps.items() if state == "waiting")
    bot.store.runs.set_step(run.id, step, "running")
    hold = fake.hold("chat.update", when=lambda p: p.get("ts") == status_ts)
    # The folded update leaves with the step running, and Slack is slow to take it.
    folded = threading.Thread(target=presenter.update_status, args=(run.id,))
    folded.start()
    assert hold.arrived.wait(timeout=10)
    # Meanwhile the run ends, and its final state is sent.
    bot.store.runs.finish_steps(run.id)
    bot.store.runs.set_status(run.id, "done")
    final = threading.Thread(target=presenter.update_status, args=(run.id,))
    final.start()
    # The final update waits for the one in flight (bounded: without the wait, it lands now).
    fake.wait_for(lambda: len(status_updates(fake, status_ts)) >= 2, timeout=0.5)
    hold.release.set()
    folded.join(timeout=10)
    final.join(timeout=10)
    shown = str(bot.message(status_ts)["blocks"]).lower()
    assert "running" not in shown and "waiting on you" not in shown, shown
    assert len(status_updates(fake, status_ts)) == 3  # the first turn's, the folded, the final
    bot.close()


def test_a_folded_update_sent_after_a_failure_leaves_the_failure_showing(
    fake: FakeSlack, db_path: Path
) -> None:
    refuse_streams(fake)  # the status message as an ordinary message, moved by chat.update
    bot = Harness(fake, db_path)
    run = bot.start()
    presenter = bot.service.presenter
    status_ts = bot.store.runs.get(run.id).status_ts
    assert status_ts
    presenter.progress(run.id, {})  # a step change, its update folded for later
    bot.service.work.loop.fail(run.id, "the ledger could not be read")
    with_note = str(bot.message(status_ts)["blocks"])
    assert "Press Retry" in with_note
    # The folded update was already on its way when the failure was shown: it arrives late.
    presenter._progress_now(run.id)
    assert str(bot.message(status_ts)["blocks"]) == with_note
    bot.close()


def test_a_whole_close_moves_each_message_once_a_turn_and_ends_on_its_final_state(
    fake: FakeSlack, db_path: Path
) -> None:
    refuse_streams(fake)  # the status message as an ordinary message, moved by chat.update
    bot = Harness(fake, db_path)
    began = time.monotonic()
    run = bot.start()
    bot.finish(run.id)
    took = time.monotonic() - began
    final = bot.store.runs.get(run.id)
    assert final.status == "done" and final.status_ts
    forms = [q.message_ts for q in bot.store.questions.of_run(run.id)]
    turns = 1 + len(forms)  # the first, and one after each answer
    updates = Counter(p["ts"] for p in fake.to("chat.update"))
    # The debounce's bound: one per turn, plus one per window a turn outlasted.
    window = bot.service.presenter._status_updates.window
    assert updates[final.status_ts] <= turns + int(took / window), (updates, turns, took)
    assert all(updates[ts] <= 1 for ts in forms), updates  # a form turns read-only once
    # The last update shows the final state, as it would be drawn now.
    shown = bot.message(final.status_ts)
    drawn = bot.service.presenter.status.blocks(final, final.steps)
    # Slack gives a block it was sent without a block_id one of its own.
    assert [
        {k: v for k, v in block.items() if k != "block_id" or "block_id" in sent}
        for block, sent in zip(shown["blocks"], drawn, strict=True)
    ] == drawn
    assert set(final.steps.values()) == {"done"}
    bot.close()

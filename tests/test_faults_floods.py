"""A flood of thread messages while a form waits (issue 31.7): answered once per burst — one
reply per person per thread per window (CLOSEBOT_THREAD_REPLY_SECONDS) — and audited once,
not message for message; every message is still kept for the close to read. Real signed
events through the Bolt app, the fake Slack counting what the bot posts."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from bot.sandbox.slack_api import FakeSlack
from bot.store import Run
from tests.conftest import Clock
from tests.slack_harness import Harness

FLOOD = 400  # messages from each of two people: the starter, and a colleague who may not steer
WINDOW = 60  # seconds: the default window


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path, clock: Clock) -> Iterator[Harness]:
    h = Harness(fake, db_path, clock=clock)
    yield h
    h.close()


def posted_since(fake: FakeSlack, since: int) -> list[tuple[str, str]]:
    """(method, text) of every message the bot posted or sent privately since the fake had
    recorded `since` calls: thread replies and ephemerals alike."""
    return [
        (c.method, str(c.params.get("text") or ""))
        for c in fake.calls[since:]
        if c.method in ("chat.postMessage", "chat.postEphemeral")
    ]


def flood(bot: Harness, run: Run, count: int, users: tuple[str, ...]) -> None:
    for n in range(count):
        for user in users:
            bot.say(run, f"are we there yet? ({n})", user=user)


def test_a_flood_of_thread_messages_while_a_form_waits_is_answered_once_per_burst(
    bot: Harness, fake: FakeSlack, clock: Clock
) -> None:
    run = bot.start()
    form = bot.pending(run.id)  # the first form waits
    calls = len(fake.calls)
    events = len(bot.store.audit.events(run.id))
    flood(bot, run, FLOOD, ("UALICE", "UCAROL"))
    bot.idle()
    sent = posted_since(fake, calls)
    # one answer each: Alice is told the close waits on the form; Carol that she may not steer
    waiting = [t for m, t in sent if m == "chat.postMessage" and "waiting on the question" in t]
    refusals = [t for m, t in sent if m == "chat.postEphemeral" and "can steer it" in t]
    assert (len(waiting), len(refusals)) == (1, 1), sent[:6]
    assert len(sent) == 2, sent[:6]
    # audited once per burst, not once per message
    quieted = bot.store.audit.events(run.id, kind="thread_replies_quieted")
    assert sorted(e.actor or "" for e in quieted) == ["UALICE", "UCAROL"]
    assert all(e.detail["window_seconds"] == WINDOW for e in quieted)
    refused = bot.store.audit.events(run.id, kind="steer_refused")
    assert len(refused) == 1  # Carol's refusal audited once for the burst
    assert len(bot.store.audit.events(run.id)) - events < 10
    # nothing Alice wrote is lost: every message waits for the close to read it
    held = bot.store.inbox.since(run.id, "")
    assert len([m for m in held if m["user"] == "UALICE"]) == FLOOD
    assert not [m for m in held if m["user"] == "UCAROL"]
    assert bot.store.questions.get(form).status == "pending"
    # once the window has passed, the next message is answered again
    clock.advance(seconds=WINDOW + 1)
    calls = len(fake.calls)
    flood(bot, run, 3, ("UALICE",))
    bot.idle()
    again = posted_since(fake, calls)
    assert [m for m, t in again if "waiting on the question" in t] == ["chat.postMessage"]
    assert len(again) == 1, again


def test_the_window_is_a_setting(fake: FakeSlack, db_path: Path, clock: Clock) -> None:
    """CLOSEBOT_THREAD_REPLY_SECONDS=0 answers every message, as before; a bad value is refused
    at start naming the variable."""
    from bot.core.config import Settings
    from bot.core.errors import ConfigError
    from tests.slack_harness import settings_for

    bot = Harness(fake, db_path, clock=clock, CLOSEBOT_THREAD_REPLY_SECONDS="0")
    try:
        run = bot.start()
        bot.pending(run.id)
        calls = len(fake.calls)
        flood(bot, run, 3, ("UALICE",))
        bot.idle()
        assert len([t for _, t in posted_since(fake, calls) if "waiting on the question" in t]) == 3
    finally:
        bot.close()
    for bad in ("-1", "soon", str(int(timedelta(days=2).total_seconds()))):
        with pytest.raises(ConfigError, match="CLOSEBOT_THREAD_REPLY_SECONDS"):
            settings_for(fake, db_path, CLOSEBOT_THREAD_REPLY_SECONDS=bad)
    assert Settings.from_env({}).thread_reply_seconds == WINDOW

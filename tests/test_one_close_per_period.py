"""One close per period in Slack (issue 17.3): a second /close of a period under way points to
its thread and starts nothing, two at the same instant make one run, a posted period is not
closed again (and says why it is not reopened), and /close with several open periods asks
which. Real signed payloads through the real Bolt app (and its HTTP edge for the race)."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.close.ledger import Ledger
from bot.sandbox.slack_api import FakeSlack, fake_slack
from bot.slack.blocks.period import PERIOD_ACTION, PERIOD_PICK
from bot.slack.http.server import HttpServer
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def told(fake: FakeSlack, words: str) -> list[str]:
    """What the person was told privately through a response_url, containing `words`."""
    return [r.get("text") or "" for r in fake.responses if words in (r.get("text") or "")]


def roots(fake: FakeSlack) -> list[dict[str, Any]]:
    """The channel's root messages (one per close that opened a thread)."""
    return [m for m in fake.messages.values() if not m.get("thread_ts") and m["channel"] == "CFIN"]


def test_a_second_close_of_a_live_period_links_its_thread_and_starts_nothing(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    assert bot.store.runs.get(run.id).status == "waiting"
    before = len(roots(fake))
    response = bot.command("2026-10", user="UAPPROVER")
    assert response.status == 200
    assert fake.wait_for(lambda: bool(told(fake, "already under way")), timeout=10)
    bot.idle()
    assert [r.id for r in bot.store.runs.recent()] == [run.id]  # no second close of the period
    assert len(roots(fake)) == before  # no second thread
    (said,) = told(fake, "already under way")
    thread = bot.store.runs.get(run.id).thread_ts
    # a link to the first close's thread (the fake's chat.getPermalink opens that thread)
    assert f"/thread/{thread}|open its thread>" in said
    assert run.id in said and "<@UALICE>" in said and "waiting on a decision" in said
    # the same in the DM: "close October" points to the thread too
    dm = {
        "type": "message",
        "channel": "DUAPPROVER",
        "channel_type": "im",
        "user": "UAPPROVER",
        "text": "close October",
        "ts": "1761909000.000001",
    }
    assert bot.dispatch(sp.event(dm, event_id="EvDm1"), "application/json").status == 200
    bot.idle()

    def dm_said() -> list[str]:
        return [m.get("text") or "" for m in fake.messages.values() if m["channel"] == "DUAPPROVER"]

    assert fake.wait_for(lambda: any("already under way" in t for t in dm_said()), timeout=10)
    assert any(f"/thread/{thread}|open its thread>" in t for t in dm_said())
    assert [r.id for r in bot.store.runs.recent()] == [run.id]


def test_two_closes_of_one_period_at_the_same_instant_make_one_run(
    db_path: Path,
) -> None:
    with fake_slack() as fake:
        bot = Harness(fake, db_path)
        server = HttpServer(bot.service, host="127.0.0.1", port=0)
        server.start()
        try:
            url = f"http://127.0.0.1:{server.port}/slack/events"
            people = ("UALICE", "UAPPROVER", "UAPPROVER2", "UALICE")
            bodies = [
                sp.slash_command("2026-10", user=who, response_url=fake.response_url(user=who))
                + f"&n={n}"  # four requests, none a replay of another
                for n, who in enumerate(people)
            ]
            go = threading.Barrier(len(bodies))
            acks: list[dict[str, Any]] = []

            def close(body: str) -> None:
                request = urllib.request.Request(
                    url, data=body.encode(), headers=sp.signed_headers(body, content_type=FORM)
                )
                go.wait(timeout=10)
                with urllib.request.urlopen(request, timeout=10) as response:
                    raw = response.read()
                    acks.append(json.loads(raw) if raw else {})

            threads = [threading.Thread(target=close, args=(b,)) for b in bodies]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=30)
            assert len(acks) == len(bodies)
            assert fake.wait_for(
                lambda: len(told(fake, "already under way")) == len(bodies) - 1, timeout=15
            )
            bot.idle()
            runs = bot.store.runs.recent()
            assert len(runs) == 1 and runs[0].period == "2026-10"  # exactly one claim won
            started = [a for a in acks if "Starting the October 2026 close" in a.get("text", "")]
            assert len(started) == 1 and runs[0].id in started[0]["text"]
            assert len(roots(fake)) == 1
            assert all(runs[0].id in t for t in told(fake, "already under way"))
        finally:
            server.stop()
            bot.close()


def test_a_posted_period_is_not_closed_again_and_says_why_it_is_not_reopened(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    bot.finish(run.id)
    batch = Ledger(bot.store).posted_batch("2026-10")
    assert batch is not None and batch["run_id"] == run.id
    assert bot.store.runs.live("2026-10") is None
    before = len(roots(fake))
    assert bot.command("2026-10", user="UALICE").status == 200
    assert fake.wait_for(lambda: bool(told(fake, "already posted")), timeout=10)
    bot.idle()
    assert [r.id for r in bot.store.runs.recent()] == [run.id] and len(roots(fake)) == before
    (said,) = told(fake, "already posted")
    thread = bot.store.runs.get(run.id).thread_ts
    assert f"batch `{batch['id']}`, approved by <@{batch['posted_by']}>" in said
    assert f"/thread/{thread}|its thread>" in said
    # no reopen offered: it says why (a reversing batch would need its own approval and
    # the period's one posting claim released) and what to do instead
    assert "does not reopen a posted period" in said and "reversing batch" in said
    assert not [r for r in fake.responses if r.get("blocks") and "button" in json.dumps(r)]


def test_close_without_a_period_when_several_are_open_asks_which_the_earliest_recommended(
    bot: Harness, fake: FakeSlack
) -> None:
    response = bot.command("")
    assert response.status == 200
    answer = json.loads(response.body)
    assert answer["response_type"] == "ephemeral"
    assert bot.store.runs.recent() == []  # nothing was picked silently
    form = answer["blocks"]
    (pick,) = [b for b in form if b.get("block_id") == PERIOD_PICK]
    radio = pick["element"]
    assert [o["value"] for o in radio["options"]] == ["2026-10", "2026-11"]
    assert radio["initial_option"]["value"] == "2026-10"  # the earliest not posted
    assert "recommended" in radio["options"][0]["description"]["text"]
    (submit,) = [e for b in form if b["type"] == "actions" for e in b["elements"]]
    assert (submit["action_id"], submit["text"]["text"]) == (PERIOD_ACTION, "Submit")
    # November picked instead: its close starts, and the form is replaced by what happened
    url = fake.response_url(channel="CFIN", user="UALICE")
    values = {
        PERIOD_PICK: {
            PERIOD_PICK: {"type": "radio_buttons", "selected_option": {"value": "2026-11"}}
        }
    }
    body = sp.block_action(PERIOD_ACTION, "close", values=values, response_url=url)
    assert bot.dispatch(body, FORM).status == 200
    assert fake.wait_for(lambda: bool(told(fake, "Starting the November 2026 close")), timeout=10)
    bot.idle()
    (run,) = bot.store.runs.recent()
    assert (run.period, run.started_by, run.channel) == ("2026-11", "UALICE", "CFIN")
    assert run.thread_ts  # its thread opened in the channel
    # the same form again, for November: now under way, it points to the thread instead
    assert bot.dispatch(sp.block_action(PERIOD_ACTION, "close", values=values), FORM).status == 200
    bot.idle()
    assert len(bot.store.runs.recent()) == 1


def test_close_in_the_dm_with_several_open_periods_asks_which_in_the_dm(
    bot: Harness, fake: FakeSlack
) -> None:
    dm = {
        "type": "message",
        "channel": "DUALICE",
        "channel_type": "im",
        "user": "UALICE",
        "text": "close",
        "ts": "1761909000.000002",
    }
    assert bot.dispatch(sp.event(dm, event_id="EvDm2"), "application/json").status == 200
    bot.idle()

    def forms() -> list[dict[str, Any]]:
        return [
            m
            for m in fake.messages.values()
            if m["channel"] == "DUALICE" and PERIOD_ACTION in json.dumps(m.get("blocks"))
        ]

    assert fake.wait_for(lambda: bool(forms()), timeout=10)
    (form,) = forms()
    (pick,) = [b for b in form["blocks"] if b.get("block_id") == PERIOD_PICK]
    assert pick["element"]["initial_option"]["value"] == "2026-10"
    assert bot.store.runs.recent() == []


def test_a_second_close_while_the_first_thread_is_still_opening_says_where_it_will_show(
    bot: Harness, fake: FakeSlack
) -> None:
    """The first close's root post is in flight (its thread not open yet): a second /close of
    the period is told the thread is being opened and where (the channel's link), not an
    unlinked "open its thread"; it starts nothing."""
    held = fake.hold("chat.postMessage", when=lambda p: not p.get("thread_ts"))
    try:
        assert bot.command("2026-10").status == 200
        assert held.arrived.wait(10), "the first close's root post never went out"
        (run,) = bot.store.runs.recent()
        assert run.thread_ts is None
        assert bot.command("2026-10", user="UAPPROVER").status == 200
        assert fake.wait_for(lambda: bool(told(fake, "already under way")), timeout=10)
    finally:
        held.release.set()
    bot.idle()
    (said,) = told(fake, "already under way")
    assert "its thread is being opened in <#CFIN>" in said and "open its thread" not in said
    assert run.id in said and "<@UALICE>" in said
    assert [r.id for r in bot.store.runs.recent()] == [run.id]  # nothing new started
    assert len(roots(fake)) == 1 and bot.store.runs.get(run.id).thread_ts  # one thread, open

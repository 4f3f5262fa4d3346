"""closebot outside a close's thread: the App Home (published on open, again when a run changes
state), the DM and the assistant pane (suggested prompts; "close October" starts the same
close; "what's waiting on me?", "what's open?", "who decided …?"), and those questions asked
in a close's thread at any time — all through signed events to the real app, on the one fake."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.sandbox.blockkit import view_problems
from bot.sandbox.slack_api import Channel, FakeSlack
from tests import slack_payloads as sp
from tests.slack_harness import Harness

JSON = "application/json"
_n = iter(range(1, 10_000))


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def event(bot: Harness, inner: dict[str, Any]) -> None:
    response = bot.dispatch(sp.event(inner, event_id=f"EvEntry{next(_n)}"), JSON)
    assert response.status == 200, response.body
    bot.idle()


def open_home(bot: Harness, user: str) -> None:
    event(
        bot,
        {
            "type": "app_home_opened",
            "user": user,
            "channel": "D0HOME",
            "tab": "home",
            "event_ts": "1.0",
        },
    )


def home_text(fake: FakeSlack, user: str) -> str:
    return json.dumps(fake.homes[user]["blocks"], ensure_ascii=False)


def dm(bot: Harness, text: str, *, user: str = "UALICE", thread_ts: str | None = None) -> None:
    msg: dict[str, Any] = {
        "type": "message",
        "channel": f"D{user}",
        "channel_type": "im",
        "user": user,
        "text": text,
        "ts": f"1761909999.{next(_n):06d}",
    }
    if thread_ts:
        msg["thread_ts"] = thread_ts
    event(bot, msg)


def dm_replies(fake: FakeSlack, user: str = "UALICE") -> list[str]:
    return [p["text"] for p in fake.to("chat.postMessage") if p["channel"] == f"D{user}"]


def test_app_home_is_published_on_open_and_follows_a_runs_state(
    bot: Harness, fake: FakeSlack
) -> None:
    open_home(bot, "UAPPROVER")
    (first,) = fake.to("views.publish")
    assert first["user_id"] == "UAPPROVER" and view_problems(first["view"]) == []
    assert "Nothing waits on you" in home_text(fake, "UAPPROVER")
    run = bot.start()
    # The run's state changed: the approver's Home shows the close and the form that waits
    # on them (an approver may answer it), with a link to its thread.
    text = home_text(fake, "UAPPROVER")
    assert "October 2026 — waiting on you" in text and "Waiting on you (1)" in text
    assert f"/thread/{run.thread_ts}" in text
    published = len(fake.to("views.publish"))
    bot.finish(run.id)
    assert len(fake.to("views.publish")) > published
    text = home_text(fake, "UAPPROVER")
    assert "October 2026 — finished" in text and "Nothing waits on you" in text
    assert "Latest files" in text and f"decisions-2026-10-{run.id}.csv" in text
    assert "Open items (" in text and "due 2026-11-15" in text  # owner and due date
    assert all(view_problems(p["view"]) == [] for p in fake.to("views.publish"))


def test_the_home_tab_only_on_the_home_tab(bot: Harness, fake: FakeSlack) -> None:
    event(
        bot, {"type": "app_home_opened", "user": "UALICE", "channel": "DUALICE", "tab": "messages"}
    )
    assert fake.to("views.publish") == []


def test_a_dm_asking_whats_waiting_on_me_is_answered(bot: Harness, fake: FakeSlack) -> None:
    dm(bot, "What's waiting on me?")
    assert dm_replies(fake) == ["Nothing waits on you right now."]
    run = bot.start()
    header = bot.store.questions.pending(run.id)
    assert header is not None
    dm(bot, "what's waiting on me?")
    said = dm_replies(fake)[-1]
    assert said.startswith("*Waiting on you (1)*") and "October 2026" in said
    assert f"/thread/{run.thread_ts}" in said  # a link to the form's thread
    dm(bot, "what's waiting on me?", user="UCOLLEAGUE")  # not theirs to answer
    assert dm_replies(fake, "UCOLLEAGUE") == ["Nothing waits on you right now."]


def test_close_october_in_a_dm_starts_the_same_close_in_the_teams_channel(
    bot: Harness, fake: FakeSlack
) -> None:
    dm(bot, "close")  # two periods are open: a form asks which, the earliest recommended
    assert dm_replies(fake) == ["Which period do you want to close?"]
    (form,) = [p for p in fake.to("chat.postMessage") if p["channel"] == "DUALICE"]
    assert "October 2026" in json.dumps(form["blocks"]) and "November 2026" in json.dumps(
        form["blocks"]
    )
    assert bot.store.runs.recent() == []
    # No close channel is known yet: a close never runs in the DM (its approvers could not
    # see it, and the starter may not approve their own close); the person is told where.
    dm(bot, "Close October please")
    assert bot.store.runs.recent() == []
    said = dm_replies(fake)[-1]
    assert "/close 2026-10" in said and "approvers" in said
    # Once the team's closes run in a channel, "close October" in the DM starts it there.
    november = bot.start("2026-11", channel="CFIN")
    dm(bot, "Close October please")
    run = bot.store.runs.recent(limit=1)[0]
    assert run.id != november.id
    assert (run.period, run.channel, run.started_by) == ("2026-10", "CFIN", "UALICE")
    run = bot.store.runs.get(run.id)
    assert run.thread_ts and run.status == "waiting"
    assert "<#CFIN>" in dm_replies(fake)[-1] and "October 2026" in dm_replies(fake)[-1]
    # In a channel the stream names whom it answers (the person who started it)
    starts = [p for p in fake.to("chat.startStream") if p["thread_ts"] == run.thread_ts]
    assert starts and starts[0]["recipient_user_id"] == "UALICE"
    assert starts[0]["task_display_mode"] == "plan"
    dm(bot, "close october")  # again: the live close is pointed to, not doubled
    assert "already under way" in dm_replies(fake)[-1]
    assert f"/thread/{run.thread_ts}" in dm_replies(fake)[-1]  # a thread everyone can open
    assert len(bot.store.runs.recent()) == 2


def test_a_configured_close_channel_takes_a_dm_start(fake: FakeSlack, db_path: Path) -> None:
    bot = Harness(fake, db_path, CLOSEBOT_CLOSE_CHANNEL="CFIN")
    try:
        dm(bot, "close 2026-10")
        (run,) = bot.store.runs.recent()
        assert (run.channel, run.started_by) == ("CFIN", "UALICE")
    finally:
        bot.close()


def test_a_dm_start_in_a_close_channel_without_the_bot_tells_the_starter_in_the_dm(
    fake: FakeSlack, db_path: Path
) -> None:
    fake.channels["CNOBOT"] = Channel("CNOBOT", "finance", {"UALICE", "UAPPROVER"})
    bot = Harness(fake, db_path, CLOSEBOT_CLOSE_CHANNEL="CNOBOT")
    try:
        dm(bot, "close 2026-10")
        (run,) = bot.store.runs.recent()
        assert bot.store.runs.get(run.id).status == "failed"
        assert fake.wait_for(lambda: any("/invite @closebot" in t for t in dm_replies(fake)))
    finally:
        bot.close()


def test_open_items_and_who_decided_are_answered_from_the_books(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    bot.finish(run.id)
    dm(bot, "Open items")
    said = dm_replies(fake)[-1]
    assert said.startswith("*Open items (") and "— Alice, due 2026-11-15" in said  # by name
    dm(bot, "who decided Baker?")
    said = dm_replies(fake)[-1]
    assert "Baker" in said and "decided by Alice" in said and "(user)" not in said  # no stored word


def test_the_messages_tab_gets_its_suggested_prompts_the_agent_view_way(
    bot: Harness, fake: FakeSlack
) -> None:
    # The manifest ships agent_view (Slack's default since 2026-06-30): prompts set with an
    # assistant thread's thread_ts answer ok and show nothing; they belong on app_home_opened
    # with tab "messages", on the DM with no thread_ts (docs.slack.dev/ai/agent-entry-and-interaction).
    assert fake.feature() == "agent_view"
    body = json.loads(
        (Path(__file__).parent / "payloads/bolt-python/thread_started_event_body.json").read_text()
    )
    response = bot.dispatch(json.dumps(body), JSON)
    assert response.status == 200
    bot.idle()
    event(
        bot,
        {
            "type": "app_home_opened",
            "user": "UALICE",
            "channel": "DUALICE",
            "tab": "messages",
            "event_ts": "2.0",
        },
    )
    assert fake.wait_for(lambda: bool(fake.prompts))
    assert fake.ineffective_prompts == []  # nothing Slack would silently drop
    (call,) = fake.to("assistant.threads.setSuggestedPrompts")
    assert call["channel_id"] == "DUALICE" and not call.get("thread_ts")
    shown = fake.prompts["DUALICE:"]
    assert [p["title"] for p in shown["prompts"]] == [
        "Close last month",
        "What's waiting on me?",
        "Open items",
    ]


def test_under_agent_view_prompts_with_a_thread_ts_are_answered_ok_and_shown_nowhere(
    fake: FakeSlack,
) -> None:
    from slack_sdk import WebClient

    client = WebClient(token="xoxb-test", base_url=fake.api_url)
    prompts = [{"title": "Close", "message": "close"}]
    fake.agent_feature = "agent_view"
    assert client.assistant_threads_setSuggestedPrompts(
        channel_id="D1", thread_ts="1.0", prompts=prompts
    )["ok"]
    assert fake.prompts == {} and fake.ineffective_prompts[0]["thread_ts"] == "1.0"
    fake.agent_feature = "assistant_view"  # the legacy view: a thread's prompts need its ts
    client.assistant_threads_setSuggestedPrompts(channel_id="D1", thread_ts="1.0", prompts=prompts)
    assert fake.prompts["D1:1.0"]["prompts"] == prompts


def test_status_and_whats_open_in_a_closes_thread_are_answered_privately_form_pending(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    assert bot.store.questions.pending(run.id) is not None
    before = len(fake.thread(run.thread_ts or ""))
    bot.say(run, "status")
    bot.idle()
    assert fake.wait_for(lambda: bool(bot.ephemerals_to("UALICE")))
    assert "Waiting on" in bot.ephemerals_to("UALICE")[-1]
    bot.say(run, "what's open?", user="UAPPROVER")
    bot.idle()
    assert fake.wait_for(lambda: bool(bot.ephemerals_to("UAPPROVER")))
    assert len(fake.thread(run.thread_ts or "")) == before  # the thread stays quiet
    assert bot.store.inbox.take(run.id) == []  # not held for the agent

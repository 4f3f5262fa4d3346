"""Slack's scopes, as the fake enforces them with the manifest closebot ships: a method whose
scope was not granted answers `missing_scope` (needed, provided), and a close works with
those scopes alone — a root post that fails once still opens the thread, and a second
`/close` of the period links a thread that exists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.sandbox.slack_api import FakeSlack, fake_slack
from bot.sandbox.slack_api.scopes import METHOD_SCOPES, manifest_grants
from tests.conftest import WI_QUESTION, Clock, ScriptedModel, ask_input, text, tool_use
from tests.slack_harness import Harness

Q = "toolu_q1"


def test_the_fake_refuses_a_method_whose_scope_was_not_granted_as_slack_does() -> None:
    with fake_slack(scopes=["chat:write", "im:history"]) as fake:
        fake.tiers.off()  # scopes, not rate tiers: history is read more than once a minute
        client = WebClient(token="xoxb-test", base_url=fake.api_url)
        with pytest.raises(SlackApiError) as e:
            client.users_info(user="UALICE")
        assert e.value.response.data == {
            "ok": False,
            "error": "missing_scope",
            "needed": "users:read",
            "provided": "chat:write,im:history",
        }
        # the history scope follows the conversation's kind: a DM's is granted, a channel's not
        assert client.conversations_history(channel="DUALICE")["ok"]
        with pytest.raises(SlackApiError) as e:
            client.conversations_history(channel="CFIN")
        assert e.value.response["needed"] == "channels:history"
        assert client.chat_postMessage(channel="CFIN", text="hi")["ok"]
        assert client.auth_test()["ok"]  # no scope required
        fake.grant("channels:history")
        assert client.conversations_history(channel="CFIN")["ok"]


def test_the_fake_grants_what_the_manifest_asks_for_by_default(fake: FakeSlack) -> None:
    assert fake.grants == manifest_grants()
    assert "chat:write" in fake.grants.scopes and "channels:history" not in fake.grants.scopes


def test_every_method_the_fake_answers_has_its_scope_in_the_table(fake: FakeSlack) -> None:
    answered = {
        name.removeprefix("m_").replace("_", ".")
        for name in dir(fake)
        if name.startswith("m_") and callable(getattr(fake, name))
    }
    assert answered <= set(METHOD_SCOPES), answered - set(METHOD_SCOPES)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path, clock: Clock) -> Iterator[Harness]:
    model = ScriptedModel()
    model.enqueue(
        text("Checking the WI."), tool_use(Q, "ask_user_question", **ask_input(WI_QUESTION))
    )
    model.enqueue(text("All done."))
    h = Harness(fake, db_path, model=model, clock=clock)
    yield h
    h.close()


def is_root(params: dict[str, Any]) -> bool:
    return not params.get("thread_ts")


def test_a_close_whose_first_root_post_fails_opens_its_thread_with_the_shipped_scopes(
    bot: Harness, fake: FakeSlack, clock: Clock
) -> None:
    fake.fail("chat.postMessage", status=500, when=is_root)
    bot.command("2026-10")
    bot.idle()
    (run,) = bot.store.runs.recent()
    assert run.thread_ts is None
    clock.advance(minutes=3)
    assert bot.service.work.heal()["runs"] == [run.id]
    bot.idle()
    run = bot.store.runs.get(run.id)
    assert run.thread_ts and run.thread_ts in fake.messages  # the thread opened
    assert bot.store.questions.get(Q).message_ts  # and the close went on in it
    # a second /close of the period links the thread that exists
    bot.command("2026-10", user="UAPPROVER")
    assert fake.wait_for(
        lambda: any("already under way" in (r.get("text") or "") for r in fake.responses)
    )
    (said,) = [r["text"] for r in fake.responses if "already under way" in (r.get("text") or "")]
    assert f"/thread/{run.thread_ts}|open its thread>" in said
    bot.submit(Q, {1: 1})
    bot.idle()
    assert bot.store.runs.get(run.id).status == "done"


def test_a_close_whose_thread_never_opens_tells_its_starter_why_and_how_to_go_on(
    bot: Harness, fake: FakeSlack, clock: Clock
) -> None:
    fake.fail("chat.postMessage", status=500, times=50, when=is_root)
    bot.command("2026-10")
    bot.idle()
    (run,) = bot.store.runs.recent()
    work = bot.service.work
    for _ in range(work.max_attempts):
        clock.advance(hours=2)  # past any backoff
        assert work.heal()["runs"] == [run.id]
        bot.idle()
    clock.advance(hours=2)
    assert work.heal()["failed"] == [run.id]
    bot.idle()
    assert bot.store.runs.get(run.id).status == "failed"
    told = [p["text"] for p in fake.to("chat.postMessage") if p["channel"] == "DUALICE"]
    assert len(told) == 1 and "could not open the thread of the October 2026 close" in told[0]
    assert "Run `/close 2026-10` to start it again" in told[0]
    assert f"in <#{run.channel}>:" in told[0]  # a channel link, not escaped text
    fake.clear_faults()
    bot.command("2026-10")  # the way forward works
    bot.idle()
    again = bot.store.runs.recent(limit=1)[0]
    assert again.id != run.id and again.thread_ts in fake.messages

"""Slack's rate limits in the one fake (per-method tiers on a clock the tests move, the status
line's two minutes), and closebot's budget of calls within them: the Home tab sent again to
exactly the people whose view changed, the status line folded to a few calls per turn."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.close.playbook import PlaybookModel
from bot.sandbox.slack_api import FakeSlack
from bot.sandbox.slack_api.tiers import LIMITS, TIER
from tests import slack_payloads as sp
from tests.slack_harness import Harness


def bare(fake: FakeSlack) -> WebClient:
    """A client with no 429 retries: each answer as the fake gives it."""
    return WebClient(token="xoxb-test-token", base_url=fake.api_url, retry_handlers=[])


def test_past_its_tier_a_method_is_answered_ratelimited_with_retry_after(fake: FakeSlack) -> None:
    fake.clock.freeze()
    client = bare(fake)
    assert LIMITS["conversations.open"].per_minute == TIER[3] == 50
    for _ in range(50):
        client.conversations_open(users="UALICE")
    with pytest.raises(SlackApiError) as refused:
        client.conversations_open(users="UALICE")
    assert refused.value.response.status_code == 429
    assert refused.value.response["error"] == "ratelimited"
    wait = int(refused.value.response.headers["Retry-After"])
    assert 1 <= wait <= 60
    fake.clock.advance(wait)  # the minute has passed on the fake's clock: allowed again
    assert client.conversations_open(users="UALICE")["ok"]


def test_history_is_one_call_a_minute_and_fifteen_messages_a_page(fake: FakeSlack) -> None:
    fake.clock.freeze()
    client = bare(fake)
    for n in range(20):  # in Alice's DM with the bot: the manifest grants im:history
        client.chat_postMessage(channel="DUALICE", text=f"message {n}")
    page = client.conversations_history(channel="DUALICE", limit=200)
    assert len(page["messages"]) == 15 and page["has_more"]
    with pytest.raises(SlackApiError) as refused:
        client.conversations_history(channel="DUALICE", limit=15)
    assert refused.value.response.status_code == 429
    fake.clock.advance(int(refused.value.response.headers["Retry-After"]))
    cursor = page["response_metadata"]["next_cursor"]
    assert len(client.conversations_history(channel="DUALICE", cursor=cursor)["messages"]) == 5


def test_chat_post_message_is_held_per_channel(fake: FakeSlack) -> None:
    fake.clock.freeze()
    client = bare(fake)
    for n in range(60):
        client.chat_postMessage(channel="CFIN", text=f"{n}")
    with pytest.raises(SlackApiError):
        client.chat_postMessage(channel="CFIN", text="one too many")
    assert client.chat_postMessage(channel="COPS", text="another channel")["ok"]


def test_a_test_not_about_rate_limits_may_scale_them_or_turn_them_off(fake: FakeSlack) -> None:
    fake.clock.freeze()
    client = bare(fake)
    fake.tiers.scale(2)
    for _ in range(2):
        client.conversations_history(channel="DUALICE")
    with pytest.raises(SlackApiError):
        client.conversations_history(channel="DUALICE")
    fake.tiers.off()
    for _ in range(5):
        client.conversations_history(channel="DUALICE")


def test_the_bots_client_waits_retry_after_on_the_fakes_clock_not_in_real_time(
    fake: FakeSlack,
) -> None:
    from bot.slack.client import KeepAliveWebClient, RateLimitRetryHandler

    client = KeepAliveWebClient(
        token="xoxb-test-token",
        base_url=fake.api_url,
        retry_handlers=[RateLimitRetryHandler(max_retry_count=3)],
    )
    started = time.monotonic()
    read_at = fake.clock.now()
    client.conversations_history(channel="DUALICE")
    client.conversations_history(channel="DUALICE")  # 429, Retry-After ~60 s: waited virtually
    assert fake.clock.now() - read_at >= 59
    assert time.monotonic() - started < 10
    assert [m for m, _ in fake.tiers.refused] == ["conversations.history"]


def test_a_status_clears_itself_after_two_minutes_without_a_message(fake: FakeSlack) -> None:
    fake.clock.freeze()
    client = bare(fake)
    root = client.chat_postMessage(channel="CFIN", text="the close")["ts"]
    client.assistant_threads_setStatus(channel_id="CFIN", thread_ts=root, status="is working…")
    fake.clock.advance(119)
    assert fake.status_of("CFIN", root) is not None
    fake.clock.advance(1)
    assert fake.status_of("CFIN", root) is None


# -- closebot's budget -----------------------------------------------------------------


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


_n = iter(range(1, 10_000))


def open_home(bot: Harness, user: str) -> None:
    inner = {"type": "app_home_opened", "user": user, "channel": "D0HOME", "tab": "home"}
    response = bot.dispatch(sp.event(inner, event_id=f"EvBudget{next(_n)}"), "application/json")
    assert response.status == 200, response.body
    bot.idle()


def shown(view: dict[str, Any]) -> str:
    """What a Home view reads (the block ids Slack adds left out)."""
    blocks = [{k: v for k, v in b.items() if k != "block_id"} for b in view["blocks"]]
    return json.dumps(blocks, sort_keys=True, ensure_ascii=False)


def test_after_an_answer_the_home_tab_is_sent_again_to_exactly_those_whose_view_changed(
    bot: Harness, fake: FakeSlack
) -> None:
    viewers = ("UALICE", "UAPPROVER", "UBEN")  # the starter, an approver, a bystander
    for user in viewers:
        open_home(bot, user)
    run = bot.start()
    desk = bot.service.presenter.on_state_change.__self__  # type: ignore[union-attr]

    def answered(answer: Any) -> list[str]:
        """Answer; the viewers whose Home reads differently now, each checked sent once."""
        before = {u: shown(fake.homes[u]) for u in viewers}
        sent_before = len(fake.to("views.publish"))
        answer()
        bot.idle()
        assert bot.store.runs.get(run.id).status == "waiting"
        now = {u: shown(desk.home_view(u)) for u in viewers}
        changed = sorted(u for u in viewers if now[u] != before[u])
        sent = sorted(p["user_id"] for p in fake.to("views.publish")[sent_before:])
        assert sent == changed  # each whose view changed, once; nobody else
        assert all(shown(fake.homes[u]) == now[u] for u in viewers)  # every Home reads as it is
        return changed

    first = bot.pending(run.id)
    # the next question waits on the same people: no Home reads differently, none is sent
    assert answered(lambda: bot.submit(first, bot.recommended_picks(first))) == []
    assert bot.pending(run.id) != first
    # the posting approval waits on the approvers, no longer on Alice (who may not approve)
    changed = answered(lambda: bot.answer_until(run.id, "Posting"))
    assert "UALICE" in changed and "UAPPROVER" in changed and "UBEN" not in changed


def test_the_status_line_costs_a_few_calls_a_turn_not_one_a_step(
    bot: Harness, fake: FakeSlack
) -> None:
    started = time.monotonic()
    run = bot.start()
    bot.finish(run.id)
    elapsed = time.monotonic() - started
    assert bot.store.runs.get(run.id).status == "done"
    turns = 1 + len([q for q in bot.store.questions.of_run(run.id) if q.status == "answered"])
    calls = len(fake.to("assistant.threads.setStatus"))
    # one to show it and one to clear it a turn, and one more each 20 s a turn runs on
    assert calls <= 2 * turns + int(elapsed / 20) + 1, (calls, turns, elapsed)


# -- a whole close against the tiers: calls counted, budget from the tiers ------------------

THINK_SECONDS = 30.0  # a person reads a form and answers it (bench/slack_budget.py's pace)
MODEL_SECONDS = 3.0  # one reply of the model
AT_ONCE = 20  # closes running at once in one workspace (issue 27)


class PacedPlaybook:
    """The offline playbook, each reply taking MODEL_SECONDS on the fake Slack's clock."""

    name = "offline-playbook"

    def __init__(self, fake: FakeSlack) -> None:
        self.inner = PlaybookModel()
        self.fake = fake
        self.replies = 0

    def respond(self, **kw: Any) -> Any:
        self.replies += 1
        self.fake.advance(MODEL_SECONDS)
        return self.inner.respond(**kw)


def test_a_close_calls_each_method_within_its_tier_for_twenty_closes_at_once(
    fake: FakeSlack, db_path: Path
) -> None:
    """Every Web API call of one whole close (five Home tabs open, the approvers approving in
    the thread and in their DMs), counted by method, within its share of the method's tier
    when 20 closes run at once at the pace above: calls ≤ tier a minute × the close's length
    in minutes (its people's and its model's time) / 20. Counts, not time: the clock is the
    fake's, moved by the pace."""
    model = PacedPlaybook(fake)
    bot = Harness(fake, db_path, model=model)
    try:
        bot.service.presenter.status.clock = fake.now  # the presenter's folds on the same pace
        for user in ("UALICE", "UAPPROVER", "UAPPROVER2", "UVIEW0", "UVIEW1"):
            open_home(bot, user)
        before = len(fake.calls)
        run = bot.start()
        approvers = {"Posting": "UAPPROVER", "Second approval": "UAPPROVER2"}
        decisions = 0
        while (record := bot.store.questions.pending(run.id)) is not None and decisions < 40:
            fake.advance(THINK_SECONDS)
            bot.service.presenter.draw_owed_plans()  # the watchdog's tick, once the person took
            who = approvers.get(record.questions[0].get("header") or "", "UALICE")
            bot.submit(record.id, bot.recommended_picks(record.id), user=who)
            bot.idle()
            decisions += 1
        assert bot.store.runs.get(run.id).status == "done" and decisions >= 5
        minutes = (decisions * THINK_SECONDS + model.replies * MODEL_SECONDS) / 60
        calls: dict[str, int] = {}
        for call in fake.calls[before:]:
            calls[call.method] = calls.get(call.method, 0) + 1
        over = {}
        for method, count in sorted(calls.items()):
            limit = LIMITS.get(method)
            if limit is None or limit.per == "channel":  # chat.postMessage: a channel each
                continue
            share = limit.per_minute * minutes / AT_ONCE
            if count > share:
                over[method] = (count, round(share, 1), round(count / decisions, 2))
        assert over == {}, f"over their share of the tier (calls, share, a decision): {over}"
    finally:
        bot.close()


def test_an_answered_form_turns_read_only_through_its_response_url_not_chat_update(
    bot: Harness, fake: FakeSlack
) -> None:
    """The form answered on is replaced through the interaction's response_url
    (replace_original: no Web API call, no tier); where Slack refuses it (used up or expired:
    5 uses in 30 minutes), chat.update does it instead."""

    def live(ts: str) -> bool:
        return any(b["type"] in ("input", "actions") for b in fake.messages[ts]["blocks"])

    run = bot.start()
    first = bot.pending(run.id)
    ts = bot.form_of(first)["ts"]
    bot.submit(first, bot.recommended_picks(first))
    bot.idle()
    assert fake.wait_for(lambda: not live(ts))
    assert [p for p in fake.to("chat.update") if p["ts"] == ts] == []
    assert [r for r in fake.responses if r.get("replace_original")]

    second = bot.pending(run.id)
    ts = bot.form_of(second)["ts"]
    fake.fail("response_url", status=404, error="expired_url")
    bot.submit(second, bot.recommended_picks(second))
    bot.idle()
    assert fake.wait_for(lambda: not live(ts))
    assert len([p for p in fake.to("chat.update") if p["ts"] == ts]) == 1

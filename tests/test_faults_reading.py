"""Who may read what in the DM and the App Home (issue 31). A colleague read every close's
amounts, decisions and who decided through the DM ("what's open?", "who decided …?") and the
Home tab, a close in a private channel she is not in included; a person of another team saw
the workspace's closes in Home. Now a close's amounts and decisions go only to the people on
it — its starter, the approvers, finance (CLOSEBOT_FINANCE), whoever decided in it, and the
members of its channel (conversations.members) — nothing to another team, and everyone else
is told "You are not on the … close", each refusal audited. Signed events to the real app on
the one fake Slack; Carol (UCAROL) is nobody on the close, Gina (UGINA) only a member of the
private channel it runs in, Eve (UEVE) of another team."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.sandbox.slack_api import BOT_USER, Channel, FakeSlack, Person
from tests import slack_payloads as sp
from tests.slack_harness import Harness

JSON = "application/json"
PRIVATE = "GCLOSE"  # the private channel the close runs in
COLLEAGUE, MEMBER, OUTSIDER = "UCAROL", "UGINA", "UEVE"
NOT_ON = "You are not on the October 2026 close"
_n = iter(range(1, 10_000))


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    members = {BOT_USER, "UALICE", "UAPPROVER", "UAPPROVER2", MEMBER}  # approvers act there
    fake.channels[PRIVATE] = Channel(PRIVATE, "close-private", members)
    fake.people[OUTSIDER] = Person(OUTSIDER, "Eve Outside", team="T0OTHER")  # Slack Connect
    h = Harness(fake, db_path)
    yield h
    h.close()


@pytest.fixture
def closed(bot: Harness) -> Harness:
    """October closed and posted in the private channel by Alice (finance)."""
    run = bot.start(channel=PRIVATE)
    bot.finish(run.id)
    assert bot.store.runs.get(run.id).status == "done"
    return bot


def event(bot: Harness, inner: dict[str, Any]) -> None:
    response = bot.dispatch(sp.event(inner, event_id=f"EvRead{next(_n)}"), JSON)
    assert response.status == 200, response.body
    bot.idle()


def dm(bot: Harness, user: str, text: str, **more: Any) -> str:
    """`text` DMed by `user`: closebot's answer."""
    before = len(replies(bot.fake, user))
    event(
        bot,
        {
            "type": "message",
            "channel": f"D{user}",
            "channel_type": "im",
            "user": user,
            "text": text,
            "ts": f"1761909999.{next(_n):06d}",
            **more,
        },
    )
    assert bot.fake.wait_for(lambda: len(replies(bot.fake, user)) > before)
    return replies(bot.fake, user)[-1]


def replies(fake: FakeSlack, user: str) -> list[str]:
    return [p["text"] for p in fake.to("chat.postMessage") if p["channel"] == f"D{user}"]


def home(bot: Harness, user: str) -> str:
    event(bot, {"type": "app_home_opened", "user": user, "channel": f"D{user}", "tab": "home"})
    assert bot.fake.wait_for(lambda: user in bot.fake.homes)
    return json.dumps(bot.fake.homes[user]["blocks"], ensure_ascii=False)


def refusals(bot: Harness, user: str) -> list[dict[str, Any]]:
    rows = bot.store.query(
        "select run_id, detail from audit_events where kind = 'read_refused' and actor = ? "
        "order by id",
        (user,),
    )
    assert all(r["run_id"] is None for r in rows)  # on the register, never a close's own trail
    return [json.loads(r["detail"]) for r in rows]


def test_a_colleague_not_in_the_private_channel_reads_nothing_of_its_close(
    closed: Harness,
) -> None:
    bot = closed
    run_id = bot.store.runs.recent(limit=1)[0].id
    # Carol is not: no item, no decision, no status, nothing in Home; told she is not on it
    said = dm(bot, COLLEAGUE, "what's open?")
    assert "Open items (" not in said and "due 2026-11-15" not in said and NOT_ON in said
    said = dm(bot, COLLEAGUE, "who decided Baker?")
    assert "decided by" not in said and NOT_ON in said
    said = dm(bot, COLLEAGUE, "status")
    assert "finished" not in said and NOT_ON in said
    shown = home(bot, COLLEAGUE)
    for hidden in ("October 2026 — finished", "Open items (", "due 2026-11-15", "Latest files"):
        assert hidden not in shown, hidden
    assert NOT_ON in shown and f"decisions-2026-10-{run_id}" not in shown
    assert bot.fake.dead_links(COLLEAGUE) == []
    # every refusal audited, naming the close withheld and what was asked
    audited = refusals(bot, COLLEAGUE)
    assert [(r["where"], r["asked"]) for r in audited] == [
        ("dm", "open"),
        ("dm", "decided"),
        ("dm", "status"),
        ("home", "home"),
    ]
    assert all(r["runs"] == [run_id] and r["periods"] == ["2026-10"] for r in audited)
    # someone on the close reads it all: Gina only by being in the private channel
    said = dm(bot, MEMBER, "what's open?")
    assert said.startswith("*Open items (") and "due 2026-11-15" in said
    assert "decided by Alice" in dm(bot, MEMBER, "who decided Baker?")
    assert "October 2026 — finished" in home(bot, MEMBER)
    assert bot.fake.to("conversations.members")  # her membership asked of Slack
    assert refusals(bot, MEMBER) == []


def test_a_close_in_a_public_channel_is_read_by_its_members_not_by_others(
    bot: Harness, fake: FakeSlack
) -> None:
    fake.channels["CFIN"] = Channel("CFIN", "finance", {BOT_USER, "UALICE", "UDAVE"})
    run = bot.start()
    bot.finish(run.id)
    assert "decided by Alice" in dm(bot, "UDAVE", "who decided Baker?")  # in the channel
    said = dm(bot, COLLEAGUE, "who decided Baker?")
    assert "decided by" not in said and NOT_ON in said
    # an approver and someone in finance are on every close, in its channel or not
    assert "decided by Alice" in dm(bot, "UAPPROVER2", "who decided Baker?")


def test_a_person_of_another_team_sees_no_close_in_home_or_the_dm(closed: Harness) -> None:
    bot = closed
    shown = home(bot, OUTSIDER)
    assert "October 2026" not in shown and "Open items" not in shown and "Waiting" not in shown
    assert "another team" in shown
    said = dm(bot, OUTSIDER, "what's open?")
    assert "Open items (" not in said and "another team" in said
    # a payload naming another team for the person (a Slack Connect message) is refused too,
    # whatever users.info says of them
    said = dm(bot, "UFRANK", "who decided Baker?", user_team="T0OTHER")
    assert "decided by" not in said and "another team" in said
    assert [(r["where"], r["reason"]) for r in refusals(bot, OUTSIDER)] == [
        ("home", "another team"),
        ("dm", "another team"),
    ]
    assert [r["reason"] for r in refusals(bot, "UFRANK")] == ["another team"]


def test_the_home_tab_republished_on_every_change_audits_a_refusal_once(
    bot: Harness, fake: FakeSlack
) -> None:
    home(bot, COLLEAGUE)
    assert refusals(bot, COLLEAGUE) == []  # no close yet: nothing withheld
    run = bot.start(channel=PRIVATE)
    first = bot.pending(run.id)
    bot.submit(first, bot.recommended_picks(first))
    bot.idle()
    shown = json.dumps(fake.homes[COLLEAGUE]["blocks"], ensure_ascii=False)
    assert NOT_ON in shown and "October 2026 —" not in shown
    assert len(refusals(bot, COLLEAGUE)) == 1  # the same close withheld: audited once


def test_conversations_members_is_answered_as_slack_answers_it(fake: FakeSlack) -> None:
    """The fake's conversations.members (docs.slack.dev/reference/methods/conversations.members):
    the scope of the conversation's kind, pages by cursor, a private channel the bot is not
    in hidden from it."""
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    client = WebClient(token="xoxb-test", base_url=fake.api_url)
    fake.channels["CWIDE"] = Channel("CWIDE", "wide", {BOT_USER, *(f"U{n:03d}" for n in range(5))})
    fake.channels["GHIDDEN"] = Channel("GHIDDEN", "hidden", {"UALICE"})
    first = client.conversations_members(channel="CWIDE", limit=4)
    cursor = first["response_metadata"]["next_cursor"]
    rest = client.conversations_members(channel="CWIDE", limit=4, cursor=cursor)
    assert sorted(first["members"] + rest["members"]) == sorted(fake.channels["CWIDE"].members)
    assert rest["response_metadata"]["next_cursor"] == ""
    with pytest.raises(SlackApiError) as hidden:
        client.conversations_members(channel="GHIDDEN")
    assert hidden.value.response["error"] == "channel_not_found"
    with pytest.raises(SlackApiError) as limit:
        client.conversations_members(channel="CWIDE", limit=1000)
    assert limit.value.response["error"] == "invalid_limit"
    narrow = FakeSlack(scopes={"chat:write", "users:read"})
    refused = narrow.answer("conversations.members", {"channel": "GCLOSE"})[1]
    assert refused["error"] == "missing_scope" and refused["needed"] == "groups:read"
    assert narrow.answer("conversations.members", {"channel": "CFIN"})[1]["needed"] == (
        "channels:read"
    )


def test_without_the_read_scopes_a_channel_member_is_let_in_by_nothing(
    fake: FakeSlack, db_path: Path
) -> None:
    """A workspace that installed closebot before channels:read / groups:read: Slack answers
    missing_scope, and membership lets nobody in (the roles still do)."""
    members = {BOT_USER, "UALICE", "UAPPROVER", "UAPPROVER2", MEMBER}
    fake.channels[PRIVATE] = Channel(PRIVATE, "close-private", members)
    fake.grants = type(fake.grants)(
        fake.grants.scopes - {"channels:read", "groups:read"}, fake.grants.events
    )
    bot = Harness(fake, db_path)
    try:
        run = bot.start(channel=PRIVATE)
        bot.finish(run.id)
        said = dm(bot, MEMBER, "who decided Baker?")
        assert "decided by" not in said and NOT_ON in said
        assert fake.to("conversations.members")  # asked, and answered missing_scope
        assert "decided by Alice" in dm(bot, "UAPPROVER", "who decided Baker?")
    finally:
        bot.close()

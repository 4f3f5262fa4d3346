"""Names, never ids: who a Slack user id is comes from users.info (on the one fake of Slack),
once per person, cached in the store so it survives a restart and the console shows it;
refreshed after a day; a failed lookup shows the id and never fails the close."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.names import Names, Profile
from bot.sandbox.slack_api import FakeSlack, Person, fake_slack
from bot.slack_people import users_info
from bot.store import Store
from tests.conftest import Clock
from tests.slack_harness import Harness

PEOPLE = [
    Person("UALICE", "Alice Park", "Senior accountant"),
    Person("UAPPROVER", "Ben Ortiz", "Controller"),
    Person("UAPPROVER2", "Dana Reyes", "CFO"),
]


@pytest.fixture
def named() -> Iterator[FakeSlack]:
    """The fake Slack with the harness's people named."""
    with fake_slack(people=PEOPLE) as f:
        yield f


def test_users_info_answers_in_slacks_shape_and_refuses_an_unknown_user(named: FakeSlack) -> None:
    client = WebClient(token="xoxb-test", base_url=named.api_url)
    user = client.users_info(user="UAPPROVER")["user"]
    assert user["id"] == "UAPPROVER" and user["name"] == "ben.ortiz"
    assert user["real_name"] == "Ben Ortiz" and user["is_bot"] is False
    assert user["profile"]["real_name"] == "Ben Ortiz"
    assert user["profile"]["display_name"] == "Ben" and user["profile"]["title"] == "Controller"
    assert users_info(client)("UAPPROVER") == Profile("Ben Ortiz", "Ben", "ben.ortiz")
    strict = FakeSlack(auto_channels=False)  # a workspace that knows only its people
    with pytest.raises(Exception, match="user_not_found"):
        strict.m_users_info({"user": "UNOBODY"})


def test_a_whole_close_looks_each_person_up_once_and_keeps_the_names(
    named: FakeSlack, db_path: Path
) -> None:
    bot = Harness(named, db_path)
    try:
        run = bot.start()
        bot.finish(run.id)
        assert bot.store.run(run.id).status == "done"
    finally:
        bot.close()
    asked = [p["user"] for p in named.to("users.info")]
    assert sorted(asked) == sorted(set(asked))  # once per person
    assert {"UALICE", "UAPPROVER", "UAPPROVER2"} <= set(asked)
    # the names outlive the process: a new store on the file (the console) has them
    store = Store(db_path)
    try:
        names = Names(store)  # no Slack client at the console
        assert names("UALICE") == "Alice Park" and names("UAPPROVER2") == "Dana Reyes"
        assert names("alice") == "alice"  # a console identity is its OS login
        assert names(None) == "closebot" and names("UNKNOWN") == "UNKNOWN"
    finally:
        store.close()


def test_a_failing_users_info_shows_the_id_and_the_close_still_finishes(
    named: FakeSlack, db_path: Path
) -> None:
    named.fail("users.info", error="missing_scope", times=1_000)
    bot = Harness(named, db_path)
    try:
        run = bot.start()
        bot.finish(run.id)
        assert bot.store.run(run.id).status == "done"
        assert bot.service.presenter.names("UALICE") == "UALICE"
        # a failed lookup is not repeated on every message: once per person until retried
        asked = [p["user"] for p in named.to("users.info")]
        assert sorted(asked) == sorted(set(asked))
    finally:
        bot.close()


def test_a_name_is_refreshed_after_a_day_and_a_failure_keeps_the_old_one(db_path: Path) -> None:
    clock = Clock()
    store = Store(db_path, clock=clock)
    said = {"UALICE": Profile("Alice Park", "alice", "alice.park")}
    asked: list[str] = []

    def lookup(user_id: str) -> Profile:
        asked.append(user_id)
        if user_id not in said:
            raise SlackApiError("user_not_found", {"ok": False, "error": "user_not_found"})
        return said[user_id]

    try:
        names = Names(store, lookup)
        assert names("UALICE") == "Alice Park" and names("UALICE") == "Alice Park"
        assert asked == ["UALICE"]
        clock.advance(hours=23)
        assert names("UALICE") == "Alice Park" and asked == ["UALICE"]
        said["UALICE"] = Profile("Alice Park-Lee", "alice", "alice.park")
        clock.advance(hours=2)  # more than a day since it was fetched
        assert names("UALICE") == "Alice Park-Lee" and asked == ["UALICE"] * 2
        del said["UALICE"]  # Slack no longer answers: the last name it gave is kept
        clock.advance(days=2)
        assert names("UALICE") == "Alice Park-Lee"
        assert names("UGHOST") == "UGHOST" and names("UGHOST") == "UGHOST"
        assert asked.count("UGHOST") == 1  # not asked again at once
        clock.advance(minutes=11)
        assert names("UGHOST") == "UGHOST" and asked.count("UGHOST") == 2
        assert names.cached("UALICE") == "Alice Park-Lee" and len(asked) == 5
    finally:
        store.close()

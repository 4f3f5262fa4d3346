"""Settings in Slack (issue 32): the Home tab's Settings section for workspace admins and the
settings owners named at install (users.info is_admin / is_owner), its modal, a Save stored
for the workspace and audited (who, old → new), refused values answered in the modal, and the
settings in effect for the next close — the whole five-minute path: approvers picked in Slack,
a first /close approved by them, and `closebot doctor --slack` green."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.close import Ledger
from bot.console.cli import main
from bot.sandbox.slack_api import TEAM_ID, FakeSlack, fake_slack
from bot.sandbox.slack_api.workspace import BOT_USER, Channel, Person
from bot.slack.settings import CALLBACK_ID, OPEN_ACTION
from bot.slack.settings_apply import holders
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness

PEOPLE = [
    Person("UADMIN", "Ada Admin", role="admin"),
    Person("UOWNER", "Owen Owner", role="primary_owner"),
    Person("UALICE", "Alice Ames"),
    Person("UAPPROVER", "Pat Approver"),
    Person("UAPPROVER2", "Sam Second"),
    Person("UCAROL", "Carol Cole"),
]


@pytest.fixture
def slack() -> Any:
    with fake_slack(people=PEOPLE, channels=[Channel("CFIN", "finance", {BOT_USER})]) as fake:
        yield fake


def open_home(bot: Harness, user: str) -> dict[str, Any]:
    event = {"type": "app_home_opened", "user": user, "channel": f"D{user}", "tab": "home"}
    body = sp.event(event, event_id=f"EvHome{user}{time.monotonic_ns()}")
    assert bot.dispatch(body, "application/json").status == 200
    bot.idle()
    return bot.fake.homes[user]


def settings_text(home: dict[str, Any]) -> str:
    return "\n".join(
        b["text"]["text"]
        for b in home["blocks"]
        if b.get("type") == "section" and b["text"]["text"].startswith("*Settings*")
    )


def change_settings(bot: Harness, home: dict[str, Any], user: str) -> dict[str, Any]:
    """Click the Home tab's "Change settings": the block_actions payload Slack sends from a
    view (container type "view"); the modal opened for `user`."""
    button = next(
        b["accessory"]
        for b in home["blocks"]
        if (b.get("accessory") or {}).get("action_id") == OPEN_ACTION
    )
    payload = {
        "type": "block_actions",
        "team": sp.TEAM,
        "user": {"id": user, "username": user.lower(), "team_id": TEAM_ID},
        "api_app_id": "A0001",
        "token": "legacy",
        "container": {"type": "view", "view_id": home["id"]},
        "trigger_id": bot.fake.issue_trigger(user),
        "view": home,
        "actions": [
            {
                "type": "button",
                "action_id": OPEN_ACTION,
                "block_id": "settings",
                "value": button["value"],
                "action_ts": str(time.time()),
            }
        ],
    }
    assert bot.dispatch(urlencode({"payload": json.dumps(payload)}), FORM).status == 200
    bot.idle()
    return bot.fake.modals[user]


def submit(bot: Harness, modal: dict[str, Any], user: str, **picked: Any) -> dict[str, Any]:
    """Save the modal with these values (block id → the element's state), as Slack sends a
    view_submission; the bot's answer ({} when it just closes the modal)."""
    values = {}
    for block in modal["blocks"]:
        element = block["element"]
        kind, given = element["type"], picked.get(block["block_id"])
        if kind == "multi_users_select":
            state = {
                "selected_users": given if given is not None else element.get("initial_users", [])
            }
        elif kind == "conversations_select":
            state = {"selected_conversation": given or element.get("initial_conversation")}
        else:
            state = {"value": given if given is not None else element.get("initial_value")}
        values[block["block_id"]] = {element["action_id"]: {"type": kind, **state}}
    payload = {
        "type": "view_submission",
        "team": sp.TEAM,
        "user": {"id": user, "username": user.lower(), "team_id": TEAM_ID},
        "api_app_id": "A0001",
        "token": "legacy",
        "trigger_id": bot.fake.issue_trigger(user),
        "view": {**modal, "team_id": TEAM_ID, "state": {"values": values}},
        "response_urls": [],
    }
    response = bot.dispatch(urlencode({"payload": json.dumps(payload)}), FORM)
    assert response.status == 200, response.body
    bot.idle()
    return json.loads(response.body) if response.body else {}


def test_only_admins_owners_and_named_settings_owners_see_settings(
    slack: FakeSlack, db_path: Path
) -> None:
    bot = Harness(slack, db_path, CLOSEBOT_SETTINGS_OWNERS="UCAROL")
    try:
        for user in ("UADMIN", "UOWNER", "UCAROL"):
            text = settings_text(open_home(bot, user))
            assert "*Approvers*: <@UAPPROVER>, <@UAPPROVER2>" in text, user
            assert "*Approval limit*: $250,000.00" in text
        assert settings_text(open_home(bot, "UALICE")) == ""
        # who is an admin is Slack's word: users.info, as the user object's is_admin/is_owner
        asked = [c.params.get("user") for c in slack.calls if c.method == "users.info"]
        assert {"UADMIN", "UOWNER", "UALICE"} <= set(asked)
        # once per person: the names came with the answer and are kept (store.people)
        assert sorted(asked) == sorted(set(asked))
        assert bot.service.presenter.names("UADMIN") == "Ada Admin"
        assert [c.params.get("user") for c in slack.calls if c.method == "users.info"] == asked
    finally:
        bot.close()


def test_a_save_is_stored_audited_shown_and_in_effect(slack: FakeSlack, db_path: Path) -> None:
    bot = Harness(slack, db_path)
    try:
        home = open_home(bot, "UADMIN")
        modal = change_settings(bot, home, "UADMIN")
        assert modal["callback_id"] == CALLBACK_ID
        kinds = {b["block_id"]: b["element"]["type"] for b in modal["blocks"]}
        assert kinds == {
            "approvers": "multi_users_select",
            "approval_limit": "number_input",
            "close_channel": "conversations_select",
            "data_dir": "plain_text_input",
        }
        old = bot.service.presenter.approvers
        answer = submit(
            bot,
            modal,
            "UADMIN",
            approvers=["UCAROL", "UAPPROVER"],
            approval_limit="5000000",
            close_channel="CFIN",
        )
        assert answer == {}
        stored = bot.store.settings.of(TEAM_ID)
        assert stored["CLOSEBOT_APPROVERS"] == "UAPPROVER,UCAROL"
        assert stored["CLOSEBOT_APPROVAL_LIMIT"] == "5000000"
        assert stored["CLOSEBOT_CLOSE_CHANNEL"] == "CFIN"
        assert "CLOSEBOT_DATA" not in stored  # unchanged: the environment's stays
        events = bot.store.settings.history(TEAM_ID)
        changes = {e.detail["setting"]: (e.detail["old"], e.detail["new"]) for e in events}
        assert changes == {
            "CLOSEBOT_APPROVERS": ("", "UAPPROVER,UCAROL"),
            "CLOSEBOT_APPROVAL_LIMIT": ("", "5000000"),
            "CLOSEBOT_CLOSE_CHANNEL": ("", "CFIN"),
        }
        assert {e.actor for e in events} == {"UADMIN"}
        assert bot.store.audit.register_problems() == []  # the register's chain holds them
        # the Home tab shows them (republished), marked as set in Slack
        text = settings_text(slack.homes["UADMIN"])
        assert "*Approvers*: <@UAPPROVER>, <@UCAROL> _(set in Slack)_" in text
        assert "*Approval limit*: $5,000,000.00" in text and "<#CFIN>" in text
        # every part of the running bot holds the new values; none the old
        service = bot.service
        assert service.presenter.approvers == frozenset({"UAPPROVER", "UCAROL"})
        assert service.presenter.messages.approval_limit == 5000000
        settings = service.settings
        assert settings is not None
        left = holders(settings.parts, settings.defaults)
        assert not [h for h in left if h.name in ("approvers", "approval_limit", "close_channel")]
        assert old == frozenset({"UAPPROVER", "UAPPROVER2"})
    finally:
        bot.close()


def test_a_save_by_someone_not_an_admin_or_with_a_bad_value_changes_nothing(
    slack: FakeSlack, db_path: Path
) -> None:
    bot = Harness(slack, db_path)
    try:
        modal = change_settings(bot, open_home(bot, "UADMIN"), "UADMIN")
        # a modal proves nothing: the person saving is asked about again
        answer = submit(bot, modal, "UALICE", approvers=["UALICE"])
        assert answer["response_action"] == "errors"
        assert "Only a workspace admin" in answer["errors"]["approvers"]
        answer = submit(bot, modal, "UADMIN", data_dir="/no/such/folder")
        assert answer == {
            "response_action": "errors",
            "errors": {"data_dir": "no such directory"},
        }
        answer = submit(bot, modal, "UADMIN", approval_limit="-5")
        assert answer["response_action"] == "errors" and "approval_limit" in answer["errors"]
        assert bot.store.settings.of(TEAM_ID) == {}
        assert bot.store.settings.history(TEAM_ID) == []
        assert bot.service.presenter.approvers == frozenset({"UAPPROVER", "UAPPROVER2"})
    finally:
        bot.close()


def test_a_setting_unset_in_slack_gives_the_environments_back(
    slack: FakeSlack, db_path: Path
) -> None:
    bot = Harness(slack, db_path)
    try:
        modal = change_settings(bot, open_home(bot, "UADMIN"), "UADMIN")
        assert submit(bot, modal, "UADMIN", approvers=["UCAROL"]) == {}
        assert bot.service.presenter.approvers == frozenset({"UCAROL"})
        modal = change_settings(bot, slack.homes["UADMIN"], "UADMIN")
        assert submit(bot, modal, "UADMIN", approvers=[]) == {}
        assert bot.store.settings.of(TEAM_ID) == {}
        assert bot.service.presenter.approvers == frozenset({"UAPPROVER", "UAPPROVER2"})
        [first, second] = bot.store.settings.history(TEAM_ID)
        assert (first.detail["old"], first.detail["new"]) == ("", "UCAROL")
        assert (second.detail["old"], second.detail["new"]) == ("UCAROL", "")
    finally:
        bot.close()


def test_settings_set_in_slack_hold_after_a_restart(slack: FakeSlack, db_path: Path) -> None:
    bot = Harness(slack, db_path)
    try:
        modal = change_settings(bot, open_home(bot, "UADMIN"), "UADMIN")
        assert submit(bot, modal, "UADMIN", approvers=["UCAROL"], approval_limit="1000") == {}
    finally:
        bot.close()
    again = Harness(slack, db_path)
    try:
        assert again.service.presenter.approvers == frozenset({"UCAROL"})
        assert again.service.presenter.messages.approval_limit == 1000
    finally:
        again.close()


def test_five_minutes_from_install_to_a_first_close_approved_by_approvers_set_in_slack(
    slack: FakeSlack, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's install path against the fake Slack: the app installed from
    manifest.yml with no approvers, limit or channel in the environment; an admin opens the
    Home tab and sets them in Slack; the first /close asks the approvers set there, who
    approve it (the person who started it may not); `closebot doctor --slack` is green."""
    bot = Harness(slack, db_path, CLOSEBOT_APPROVERS="", CLOSEBOT_FINANCE="")
    try:
        assert bot.service.presenter.approvers == frozenset()  # nobody named at install
        home = open_home(bot, "UADMIN")
        assert "none — whoever starts a close approves it" in settings_text(home)
        modal = change_settings(bot, home, "UADMIN")
        saved = submit(
            bot,
            modal,
            "UADMIN",
            approvers=["UAPPROVER", "UAPPROVER2"],
            approval_limit="10000000",  # the sample's entries are all under it: one approval
            close_channel="CFIN",
        )
        assert saved == {}
        run = bot.start("2026-10", user="UALICE", channel="CFIN")
        posting = bot.answer_until(run.id, "Posting")
        form_text = json.dumps(bot.form_of(posting))
        assert "<@UAPPROVER>" in form_text and "<@UAPPROVER2>" in form_text
        # the starter may not approve her own close now that approvers are set
        bot.submit(posting, bot.recommended_picks(posting), user="UALICE")
        bot.idle()
        assert bot.store.questions.get(posting).status == "pending"
        bot.submit(posting, bot.recommended_picks(posting), user="UAPPROVER")
        bot.idle()
        # one approval posts (the limit set in Slack): no "Second approval" is asked
        bot.finish(run.id)
        asked = [r.questions[0].get("header") for r in bot.store.questions.of_run(run.id)]
        assert "Second approval" not in asked
        assert bot.store.runs.get(run.id).status == "done"
        batch = Ledger(bot.store).posted_batch("2026-10")
        assert batch is not None and Ledger(bot.store).approvers(batch) == ["UAPPROVER"]
    finally:
        bot.close()
    monkeypatch.setenv("CLOSEBOT_DB", str(db_path))
    monkeypatch.setenv("SLACK_API_URL", slack.api_url)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-install")
    monkeypatch.setenv("SLACK_CONFIG_TOKEN", "xoxe.xoxp-1-install")
    monkeypatch.setenv("SLACK_APP_ID", "A0SANDBOX")
    for name in ("CLOSEBOT_CLOSE_CHANNEL", "CLOSEBOT_APPROVERS", "CLOSEBOT_DATA"):
        monkeypatch.delenv(name, raising=False)
    out = io.StringIO()
    assert main(["doctor", "--slack"], out=out) == 0, out.getvalue()
    assert "#finance (CFIN): closebot is a member" in out.getvalue()

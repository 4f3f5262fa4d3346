"""Who can see what (issue 27): a whole close in a channel and a whole close started from
the DM, each answered and posted by people who click only in conversations they can see —
through the sandbox's Slack client against the fake, which refuses a click in a conversation
the person cannot open — and no dead link in anything the bot showed each of them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot import blocks
from bot.sandbox.client import ActionError
from bot.sandbox.run import APPROVER, COLLEAGUE, SECOND_APPROVER, STARTER, Sandbox
from bot.sandbox.slack_api import BOT_ID, Channel, FakeSlack, Person
from bot.store import Run

WAIT = 60
APPROVERS = {"Posting": APPROVER.id, "Second approval": SECOND_APPROVER.id}


def idle(sandbox: Sandbox) -> None:
    assert sandbox.service is not None and sandbox.service.runner.wait_idle(WAIT)


def the_run(sandbox: Sandbox) -> Run:
    assert sandbox.fake.wait_for(lambda: bool(sandbox.store.runs.recent()), timeout=WAIT)
    idle(sandbox)
    (run,) = sandbox.store.runs.recent()
    return sandbox.store.runs.get(run.id)


def picks_for(form: dict[str, Any]) -> dict[str, Any]:
    """What a person picks in a form: the recommended option (⭐) of each choice, a line of
    text in each box that is not optional; people and dates left as preselected."""
    picks: dict[str, Any] = {}
    for b in form["blocks"]:
        element = b.get("element") if b.get("type") == "input" else None
        if not element:
            continue
        options = element.get("options") or []
        if options:
            value = next(
                (o["value"] for o in options if "⭐" in o["text"]["text"]), options[0]["value"]
            )
            many = element["type"] in ("checkboxes", "multi_static_select")
            picks[b["block_id"]] = [value] if many else value
        elif element["type"] == "plain_text_input" and not b.get("optional"):
            # a box to fill (not "Other": typed there, it would be the answer)
            picks[b["block_id"]] = "Explained in the close file."
    return picks


def answer(sandbox: Sandbox, user: str, form: dict[str, Any]) -> None:
    """`user` answers the form as Slack's client would let them (ActionError where they
    cannot see it): its Approve button, or its Submit."""
    for b in form["blocks"]:
        for e in b.get("elements") or [] if b.get("type") == "actions" else []:
            approve = e["action_id"] == f"{blocks.CHOICE_ACTION}1"
            if approve or e["action_id"] == blocks.SUBMIT_ACTION:
                said = sandbox.client.action(
                    user=user,
                    channel=form["channel"],
                    message_ts=form["ts"],
                    block_id=b["block_id"],
                    action_id=e["action_id"],
                    picks=picks_for(form),
                )
                assert said["ok"], said
                return
    raise AssertionError("a form with nothing to click")


def finish(sandbox: Sandbox, run: Run) -> list[str]:
    """Every form answered by whom it waits on, in the conversation it was posted in, until
    the close ends; the headers of the approvals, in order."""
    approvals = []
    for _ in range(40):
        idle(sandbox)
        record = sandbox.store.questions.pending(run.id)
        if record is None:
            break
        assert record.message_ts, "a pending question with no form"
        header = record.questions[0].get("header") or ""
        who = APPROVERS.get(header, STARTER.id)
        if who != STARTER.id:
            approvals.append(header)
            told = approver_dm_links(sandbox.fake, who)
            # the approval reached the approver in their own DM, linked to the form's thread
            assert any(f"/#/{run.channel}/thread/{run.thread_ts}" in link for link in told)
        form = sandbox.fake.messages[record.message_ts]
        if header == "Second approval":  # the form in their own DM, answered there
            form = dm_form(sandbox.fake, who)
        answer(sandbox, who, form)
        sandbox.fake.wait_for(
            lambda r=record: sandbox.store.questions.get(r.id).status != "pending",  # type: ignore[misc]
            timeout=WAIT,
        )
    else:
        raise AssertionError("still asking after 40 forms")
    idle(sandbox)
    assert sandbox.fake.wait_for(lambda: live_forms(sandbox.fake) == [], timeout=WAIT), (
        live_forms(sandbox.fake)  # every copy settled, in the thread and in each DM
    )
    return approvals


def dm_form(fake: FakeSlack, user: str) -> dict[str, Any]:
    """The latest form in `user`'s DM with the bot."""
    with fake.lock:
        (*_, form) = [
            m
            for m in fake.sorted_messages()
            if m["channel"] == f"D{user}" and any(b["type"] == "actions" for b in m["blocks"])
        ]
        return form


def live_forms(fake: FakeSlack) -> list[str]:
    """Messages anywhere that still offer a form's buttons."""
    with fake.lock:
        return [
            f"{m['channel']}/{m['ts']}"
            for m in fake.sorted_messages()
            if any(
                e.get("action_id", "").startswith(("closebot_submit", "closebot_choose_"))
                for b in m["blocks"]
                if b["type"] == "actions"
                for e in b.get("elements") or []
            )
        ]


def approver_dm_links(fake: FakeSlack, user: str) -> list[str]:
    with fake.lock:
        return [
            link
            for m in fake.sorted_messages()
            if m["channel"] == f"D{user}" and m.get("bot_id") == BOT_ID
            for link in re.findall(r"<([^<>|]+)\|", m["text"] + str(m["blocks"]))
        ]


def no_dead_links(sandbox: Sandbox) -> None:
    """Everyone opens closebot's Home tab; no link anyone was shown leads nowhere."""
    for person in (STARTER, APPROVER, SECOND_APPROVER, COLLEAGUE):
        sandbox.client.home_opened(user=person.id)
    idle(sandbox)
    for person in (STARTER, APPROVER, SECOND_APPROVER, COLLEAGUE):
        assert sandbox.fake.wait_for(lambda p=person: p.id in sandbox.fake.homes, timeout=WAIT)  # type: ignore[misc]
        assert sandbox.fake.dead_links(person.id) == [], person.name


def test_a_whole_close_in_the_finance_channel_is_posted_by_approvers_who_can_see_it(
    sandbox: Sandbox,
) -> None:
    sandbox.client.say(user=STARTER.id, channel="CFINANCE", text="/close 2026-10")
    run = the_run(sandbox)
    assert run.channel == "CFINANCE"
    assert finish(sandbox, run) == ["Posting", "Second approval"]
    assert sandbox.store.runs.get(run.id).status == "done"
    no_dead_links(sandbox)


def test_a_close_started_in_the_dm_runs_in_the_finance_channel_and_is_posted_there(
    sandbox: Sandbox,
) -> None:
    sandbox.client.say(user=STARTER.id, channel=f"D{STARTER.id}", text="close 2026-10")
    run = the_run(sandbox)
    # never the starter's DM: the approvers could not see it, and the starter may not approve
    assert (run.channel, run.started_by) == ("CFINANCE", STARTER.id)
    said = [
        m["text"]
        for m in sandbox.fake.sorted_messages()
        if m["channel"] == f"D{STARTER.id}" and m.get("bot_id") == BOT_ID
    ]
    assert any("<#CFINANCE>" in t and "October 2026" in t for t in said), said
    assert finish(sandbox, run) == ["Posting", "Second approval"]
    assert sandbox.store.runs.get(run.id).status == "done"
    no_dead_links(sandbox)


# -- the fake's rule itself -------------------------------------------------------------


def test_nobody_clicks_in_someone_elses_dm_and_a_link_there_is_dead(sandbox: Sandbox) -> None:
    fake = sandbox.fake
    with fake.lock:
        form = fake.add_message(
            f"D{STARTER.id}",
            text="a form",
            user="UBOT",
            bot_id=BOT_ID,
            blocks=[
                {
                    "type": "actions",
                    "block_id": "b1",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": blocks.SUBMIT_ACTION,
                            "text": {"type": "plain_text", "text": "Submit"},
                        }
                    ],
                }
            ],
        )
        fake.add_message(
            f"D{APPROVER.id}",
            text=f"<{fake.url}/#/D{STARTER.id}/thread/{form['ts']}|the form>",
            user="UBOT",
            bot_id=BOT_ID,
        )
    assert fake.can_see(STARTER.id, f"D{STARTER.id}") and fake.can_see(APPROVER.id, "CFINANCE")
    assert not fake.can_see(APPROVER.id, f"D{STARTER.id}")
    with pytest.raises(ActionError, match="cannot see"):
        sandbox.client.action(
            user=APPROVER.id,
            channel=f"D{STARTER.id}",
            message_ts=form["ts"],
            block_id="b1",
            action_id=blocks.SUBMIT_ACTION,
            picks={},
        )
    with pytest.raises(ActionError, match="cannot see"):
        sandbox.client.react(user=APPROVER.id, channel=f"D{STARTER.id}", ts=form["ts"], name="+1")
    assert fake.dead_links(APPROVER.id) == [f"{fake.url}/#/D{STARTER.id}/thread/{form['ts']}"]
    assert fake.dead_links(STARTER.id) == []
    # the sandbox page shows nobody another person's DM
    state = sandbox.page.state(APPROVER.id)
    assert {m["channel"] for m in state["messages"]} <= {"CFINANCE", "CGENERAL", f"D{APPROVER.id}"}
    assert f"D{STARTER.id}" not in {c["id"] for c in state["channels"]}


def test_a_private_channel_is_its_members_alone() -> None:
    fake = FakeSlack(
        people=[Person("UA", "A"), Person("UB", "B")],
        channels=[Channel("GPRIV", "secret", {"UBOT", "UA"})],
        auto_channels=False,
    )
    assert fake.can_see("UA", "GPRIV") and not fake.can_see("UB", "GPRIV")
    assert not fake.can_see("UA", "CNOWHERE")

"""Nothing dead-ends (issue 17.2): Cancel is "not now" and Decide brings the form back; a
typed "Other" gets a follow-up; a decision can be changed before posting, which redrafts the
batch and needs a new approval. Real signed payloads through the Bolt app, the fake Slack."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.blocks import CANCEL_ACTION, CHANGE_ACTION, DECIDE_ACTION
from bot.close.ledger import Ledger
from bot.core.tools import ToolContext
from bot.sandbox.slack_api import FakeSlack
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def elements(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Every interactive element of a message (buttons, menus), in order."""
    return [e for b in message["blocks"] if b["type"] == "actions" for e in b.get("elements", [])]


def root(bot: Harness, run_id: str) -> dict[str, Any]:
    return bot.message(bot.store.runs.get(run_id).thread_ts or "")


def inputs(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in message["blocks"] if b["type"] == "input"]


def answer_all_but(bot: Harness, run_id: str, header: str | None = None) -> None:
    """Answer every form with its recommendation until none is pending (or one with `header`)."""
    for _ in range(30):
        record = bot.store.questions.pending(run_id)
        if record is None or (header and record.questions[0].get("header") == header):
            return
        who = "UAPPROVER" if record.questions[0].get("header") == "Posting" else "UALICE"
        bot.submit(record.id, bot.recommended_picks(record.id), user=who)
        bot.idle()
    raise AssertionError("still asking after 30 forms")


def test_cancel_leaves_the_run_waiting_with_a_decide_button_and_no_check_mark(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    put_off = bot.pending(run.id)  # the WI/NRI form
    assert bot.click(CANCEL_ACTION, put_off).status == 200
    bot.idle()
    record = bot.store.questions.get(put_off)
    assert (record.status, record.answered_by) == ("deferred", "UALICE")
    # the close goes on: the other steps' forms come, and are answered
    assert bot.store.questions.pending(run.id) is not None
    answer_all_but(bot, run.id)
    waiting = bot.store.runs.get(run.id)
    assert waiting.status == "waiting" and bot.store.questions.pending(run.id) is None
    assert bot.service.work.loop.parked(run.id)
    # the exceptions it asked stay open and undecided; nothing is drafted or posted
    ledger = Ledger(bot.store)
    asked = [
        e for e in ledger.exceptions(run.id) if e["question_id"] is None and e["status"] == "open"
    ]
    assert {e["details"]["ref"] for e in asked} >= {"wi_nri:W-OK-001"}
    assert ledger.current_batch(run.id) is None
    assert waiting.steps.get("Journal entries", "pending") == "pending"
    assert waiting.steps.get("Sign-off", "pending") == "pending"
    # the channel message: waiting on a decision, a Decide button for the form, never ✅
    shown = root(bot, run.id)
    text = json.dumps(shown["blocks"], ensure_ascii=False)
    assert "✅" not in text and "Finished" not in text
    assert "Waiting on" in text and "put off" in text and "press Decide" in text
    decide = [e for e in elements(shown) if e["action_id"].startswith(DECIDE_ACTION)]
    assert [e["value"] for e in decide] == [put_off]
    assert decide[0]["text"]["text"].startswith("Decide: WI/NRI")
    stop = [e for e in elements(shown) if e["action_id"] == "closebot_stop"]
    assert stop and stop[0]["style"] == "danger"  # Stop stays, and stays distinct
    # the form itself says it was put off and how it comes back
    form = bot.form_of(put_off)
    assert inputs(form) == [] and "Put off by" in json.dumps(form["blocks"], ensure_ascii=False)
    # the watchdog leaves a parked run alone: nothing to resume until Decide
    assert bot.service.work.heal()["runs"] == []
    assert bot.store.audit.events(run.id, kind="question_deferred")
    assert bot.store.audit.events(run.id, kind="run_waiting")


def test_decide_brings_the_form_back_and_the_close_finishes_and_posts(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    put_off = bot.pending(run.id)
    first_form_ts = bot.store.questions.get(put_off).message_ts
    bot.click(CANCEL_ACTION, put_off)
    bot.idle()
    answer_all_but(bot, run.id)
    assert bot.store.runs.get(run.id).status == "waiting"
    # a colleague may not bring it back
    bot.press(DECIDE_ACTION, put_off, user="UCARA")
    bot.idle()
    assert bot.store.questions.get(put_off).status == "deferred"
    assert bot.ephemerals_to("UCARA")
    bot.press(DECIDE_ACTION, put_off)
    bot.idle()
    again = bot.store.questions.get(put_off)
    assert again.status == "pending" and again.reopened_at
    # a fresh form: a new message, answerable, the same question
    assert again.message_ts and again.message_ts != first_form_ts
    form = bot.form_of(put_off)
    # (issue 30: its two items are a table card, a menu per row, the ⭐ preselected)
    radios = [
        b["element"]
        for b in inputs(form)
        if b["element"]["type"] in ("radio_buttons", "static_select")
    ]
    assert radios and radios[0]["initial_option"]["text"]["text"].endswith("⭐")
    assert [e["text"]["text"] for e in elements(form)][:3] == ["Submit", "Details", "Cancel"]
    # while the form is out, the channel shows no Decide button for it
    assert not [e for e in elements(root(bot, run.id)) if e["action_id"].startswith(DECIDE_ACTION)]
    bot.submit(put_off, bot.recommended_picks(put_off))
    bot.idle()
    assert Ledger(bot.store).exception(f"{run.id}:wi_nri:W-OK-001")["status"] == "resolved"
    approval = bot.answer_until(run.id, "Posting")
    assert approval
    bot.finish(run.id)
    done = bot.store.runs.get(run.id)
    assert done.status == "done"
    batch = Ledger(bot.store).current_batch(run.id)
    assert batch and batch["status"] == "posted"
    text = json.dumps(root(bot, run.id)["blocks"], ensure_ascii=False)
    assert "✅ Finished: every step ran" in text
    kinds = [e.kind for e in bot.store.audit.events(run.id)]
    assert kinds.index("question_deferred") < kinds.index("question_reopened")
    assert kinds.index("question_reopened") < kinds.index("run_done")


def test_a_typed_other_that_names_an_option_gets_a_follow_up(bot: Harness) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    bot.submit(question_id, {2: 1}, other={1: "Put the difference in suspense for now"})
    bot.idle()
    follow = bot.store.questions.pending(run.id)
    assert follow is not None and follow.id != question_id
    form = bot.form_of(follow.id)
    # issue 30: the whole question (what was typed, quoted) is in the card's Details modal
    text = json.dumps(bot.service.presenter.form_details(follow.id), ensure_ascii=False)
    assert "You wrote" in text and "Put the difference in suspense for now" in text
    radio = next(b["element"] for b in inputs(form) if b["element"]["type"] == "radio_buttons")
    # the option's entry, named, is too long to ride under it: the options are numbered
    labels = [o["text"]["text"].removeprefix(f"{n}. ") for n, o in enumerate(radio["options"], 1)]
    assert labels[0].startswith("Book billed, difference in suspense")
    assert labels[1].startswith("Leave it open")
    assert radio["initial_option"] == radio["options"][0]
    bot.submit(follow.id, {1: 1})
    bot.idle()
    exc = Ledger(bot.store).exception(f"{run.id}:wi_nri:W-OK-001")
    assert (exc["status"], exc["resolution"], exc["question_id"]) == (
        "resolved",
        "suspense",
        follow.id,
    )


def test_a_typed_other_that_names_no_option_stays_open_with_its_owner(bot: Harness) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    bot.submit(question_id, {2: 1}, other={1: "Ask Bob at the operator first"})
    bot.idle()
    exc = Ledger(bot.store).exception(f"{run.id}:wi_nri:W-OK-001")
    assert exc["status"] == "open" and exc["extra"]["owner"] == "UALICE"
    approval = bot.answer_until(run.id, "Posting")
    q = bot.store.questions.get(approval).questions[0]
    # an item left open with an owner is no reason to keep the batch as a draft
    assert q["recommended"] == 1 and "Left open with an owner" in q["question"]
    bot.finish(run.id)
    batch = Ledger(bot.store).current_batch(run.id)
    assert batch and batch["status"] == "posted"


def choose(bot: Harness, message: dict[str, Any], value: str, *, user: str = "UALICE") -> None:
    """A person picks `value` in the message's 'Change a decision' menu (a block action)."""
    menu = next(e for e in elements(message) if e["action_id"] == CHANGE_ACTION)
    option = next(o for o in menu["options"] if o["value"] == value)
    body = sp.block_action(
        CHANGE_ACTION, "", user=user, channel=message["channel"], message=message
    )
    payload = json.loads(__import__("urllib.parse").parse.parse_qs(body)["payload"][0])
    payload["actions"][0] = {
        "type": "static_select",
        "action_id": CHANGE_ACTION,
        "block_id": "closebot:root-stop:0:x",
        "selected_option": option,
        "action_ts": "1.2",
    }
    from urllib.parse import urlencode

    response = bot.dispatch(urlencode({"payload": json.dumps(payload)}), FORM)
    assert response.status == 200


def test_changing_a_decision_redrafts_and_needs_a_new_approval(bot: Harness) -> None:
    run = bot.start()
    first = bot.pending(run.id)  # WI/NRI: Baker (1) and Smith (2)
    approval = bot.answer_until(run.id, "Posting")
    ledger = Ledger(bot.store)
    old_batch = ledger.current_batch(run.id)
    assert old_batch is not None
    # the first approval is given; the batch is over the limit, so a second one is asked
    bot.submit(approval, {1: 1}, user="UAPPROVER")
    bot.idle()
    second = bot.pending(run.id)
    assert bot.store.questions.get(second).questions[0]["header"] == "Second approval"
    shown = root(bot, run.id)
    menu = next(e for e in elements(shown) if e["action_id"] == CHANGE_ACTION)
    assert menu["placeholder"]["text"] == "Change a decision"
    baker = next(o for o in menu["options"] if o["value"] == f"{first}:1")
    assert baker["text"]["text"].startswith("Baker 3-1H: Book at DOI, short-pay")
    choose(bot, shown, f"{first}:1")
    bot.idle()
    # the pending approval is withdrawn; the decision is asked again as its own form
    withdrawn = bot.store.questions.get(second)
    assert (withdrawn.status, withdrawn.source) == ("cancelled", "change")
    change = bot.store.questions.pending(run.id)
    assert change is not None and change.changes == first and len(change.questions) == 1
    form = bot.form_of(change.id)
    radio = next(b["element"] for b in inputs(form) if b["element"]["type"] == "radio_buttons")
    suspense = next(
        int(o["value"])
        for o in radio["options"]
        if "Book billed, difference in suspense" in o["text"]["text"]
    )
    bot.submit(change.id, {1: suspense}, why={1: "the operator confirmed the interest"})
    bot.idle()
    told = bot.store.transcript.tool_result(second)  # the agent reads the approval as withdrawn
    assert told is not None and json.loads(told.content)["status"] == "cancelled"
    assert "Withdrawn" in json.loads(told.content)["message"]
    exc = ledger.exception(f"{run.id}:wi_nri:W-OK-001")
    assert (exc["resolution"], exc["question_id"]) == ("suspense", change.id)
    # redrafted: a new batch, a new approval form; the old approval posts nothing
    new_batch = ledger.current_batch(run.id)
    assert new_batch and new_batch["id"] != old_batch["id"]
    assert ledger.batch(old_batch["id"])["status"] == "superseded"
    assert new_batch["content_hash"] != old_batch["content_hash"]
    new_approval = bot.store.questions.pending(run.id)
    assert new_approval is not None and new_approval.id != approval
    assert new_batch["id"] in new_approval.questions[0]["question"]
    assert new_approval.questions[0]["header"] == "Posting"
    # the approval given before the change is void: it names the old batch
    ctx = ToolContext(run_id=run.id, store=bot.store, progress=lambda text: None)
    tools = bot.service.work.loop.tools
    refusals = {
        new_batch["id"]: f"does not ask about batch {new_batch['id']}",
        old_batch["id"]: "is superseded",
    }
    for batch_id, why in refusals.items():
        content, is_error = tools.call(
            "post_journal_entries", ctx, {"batch_id": batch_id, "approval_question_id": approval}
        )
        assert is_error and why in content
    assert ledger.batch(new_batch["id"])["status"] == "draft"
    # the audit trail shows the edit: the old answer kept, who changed what
    old = bot.store.questions.get(first)
    assert old.status == "answered" and old.answer and "1" in old.answer
    changed = bot.store.audit.events(run.id, kind="decision_changed")
    assert len(changed) == 1
    detail = changed[0].detail
    assert detail["was"]["option"] == "short_pay" and detail["option"] == "suspense"
    assert changed[0].actor == "UALICE" and detail["question_id"] == change.id
    bot.finish(run.id)
    posted = ledger.current_batch(run.id)
    assert posted and posted["id"] == new_batch["id"] and posted["status"] == "posted"


def test_cancel_on_a_change_keeps_the_decision_and_asks_the_approval_again(bot: Harness) -> None:
    run = bot.start()
    first = bot.pending(run.id)
    approval = bot.answer_until(run.id, "Posting")
    ledger = Ledger(bot.store)
    batch = ledger.current_batch(run.id)
    assert batch is not None
    choose(bot, root(bot, run.id), f"{first}:1")
    bot.idle()
    change = bot.store.questions.pending(run.id)
    assert change is not None and change.changes == first
    assert "Decided before: Book at DOI, short-pay and dispute." in change.context
    assert bot.click(CANCEL_ACTION, change.id).status == 200
    bot.idle()
    assert bot.store.questions.get(change.id).status == "cancelled"  # dropped, not put off
    again = bot.store.questions.pending(run.id)
    assert again is not None and again.id != approval
    assert (
        again.questions[0]["header"] == "Posting" and batch["id"] in again.questions[0]["question"]
    )
    exc = ledger.exception(f"{run.id}:wi_nri:W-OK-001")
    assert (exc["resolution"], exc["question_id"]) == ("short_pay", first)
    assert bot.store.audit.events(run.id, kind="decision_changed") == []
    bot.finish(run.id)
    posted = ledger.current_batch(run.id)
    assert posted and posted["id"] == batch["id"] and posted["status"] == "posted"

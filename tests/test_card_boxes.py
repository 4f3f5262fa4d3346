"""Issue 30: a decision card's "Other" and "Why" boxes appear once, and only when they apply —
the card opens with neither; a choice of "Other…" adds the box for the typed answer, a choice
against an accounting decision's ⭐ adds the Why box, the ⭐ again takes it away. Block Kit
shows no input conditionally inside a message: the choice's input block sets dispatch_action,
its block_actions reaches the bot, and the card is redrawn (through the interaction's
response_url). The fake Slack sends a block_actions from an input block only where the block
dispatches, as Slack does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot import blocks
from bot.sandbox.client import ActionError
from bot.sandbox.run import STARTER, Sandbox
from bot.sandbox.slack_api import FakeSlack
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness
from tests.test_visibility import the_run


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def boxes(message: dict[str, Any]) -> set[str]:
    return blocks.form_parts(message["blocks"])[2]


def choose(bot: Harness, question_id: str, picks: dict[int, Any], user: str = "UALICE") -> None:
    """A choice made in the card's menus, as Slack sends it: a block_actions with the card's
    state (what is picked in every menu)."""
    message = bot.form_of(question_id)
    body = sp.block_action(
        blocks.ANSWER_ACTION,
        "",
        user=user,
        channel=message["channel"],
        message=message,
        values=sp.form_values(message["blocks"], picks),
        response_url=bot.fake.response_url(
            channel=message["channel"], user=user, message_ts=message["ts"]
        ),
    )
    assert bot.dispatch(body, FORM).status == 200
    bot.idle()


def test_a_choice_adds_the_box_it_calls_for_and_the_star_takes_it_away(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)  # WI/NRI: Baker and Smith, a menu each
    card = bot.form_of(question_id)
    assert boxes(card) == set()  # neither box until a choice calls for one
    menus = [b for b in card["blocks"] if b["type"] == "input"]
    assert menus and all(b["dispatch_action"] is True for b in menus)
    star = bot.recommended_picks(question_id)
    baker = next(
        int(o["value"])
        for o in menus[0]["element"]["options"]
        if o["value"].isdigit() and int(o["value"]) != star[1]
    )
    updates = len(fake.to("chat.update"))
    choose(bot, question_id, {**star, 1: baker})  # an override of Baker's ⭐
    card = bot.form_of(question_id)
    assert boxes(card) == {"w"}
    why = next(b for b in card["blocks"] if b.get("block_id", "").startswith("closebot:w:"))
    assert why["optional"] is False and "required" in why["label"]["text"]
    # what was picked stays picked; redrawn through the response_url, not chat.update
    baker_menu = next(b for b in card["blocks"] if b["type"] == "input")["element"]
    assert baker_menu["initial_option"]["value"] == str(baker)
    assert len(fake.to("chat.update")) == updates
    choose(bot, question_id, {**star, 1: blocks.OTHER_VALUE})  # "Other…": a typed answer
    assert boxes(bot.form_of(question_id)) == {"o"}
    choose(bot, question_id, star)  # the ⭐ again: nothing to add
    assert boxes(bot.form_of(question_id)) == set()
    # someone who may not answer this close redraws nothing for everyone
    choose(bot, question_id, {**star, 1: baker}, user="UMALLORY")
    assert boxes(bot.form_of(question_id)) == set()
    # and the one who may, answers with their reason in the box that appeared
    bot.submit(question_id, {**star, 1: baker}, why="the operator's JOA says 15 %")
    bot.idle()
    record = bot.store.questions.get(question_id)
    assert record.status == "answered" and "the operator's JOA says 15 %" in (
        record.rationale or ""
    )


def test_the_fake_sends_block_actions_from_an_input_block_only_where_it_dispatches(
    sandbox: Sandbox,
) -> None:
    sandbox.client.say(user=STARTER.id, channel="CFINANCE", text="/close 2026-10")
    run = the_run(sandbox)
    record = sandbox.store.questions.pending(run.id)
    assert record is not None and record.message_ts
    card = sandbox.fake.messages[record.message_ts]
    menu = next(b for b in card["blocks"] if b["type"] == "input")
    quiet = {**card, "blocks": [{**menu, "dispatch_action": False}, *card["blocks"][1:]]}
    with sandbox.fake.lock:
        sandbox.fake.messages[record.message_ts] = quiet
    with pytest.raises(ActionError, match="sends nothing until the form is submitted"):
        sandbox.client.action(
            user=STARTER.id,
            channel=card["channel"],
            message_ts=card["ts"],
            block_id=menu["block_id"],
            action_id=blocks.ANSWER_ACTION,
            picks={},
            selected=blocks.OTHER_VALUE,
        )
    with sandbox.fake.lock:
        sandbox.fake.messages[record.message_ts] = card
    said = sandbox.client.action(
        user=STARTER.id,
        channel=card["channel"],
        message_ts=card["ts"],
        block_id=menu["block_id"],
        action_id=blocks.ANSWER_ACTION,
        picks={menu["block_id"]: blocks.OTHER_VALUE},
        selected=blocks.OTHER_VALUE,
    )
    assert said["ok"], said
    assert sandbox.fake.wait_for(
        lambda: "o" in boxes(sandbox.fake.messages[record.message_ts]), timeout=30
    )

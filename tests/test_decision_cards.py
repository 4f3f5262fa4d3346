"""Issue 30: the decision card's detail is one click away in a modal — views.open in the one
fake as strict as Slack (a trigger_id valid 3 s, once; a modal's limits), opened by the card's
Details button through the real listener — and a table card's one "Other" reads back as the
answer of the row set to Other…"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.core.questions import parse_ask
from bot.sandbox.slack_api import FakeSlack
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness

MODAL = {
    "type": "modal",
    "title": {"type": "plain_text", "text": "Decision details"},
    "close": {"type": "plain_text", "text": "Close"},
    "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "The detail."}}],
}


@pytest.fixture
def client(fake: FakeSlack) -> WebClient:
    return WebClient(token="xoxb-cards", base_url=fake.api_url)


def refused(call: Any) -> dict[str, Any]:
    with pytest.raises(SlackApiError) as caught:
        call()
    return dict(caught.value.response.data)  # type: ignore[arg-type]


def test_views_open_takes_a_trigger_once_within_three_seconds(
    fake: FakeSlack, client: WebClient
) -> None:
    # docs.slack.dev/reference/methods/views.open: invalid_trigger_id, expired_trigger_id,
    # exchanged_trigger_id; a trigger lasts 3 seconds (docs.slack.dev/surfaces/modals)
    assert refused(lambda: client.views_open(trigger_id="12.34.ab", view=MODAL))["error"] == (
        "invalid_trigger_id"  # well formed, but no interaction issued it
    )
    assert refused(lambda: client.views_open(trigger_id="nope", view=MODAL))["error"] == (
        "invalid_trigger_id"
    )
    trigger = fake.issue_trigger("UALICE")
    opened = client.views_open(trigger_id=trigger, view=MODAL)
    assert opened["view"]["title"]["text"] == "Decision details"
    assert fake.modals["UALICE"]["id"] == opened["view"]["id"]
    again = refused(lambda: client.views_open(trigger_id=trigger, view=MODAL))
    assert again["error"] == "exchanged_trigger_id"
    late = fake.issue_trigger("UALICE")
    fake.advance(3.5)
    assert refused(lambda: client.views_open(trigger_id=late, view=MODAL))["error"] == (
        "expired_trigger_id"
    )
    fake.close_modal("UALICE")
    assert "UALICE" not in fake.modals


def test_a_modal_is_checked_as_slack_checks_it(fake: FakeSlack, client: WebClient) -> None:
    # docs.slack.dev/reference/views/modal-views: title ≤ 24 characters, ≤ 100 blocks, a
    # submit where it has inputs
    long_title = {**MODAL, "title": {"type": "plain_text", "text": "T" * 25}}
    body = refused(
        lambda: client.views_open(trigger_id=fake.issue_trigger("UALICE"), view=long_title)
    )
    assert body["error"] == "invalid_arguments"
    assert any("/view/title/text" in e for e in body["errors"])
    many = {**MODAL, "blocks": MODAL["blocks"] * 101}
    body = refused(lambda: client.views_open(trigger_id=fake.issue_trigger("UALICE"), view=many))
    assert any("less than 101 items" in e for e in body["errors"])
    inputs = {
        **MODAL,
        "blocks": [
            {
                "type": "input",
                "label": {"type": "plain_text", "text": "Why"},
                "element": {"type": "plain_text_input", "action_id": "why"},
            }
        ],
    }
    body = refused(lambda: client.views_open(trigger_id=fake.issue_trigger("UALICE"), view=inputs))
    assert any("/view/submit" in e for e in body["errors"])


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def test_details_opens_the_whole_decision_in_a_modal_for_the_person_who_clicked(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    card = bot.form_of(question_id)
    (details,) = [
        e
        for b in card["blocks"]
        for e in b.get("elements") or []
        if e.get("action_id") == blocks.DETAILS_ACTION
    ]
    trigger = fake.issue_trigger("UALICE")  # what Slack puts in the click's payload
    raw = sp.block_action(
        blocks.DETAILS_ACTION,
        details["value"],
        user="UALICE",
        channel=card["channel"],
        message=card,
        trigger_id=trigger,
    )
    assert bot.dispatch(raw, FORM).status == 200
    assert fake.wait_for(lambda: "UALICE" in fake.modals, timeout=15)
    (opened,) = fake.to("views.open")
    assert opened["trigger_id"] == trigger
    modal = fake.modals["UALICE"]
    text = json.dumps(modal, ensure_ascii=False)
    record = bot.store.questions.get(question_id)
    # every question whole, each option with what it books, the reasoning behind the ⭐
    for q in record.questions:
        for option in q["options"]:
            assert option["label"] in text
            if option.get("description"):
                assert option["description"].replace("&", "&amp;") in text
        assert "⭐ *Recommended, preselected*" in text
    assert "[ref " not in text  # the decision log keeps the tag; people read without it
    # nothing was answered
    assert bot.store.questions.get(question_id).status == "pending"


def test_a_table_cards_one_other_answers_the_row_set_to_other() -> None:
    ask = parse_ask(
        {
            "context": "Two items.",
            "questions": [
                {
                    "question": "A?",
                    "options": ["Pay", "Dispute"],
                    "recommended": 2,
                    "allow_other": True,
                },
                {
                    "question": "B?",
                    "options": ["Pay", "Dispute"],
                    "recommended": 1,
                    "allow_other": True,
                },
            ],
        }
    )
    # the card as redrawn once a row is set to Other… (its one box appears: blocks/boxes.py)
    card = blocks.question_form(
        ask, question_id="q", who_may_answer="x", nonce="n", picks={2: blocks.OTHER_VALUE}
    )
    ids = {blocks.parse_block_id(b["block_id"]): b for b in card if b.get("type") == "input"}
    assert set(ids) == {("q", 1), ("q", 2), ("o", 0)}
    values = sp.form_values(card, {1: 2}, other={2: "Paid by the operator's credit memo"})
    responses = blocks.read_form(ask, values)
    assert responses[1].selected == (2,)
    assert responses[2].other == "Paid by the operator's credit memo" and not responses[2].selected
    # typed text with no row set to Other…, or a row set to Other… with nothing typed: said
    typed = sp.form_values(card, {1: 2, 2: 1})
    typed[next(b for k, b in ids.items() if k == ("o", 0))["block_id"]] = {
        blocks.OTHER_ACTION: {"type": "plain_text_input", "value": "which one?"}
    }
    with pytest.raises(blocks.FormError, match="Set its row to Other"):
        blocks.read_form(ask, typed)
    empty = sp.form_values(card, {1: 2, 2: blocks.OTHER_VALUE})
    with pytest.raises(blocks.FormError, match="type your answer in Other"):
        blocks.read_form(ask, empty)

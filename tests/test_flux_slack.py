"""Issue 16.4 in Slack: a flagged flux item adjusted with an entry the person types is booked in
the batch the posting approval covers (flux reviews the draft before its approval), and an
escalated one goes to the person chosen, who owns it as an open item. Signed payloads through
the real Bolt app, the loopback fake of Slack's Web API, a real SQLite file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from bot.close.ledger import Ledger
from bot.sandbox.slack_api import FakeSlack
from tests.slack_harness import Harness

ZERO = Decimal("0.00")


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def form_text(h: Harness, question_id: str) -> str:
    return json.dumps(h.form_of(question_id)["blocks"], ensure_ascii=False)


def test_an_adjustment_typed_in_slack_is_booked_in_the_batch_the_approver_posts(
    bot: Harness,
) -> None:
    run = bot.start("2026-10")
    flux = bot.answer_until(run.id, "Flux")
    assert "[ref flux_item:6220]" in bot.store.questions.get(flux).questions[0]["question"]
    bot.submit(flux, {1: 2})  # Adjust (describe the entry)
    bot.idle()
    entry = bot.pending(run.id)
    asked = bot.store.questions.get(entry).questions[0]
    assert asked["header"] == "Flux adjustment" and asked["type"] == "free_text"
    typed = "Dr 6220 / Cr 2115 1,500.00 — Carter workover not yet billed"
    bot.submit(entry, {1: typed})
    bot.idle()  # a typed entry is shown before it books (17.1): Submit again to book it
    assert bot.store.questions.get(entry).status == "pending"
    shown = bot.ephemerals_to("UALICE")[-1]
    assert shown.startswith("Not booked yet") and "Dr 6220" in shown and "$1,500.00" in shown
    bot.submit(entry, {1: typed})
    bot.idle()
    ledger = Ledger(bot.store)
    drafts = ledger.batches(run.id)
    assert [b["status"] for b in drafts] == ["superseded", "draft"]  # drafted again
    approval = bot.answer_until(run.id, "Posting")
    text = form_text(bot, approval)
    assert drafts[-1]["id"] in text  # the approval is of the draft that holds the adjustment
    assert "Flux adjustments booked in this batch" in text and "$1,500.00" in text
    bot.finish(run.id)
    batch = ledger.current_batch(run.id)
    assert batch is not None and batch["status"] == "posted" and batch["id"] == drafts[-1]["id"]
    lines = [x for x in ledger.lines(batch["id"]) if x["ref"] == "flux:6220"]
    assert {(x["account"], x["debit"], x["credit"], x["source"]) for x in lines} == {
        ("6220", Decimal("1500.00"), ZERO, "accrual"),
        ("2115", ZERO, Decimal("1500.00"), "accrual"),
    }
    # the batch is the first draft plus exactly the entry described, to the cent
    first = {a["account"]: a["debit"] - a["credit"] for a in ledger.account_totals(drafts[0]["id"])}
    final = {a["account"]: a["debit"] - a["credit"] for a in ledger.account_totals(batch["id"])}
    moved = {a: final.get(a, ZERO) - first.get(a, ZERO) for a in set(first) | set(final)}
    assert {a: v for a, v in moved.items() if v} == {
        "6220": Decimal("1500.00"),
        "2115": Decimal("-1500.00"),
    }
    assert ledger.exception(f"{run.id}:flux_item:6220")["status"] == "resolved"


def test_an_escalated_flux_item_goes_to_the_person_chosen(bot: Harness) -> None:
    run = bot.start("2026-10")
    flux = bot.answer_until(run.id, "Flux")
    bot.submit(flux, {1: 3})  # Escalate (to whom, next)
    bot.idle()
    to_whom = bot.pending(run.id)
    asked = bot.store.questions.get(to_whom).questions[0]
    assert asked["header"] == "Flux escalation"
    codes = Ledger(bot.store).exception(f"{run.id}:flux_escalate:6220")["details"]["options"]
    assert codes[:2] == ["to:UAPPROVER", "to:UAPPROVER2"]  # the approvers, then the controller
    bot.submit(to_whom, {1: 2})  # the second approver
    bot.idle()
    bot.finish(run.id)
    ledger = Ledger(bot.store)
    escalated = ledger.exception(f"{run.id}:flux_escalate:6220")
    assert (escalated["resolution"], escalated["extra"]["to"]) == ("escalate", "UAPPROVER2")
    assert ledger.exception(f"{run.id}:flux_item:6220")["status"] == "resolved"
    carried = [i for i in ledger.open_items(run.id) if "6220" in i["text"]]
    assert [(i["owner"], i["status"]) for i in carried] == [("UAPPROVER2", "open")]
    # the owner is the id; the item's text names them (the fake names UAPPROVER2 "Approver2")
    assert "escalated to Approver2" in carried[0]["text"]
    labels = [o["label"] for o in asked["options"]]
    assert labels[:2] == ["Escalate to Approver", "Escalate to Approver2"]

"""A group decision can be changed before posting (issue 31): "Change a decision" offers a
group decided as one, asks its question again, withdraws the pending approval, and each line
of the group takes the new decision — the batch drafted again and approved anew, showing
what changed. What each line books afterwards is checked against the calculator of
test_close_books, worked from the month's CSV files (not by the code under test)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

import pytest

from bench.genmonth import generate
from bot.blocks import CHANGE_ACTION
from bot.close.ledger import Ledger
from bot.sandbox.slack_api import FakeSlack
from tests import slack_payloads as sp
from tests.close_helpers import CloseRun
from tests.slack_harness import FORM, Harness
from tests.test_close_books import booked, check_every_booking

ALIKE = 5
PROTEST = "Pay under protest (receivable)"


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated month where five wells of one operator each bill a line already billed
    (bench/genmonth.py --alike 5): one group of alike duplicates, asked once."""
    root = tmp_path_factory.mktemp("alike-change")
    generate(root, 1200, seed=5, alike=ALIKE)
    return root


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path, month: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path, CLOSEBOT_DATA=str(month))
    yield h
    h.close()


def menu_options(bot: Harness, run_id: str) -> list[dict[str, Any]]:
    root = bot.message(bot.store.runs.get(run_id).thread_ts or "")
    menus = [
        e
        for b in root["blocks"]
        if b["type"] == "actions"
        for e in b.get("elements", [])
        if e["action_id"] == CHANGE_ACTION
    ]
    return list(menus[0]["options"]) if menus else []


def choose(bot: Harness, run_id: str, option: dict[str, Any], user: str = "UALICE") -> None:
    """`option` picked in the close message's 'Change a decision' menu, as Slack sends it."""
    root = bot.message(bot.store.runs.get(run_id).thread_ts or "")
    body = sp.block_action(CHANGE_ACTION, "", user=user, channel=root["channel"], message=root)
    payload = json.loads(parse_qs(body)["payload"][0])
    payload["actions"][0] = {
        "type": "static_select",
        "action_id": CHANGE_ACTION,
        "block_id": "closebot:root-stop:0:x",
        "selected_option": option,
        "action_ts": "1.2",
    }
    assert bot.dispatch(urlencode({"payload": json.dumps(payload)}), FORM).status == 200
    bot.idle()


def the_group(run: CloseRun) -> list[dict[str, Any]]:
    found = [
        e
        for e in run.exceptions()
        if e["kind"] == "duplicate" and str(e["details"].get("group", "")).startswith("alike:")
    ]
    assert len(found) == ALIKE and len({e["details"]["group"] for e in found}) == 1
    return found


def test_a_group_decision_is_changed_like_a_single_one(bot: Harness, month: Path) -> None:
    run = bot.start()
    approval = bot.answer_until(run.id, "Posting")  # every form as recommended
    close = CloseRun(bot.store, run.id, None, None, [])  # type: ignore[arg-type]
    group = the_group(close)
    ref = group[0]["details"]["group"]
    asked = group[0]["question_id"]
    assert {(e["resolution"], e["question_id"]) for e in group} == {("short_pay", asked)}
    before = {e["details"]["ref"]: booked(close, e) for e in group}
    old_batch = close.batch()
    # the group is offered once in 'Change a decision', as the group
    items = bot.store.questions.get(asked).questions
    number = next(n for n, q in enumerate(items, 1) if f"[ref {ref}]" in q["question"])
    offered = [o for o in menu_options(bot, run.id) if o["value"] == f"{asked}:{number}"]
    assert len(offered) == 1, menu_options(bot, run.id)
    assert f"{ALIKE} alike" in offered[0]["text"]["text"]
    choose(bot, run.id, offered[0])
    withdrawn = bot.store.questions.get(approval)
    assert (withdrawn.status, withdrawn.source) == ("cancelled", "change")
    change = bot.store.questions.pending(run.id)
    assert change is not None and change.changes == asked
    assert f"[ref {ref}]" in change.questions[0]["question"]
    labels = [o["label"] for o in change.questions[0]["options"]]
    bot.submit(change.id, {1: labels.index(PROTEST) + 1}, why={1: "per the JOA, disputed"})
    bot.idle()
    # every line of the group takes the new decision, bound to the change's question
    group = the_group(close)
    assert {(e["resolution"], e["question_id"]) for e in group} == {("protest", change.id)}
    changed = bot.store.audit.events(run.id, kind="decision_changed")
    assert sorted(e.detail["id"] for e in changed) == sorted(e["id"] for e in group)
    assert {e.detail["was"]["option"] for e in changed} == {"short_pay"}
    # drafted again: a new batch, a new approval showing what changed
    new_batch = close.batch()
    assert new_batch["id"] != old_batch["id"]
    assert Ledger(bot.store).batch(old_batch["id"])["status"] == "superseded"
    reapproval = bot.store.questions.pending(run.id)
    assert reapproval is not None and new_batch["id"] in reapproval.questions[0]["question"]
    shown = json.dumps(bot.form_of(reapproval.id)["blocks"])
    assert f"Changed since batch {old_batch['id']} was withdrawn" in shown
    bot.finish(run.id)
    assert close.batch()["status"] == "posted"
    # each line books what CLOSE.md says for the new decision, worked from the CSV files
    assert check_every_booking(close, month / "2026-10") >= ALIKE
    after = {e["details"]["ref"]: booked(close, e) for e in group}
    assert all(after[r] and after[r] != before[r] for r in after)


def test_changing_a_group_to_line_by_line_asks_each_line_again(bot: Harness, month: Path) -> None:
    run = bot.start()
    bot.answer_until(run.id, "Posting")
    close = CloseRun(bot.store, run.id, None, None, [])  # type: ignore[arg-type]
    group = the_group(close)
    ref, asked = group[0]["details"]["group"], group[0]["question_id"]
    items = bot.store.questions.get(asked).questions
    number = next(n for n, q in enumerate(items, 1) if f"[ref {ref}]" in q["question"])
    (offered,) = [o for o in menu_options(bot, run.id) if o["value"] == f"{asked}:{number}"]
    choose(bot, run.id, offered)
    change = bot.store.questions.pending(run.id)
    assert change is not None and change.changes == asked
    labels = [o["label"] for o in change.questions[0]["options"]]
    line_by_line = next(n for n, label in enumerate(labels, 1) if "line by line" in label)
    bot.submit(change.id, {1: line_by_line})
    bot.idle()
    # each line is asked on its own now, and decided there (here: under protest, each)
    refs = {e["details"]["ref"] for e in group}
    for _ in range(10):
        pending = bot.store.questions.pending(run.id)
        if pending is None or pending.questions[0].get("header") in ("Posting", "Second approval"):
            break
        picks = bot.recommended_picks(pending.id)
        for n, q in enumerate(pending.questions, 1):
            if any(f"[ref {r}]" in q["question"] for r in refs):
                picks[n] = [o["label"] for o in q["options"]].index(PROTEST) + 1
        bot.submit(pending.id, picks, why="per the JOA, disputed")
        bot.idle()
    bot.finish(run.id)
    group = the_group(close)
    assert {e["resolution"] for e in group} == {"protest"}
    for e in group:  # each bound to a form that asked about that line alone
        own = bot.store.questions.get(e["question_id"])
        assert own.id not in (asked, change.id)
        assert any(f"[ref {e['details']['ref']}]" in q["question"] for q in own.questions)
    assert close.batch()["status"] == "posted"
    assert check_every_booking(close, month / "2026-10") >= ALIKE

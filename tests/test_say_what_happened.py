"""Issue 30.6: what closebot shows is what happened. A typed explanation is shown as typed (not
"Explain (as drafted)"); people by name and no stored word (`in_force`, `auto_default`, a
source such as `(user)`) in the summary; an owner's DM says each amount once; sign-off
grouping keeps each item's owner; "what's waiting on me?" includes the open items a person
owns. The fake Slack and the real close; nothing under test is stubbed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from bot.close.doi_master import ACCOUNT_NAMES
from bot.close.ledger import Ledger
from bot.close.open_items import assignment_questions, item_groups
from bot.core.questions import Question, Response
from bot.sandbox.slack_api import FakeSlack
from tests.close_helpers import close_run, recommended
from tests.slack_harness import Harness
from tests.test_agent_entry import dm, dm_replies

TYPED = "October had one rod pump job at Carter Ranch and a cleanout at Olson"
STORED_WORDS = ("in_force", "auto_default", "(user)", "(console)", "[ref ")


def test_the_summary_shows_a_typed_explanation_as_typed_and_no_stored_words(
    tmp_path: Path,
) -> None:
    def choose(q: Question) -> Response | None:
        if "[ref flux_item:6220]" in q.question:
            return Response(other=TYPED)
        return recommended(q)

    run = close_run(None, tmp_path / "c.db", choose=choose)
    summary = run.presenter.finished_text or ""
    line = next(x for x in summary.splitlines() if x.startswith("• 6220 Workover Expense"))
    assert f"Explained: \u201c{TYPED}\u201d" in line and "as drafted" not in line
    assert "decided by alice" in line
    # the DOI row's status in words, not the stored one
    assert "WI 0.27500000 / NRI 0.22000000 (in force)" in summary
    for word in STORED_WORDS:
        assert word not in summary, word
    # the decision log keeps what was stored
    exc = run.exception("flux_item:6220")
    assert exc["extra"]["explanation"] == TYPED and exc["decision_source"] == "console"


def test_an_explanation_taken_as_drafted_says_so(tmp_path: Path) -> None:
    run = close_run(None, tmp_path / "c.db")
    summary = run.presenter.finished_text or ""
    line = next(x for x in summary.splitlines() if x.startswith("• 6220 Workover Expense"))
    assert "Explain (as drafted)" in line


def test_sign_off_grouping_keeps_each_items_owner() -> None:
    kinds = ["wi_nri", "afe_overrun", "severance", "stub_underpaid", "carried"]
    items = [
        {"kind": k, "text": f"{k} item {n}", "amount": "10.00"} for n, k in enumerate(kinds * 2)
    ]
    items[0]["owner"] = "UBEN"  # one wi_nri item is Ben's, the other nobody's yet
    items[6]["owner"] = "UDANA"  # an AFE item is Dana's, the other Ben's
    items[1]["owner"] = "UBEN"
    groups = item_groups(items, owner="UALICE", due="2026-11-15")
    assert len(groups) < len(items)  # grouped (more than a handful of rows)
    by_label = {g["label"].split(":")[0]: g for g in groups}
    for name in ("WI/NRI", "AFE overrun"):
        assert by_label[name]["owner"] is None  # no owner preselected over other people's items
    rows = assignment_questions({"kind": "signoff", "details": {"facts": {"groups": groups}}})
    owners = [r for r in rows if r["type"] == "user"]
    mixed = [r for r, g in zip(owners, groups, strict=True) if g.get("mixed_owners")]
    assert mixed and all("initial" not in r and not r["required"] for r in mixed)
    assert all("each item keeps its own" in r["question"] for r in mixed)


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def test_owner_dms_say_each_amount_once(bot: Harness, fake: FakeSlack) -> None:
    run = bot.start()
    bot.finish(run.id)
    items = [i for i in Ledger(bot.store).open_items(run.id) if i["owner"] == "UALICE"]
    assert items
    (told,) = [m for m in fake.messages.values() if m["channel"] == "DUALICE"][:1]
    shown = json.loads(json.dumps(told["blocks"]))
    text = "\n".join(b["text"]["text"] for b in shown if b.get("type") == "section")
    for line in text.splitlines():
        if line.startswith("• "):
            amounts = re.findall(r"\$[\d,]+\.\d\d", line)
            assert len(amounts) == len(set(amounts)), line  # each amount once


def test_whats_waiting_on_me_lists_the_open_items_a_person_owns(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    bot.finish(run.id)
    items = [i for i in Ledger(bot.store).open_items(run.id) if i["owner"] == "UALICE"]
    assert items
    # no form waits on Alice, but the open items she owns do, soonest due first
    dm(bot, "what's waiting on me?")
    said = dm_replies(fake)[-1]
    assert said != "Nothing waits on you right now."
    assert f"Your open items ({len(items)})" in said and "due 2026-11-15" in said


def test_no_ref_tag_in_what_people_read_and_a_withdrawn_approval_says_why() -> None:
    from bot import blocks
    from bot.console.presenter import render_form
    from bot.core.questions import Outcome, parse_ask

    ask = parse_ask(
        {
            "context": "Intake",
            "questions": [
                {
                    "header": "Intake",
                    "question": "jib.csv line 6 names property PRO-40188. [ref unknown_property:jib:6]",
                    "options": [{"label": "Hold in suspense"}, {"label": "Map to Smith 14-2H"}],
                    "recommended": 1,
                }
            ],
        }
    )
    form = json.dumps(
        blocks.question_form(ask, question_id="q", who_may_answer="<@UALICE>", nonce="n"),
        ensure_ascii=False,
    )
    assert "names property PRO-40188" in form and "[ref" not in form
    assert "names property PRO-40188" in render_form(ask) and "[ref" not in render_form(ask)
    answered = json.dumps(
        blocks.answered_form(ask, Outcome("answered", "user", "UALICE", None, {})),
        ensure_ascii=False,
    )
    assert "[ref" not in answered and "source:" not in answered
    # an approval withdrawn because a decision changed: why, not "Cancelled by"
    withdrawn = json.dumps(
        blocks.answered_form(ask, Outcome("cancelled", "change", "UALICE", None, None)),
        ensure_ascii=False,
    )
    assert "Withdrawn: a decision was changed" in withdrawn and "Cancelled by" not in withdrawn


def test_a_re_approval_shows_what_changed_and_the_second_approval_counts_the_first(
    bot: Harness,
) -> None:
    from tests.test_decide_later import choose, inputs, root

    run = bot.start()
    first = bot.pending(run.id)  # WI/NRI: Baker (1) and Smith (2)
    approval = bot.answer_until(run.id, "Posting")
    ledger = Ledger(bot.store)
    old = ledger.current_batch(run.id)
    assert old is not None
    bot.submit(approval, {1: 1}, user="UAPPROVER")
    bot.idle()
    second = bot.pending(run.id)
    card = json.dumps(bot.form_of(second)["blocks"], ensure_ascii=False)
    assert "1 of 2 approvals given" in card and "UAPPROVER" not in card.split("Who may")[0]
    # a decision changed: Baker from short-pay to the difference in suspense
    choose(bot, root(bot, run.id), f"{first}:1")
    bot.idle()
    withdrawn = json.dumps(bot.form_of(second)["blocks"], ensure_ascii=False)
    assert "Withdrawn: a decision was changed" in withdrawn and "Cancelled by" not in withdrawn
    # never cut inside an entry: each by-account line it shows ends with an amount (the
    # settled card folds what was asked into a collapsed container: its sections read too)
    shown = bot.form_of(second)["blocks"]
    shown = [*shown, *(c for b in shown for c in b.get("child_blocks") or [])]
    card_lines = "\n".join(b["text"]["text"] for b in shown if b["type"] == "section").splitlines()
    entries = [x for x in card_lines if x.startswith("• ")]
    assert entries and all(re.search(r"\$[\d,]+\.\d\d$", x) for x in entries), entries
    change = bot.store.questions.pending(run.id)
    assert change is not None
    radio = next(
        b["element"]
        for b in inputs(bot.form_of(change.id))
        if b["element"]["type"] == "radio_buttons"
    )
    suspense = next(
        int(o["value"]) for o in radio["options"] if "difference in suspense" in o["text"]["text"]
    )
    bot.submit(change.id, {1: suspense}, why={1: "the operator confirmed the interest"})
    bot.idle()
    again = bot.store.questions.pending(run.id)
    assert again is not None and again.questions[0]["header"] == "Posting"
    card = json.dumps(bot.form_of(again.id)["blocks"], ensure_ascii=False)
    assert f"Changed since batch {old['id']} was withdrawn" in card
    # the change, worked from the batches' lines: the short-pay entry gone, the suspense added
    new = ledger.current_batch(run.id)
    assert new is not None
    for batch, sign in ((old, "−"), (new, "+")):
        baker = [x for x in ledger.lines(batch["id"]) if x["entry"].startswith("Decision: Baker")]
        debits: dict[str, Decimal] = {}
        for x in baker:
            debits[x["account"]] = debits.get(x["account"], Decimal(0)) + x["debit"]
        ((account, amount),) = [(a, v) for a, v in debits.items() if v]  # one account debited
        name = ACCOUNT_NAMES[account]
        assert f"{sign}Dr {account} {name} ${amount:,.2f} / Cr 6210" in card


def test_a_typed_answers_follow_up_names_its_owner(bot: Harness) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    bot.submit(question_id, {2: 1}, other={1: "Put the difference in suspense for now"})
    bot.idle()
    follow = bot.store.questions.pending(run.id)
    assert follow is not None and follow.id != question_id
    keep = follow.questions[0]["options"][1]["description"]
    assert "owned by Alice" in keep and "UALICE" not in keep  # a name, never an id

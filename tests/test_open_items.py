"""Open items as work (issue 17.6): the sign-off form picks an owner (users_select) and a due
date (datepicker) per item, the recommended ones preselected; each owner is told by DM once;
the next close opens with the items still open (settled / still open / write off), and a
write-off reverses the balance the item's decision left, checked against last month's posted
journal."""

from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bot import blocks
from bot.close.data import add_months
from bot.close.ledger import Ledger
from bot.core.questions import Question, Response
from bot.sandbox.slack_api import FakeSlack
from bot.store import Store
from tests import slack_payloads as sp
from tests.close_helpers import close_run, recommended
from tests.slack_harness import Harness

JSON = "application/json"
APPROVERS = {"Posting": "UAPPROVER", "Second approval": "UAPPROVER2"}
HOLDING = ("1210", "1215", "1220", "1390", "1395", "2110", "2310")


def to_sign_off(bot: Harness, run_id: str) -> str:
    """Answer every form with its recommendation (approvals by the approvers) up to the sign-off."""
    for _ in range(30):
        record = bot.store.questions.pending(run_id)
        assert record is not None, "the run ended before its sign-off"
        header = record.questions[0].get("header") or ""
        if header.startswith("Sign-off"):
            return record.id
        bot.submit(
            record.id, bot.recommended_picks(record.id), user=APPROVERS.get(header, "UALICE")
        )
        bot.idle()
    raise AssertionError("no sign-off form")


def pickers(form: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(label, owner element, due element) per row of the sign-off form, in order."""
    inputs = [b for b in form["blocks"] if b["type"] == "input"]
    rows = []
    for i, block in enumerate(inputs):
        if block["element"]["type"] == "users_select":
            due = inputs[i + 1]
            assert due["element"]["type"] == "datepicker", "each owner is followed by its due date"
            rows.append((block["label"]["text"], block["element"], due["element"]))
    return rows


def dms(fake: FakeSlack, user: str) -> list[dict[str, Any]]:
    return [m for m in fake.messages.values() if m["channel"] == f"D{user}"]


def test_sign_off_assigns_an_owner_and_a_due_date_per_item_and_tells_each_owner_once(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    try:
        run = bot.start("2026-10")
        sign = to_sign_off(bot, run.id)
        record = bot.store.questions.get(sign)
        form = bot.form_of(sign)
        # issue 30: the card lists each item with its owner and due date (its one table);
        # "Change owners or dates" shows the pickers
        (table,) = [b for b in form["blocks"] if b["type"] == "table"]
        assert [c["text"] for c in table["rows"][0]] == ["Item", "Owner", "Due"]
        assert all(row[1]["text"] == "Alice" for row in table["rows"][1:])
        assert pickers(form) == []
        bot.press_in(form, blocks.EXPAND_ACTION)
        form = bot.form_of(sign)
        rows = pickers(form)
        assert len(table["rows"]) - 1 == len(rows)
        exc = next(e for e in Ledger(bot.store).exceptions(run.id) if e["kind"] == "signoff")
        items = [t for g in exc["details"]["facts"]["groups"] for t in g["items"]]
        # a handful of items (this month: 7): one row each, its text on the owner's label
        assert 1 < len(rows) == len(items) <= 8
        for (label, owner, due), text in zip(rows, items, strict=True):
            assert text[:60] in label
            # recommended: the close's starter owns it, due the 15th of the next month
            assert owner["initial_user"] == "UALICE"
            assert due["initial_date"] == f"{add_months('2026-10', 1)}-15" == "2026-11-15"
        assert len(form["blocks"]) <= 50
        # the sign-off decision itself is one radio question with carry forward preselected
        radios = [
            b for b in form["blocks"] if b["type"] == "input" and "radio" in b["element"]["type"]
        ]
        assert len(radios) == 1
        assert (
            "Carry open items forward ⭐" in radios[0]["element"]["initial_option"]["text"]["text"]
        )

        # Ben owns row 1, due the 30th; Dana row 2 (date untouched); the rest as recommended
        numbers = {
            q.get("header"): n for n, q in enumerate(record.questions, start=1) if q.get("header")
        }
        picks = bot.recommended_picks(sign)
        picks.update({numbers["Owner 1"]: "UBEN", numbers["Due 1"]: "2026-11-30"})
        picks[numbers["Owner 2"]] = "UDANA"
        bot.submit(sign, picks)
        bot.idle()
        bot.finish(run.id, user="UALICE")
        assert bot.store.runs.get(run.id).status == "done"

        stored = Ledger(bot.store).open_items(run.id)
        assert [i["text"] for i in stored] == items
        assert (stored[0]["owner"], stored[0]["due"]) == ("UBEN", "2026-11-30")
        assert (stored[1]["owner"], stored[1]["due"]) == ("UDANA", "2026-11-15")
        assert {(i["owner"], i["due"]) for i in stored[2:]} == {("UALICE", "2026-11-15")}

        # each owner gets one DM with their items, amounts, due dates and the thread's link
        permalink = f"{fake.url}/#/{run.channel}/thread/{run.thread_ts}"
        for user, theirs in (("UBEN", stored[:1]), ("UDANA", stored[1:2]), ("UALICE", stored[2:])):
            (dm,) = dms(fake, user)
            shown = json.dumps(dm["blocks"], ensure_ascii=False)
            assert permalink in shown
            for item in theirs:
                assert item["text"].replace("&", "&amp;")[:50] in shown
                assert f"due {item['due']}" in shown
                if Decimal(item["amount"] or "0"):
                    assert f"${Decimal(item['amount']):,.2f}" in shown
            assert f"{len(theirs)} open item" in dm["text"]
        told = bot.store.audit.events(run.id, kind="owner_told")
        assert sorted(e.detail["owner"] for e in told) == ["UALICE", "UBEN", "UDANA"]

        # Ben's App Home lists his open items (and only his)
        opened = {
            "type": "app_home_opened",
            "user": "UBEN",
            "channel": "DUBEN",
            "tab": "home",
            "event_ts": "1.0",
        }
        assert bot.dispatch(sp.event(opened, event_id="EvHomeBen"), JSON).status == 200
        bot.idle()
        home = json.dumps(fake.homes["UBEN"]["blocks"], ensure_ascii=False)
        assert "Your open items (1)" in home and "due 2026-11-30" in home
        assert stored[0]["text"].replace("&", "&amp;")[:50] in home
        assert stored[2]["text"].replace("&", "&amp;")[:50] not in home.split("Closes by period")[0]

        # a retry of the finish (a restart, a redelivery) tells nobody again
        before = len(fake.to("chat.postMessage"))
        bot.service.presenter.tell_owners(run.id)
        assert len(fake.to("chat.postMessage")) == before
        assert all(len(dms(fake, u)) == 1 for u in ("UBEN", "UDANA", "UALICE"))
    finally:
        bot.close()


def test_an_owner_dm_sent_before_a_crash_is_found_and_not_sent_again(
    fake: FakeSlack, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = Harness(fake, db_path)
    try:
        run = bot.start("2026-10")
        sign = to_sign_off(bot, run.id)
        # the process dies right after Slack accepted the DM, before recording it: the audit
        # write of `owner_told` is where it stops (nothing else can reach that instant)
        presenter = bot.service.presenter
        real = bot.store.audit.record

        def dies_after_the_post(**kw: Any) -> None:
            if kw.get("kind") == "owner_told":
                raise RuntimeError("killed")
            real(**kw)

        monkeypatch.setattr(bot.store.audit, "record", dies_after_the_post)
        bot.submit(sign, bot.recommended_picks(sign))
        bot.idle()
        bot.finish(run.id)
        assert len(dms(fake, "UALICE")) == 1  # sent, not recorded
        monkeypatch.setattr(bot.store.audit, "record", real)
        presenter.tell_owners(run.id)  # the recovery's finish
        assert len(dms(fake, "UALICE")) == 1
        (told,) = bot.store.audit.events(run.id, kind="owner_told")
        assert told.detail == {"owner": "UALICE", "found": True}
    finally:
        bot.close()


def _write_off(item_text: str) -> Any:
    def chooser(q: Question) -> Response | None:
        if q.header == "Open item" and item_text[:60] in q.question:
            labels = [o.label for o in q.options]
            return Response(selected=(labels.index("Write off (logged)") + 1,))
        return recommended(q)

    return chooser


def test_the_next_close_opens_with_last_months_items_and_a_write_off_reverses_the_balance(
    tmp_path: Path,
) -> None:
    db = tmp_path / "closebot.db"
    store = Store(db)
    october = close_run(None, db, store=store)
    assert october.batch()["status"] == "posted"
    items = october.ledger.open_items(october.run_id)
    # the items whose decision left a balance on a holding account, found from October's
    # posted journal (not from what closebot stored about them)
    disputed = next(i for i in items if i["kind"] == "afe_overrun")  # paid under protest
    november = close_run(
        None, db, period="2026-11", store=store, choose=_write_off(disputed["text"])
    )

    # the first forms of November are October's items, one question each, before any step ran
    carried = [q for a in november.asks for q in a.questions if q.header == "Open item"]
    assert len(carried) == len(items)
    first_forms = november.asks[: (len(items) + 4) // 5]
    assert all(q.header == "Open item" for a in first_forms for q in a.questions)
    excs = november.exceptions()
    answered = {e["details"]["facts"]["item_id"]: e for e in excs if e["kind"] == "carried_item"}
    assert set(answered) == {i["id"] for i in items}
    assert all(e["status"] == "resolved" and e["decided_by"] for e in answered.values())
    assert answered[disputed["id"]]["resolution"] == "write_off"
    assert {e["resolution"] for k, e in answered.items() if k != disputed["id"]} == {"still_open"}

    # independently: October's posted lines on the holding account for that document line
    october_lines = [x for x in october.lines() if x["source"] == "decision" and "AFE" in x["memo"]]
    held: dict[str, Decimal] = defaultdict(Decimal)
    for x in october_lines:
        held[x["account"]] += x["debit"] - x["credit"]
    on_hold = {a: v for a, v in held.items() if a in HOLDING and v}
    assert set(on_hold) == {"1390"} and on_hold["1390"] > 0  # the protest receivable left
    # November's write-off entry takes it back out of 1390 into the cost it came from
    written = [
        x for x in november.lines() if x["memo"].startswith("write off open item from 2026-10")
    ]
    net: dict[str, Decimal] = defaultdict(Decimal)
    for x in written:
        net[x["account"]] += x["debit"] - x["credit"]
    expected = {a: -v for a, v in held.items() if v}
    assert dict(net) == expected
    assert sum(x["debit"] for x in written) == sum(x["credit"] for x in written) == on_hold["1390"]
    # the written-off item is closed for good; the others are November's again
    rows = {r["id"]: r for r in Ledger(store).open_items(october.run_id)}
    assert rows[disputed["id"]]["status"] == "written_off"
    texts = [i["text"] for i in Ledger(store).open_items(november.run_id)]
    assert not any(disputed["text"] in t for t in texts)
    assert sum(1 for t in texts if t.startswith("from 2026-10: ")) == len(items) - 1


def test_many_items_are_grouped_by_kind_one_owner_and_due_date_per_group() -> None:
    from bot import blocks
    from bot.close.open_items import MAX_GROUPS, assignment_questions, item_groups
    from bot.core.questions import parse_ask

    kinds = ["wi_nri", "afe_overrun", "severance", "stub_underpaid", "carried", "undecided"]
    kinds += ["history_gap", "doi_effective", "overhead_rate", "duplicate_jib", "missing_check"]
    items = [
        {"kind": k, "text": f"{k} item {n}", "amount": f"{100 * (n + 1)}.25"}
        for n, k in enumerate(kinds * 3)
    ]
    items[0]["owner"] = items[len(kinds)]["owner"] = items[2 * len(kinds)]["owner"] = "UBEN"
    groups = item_groups(items, owner="UALICE", due="2026-11-15")
    assert len(groups) == MAX_GROUPS
    # every item is in exactly one group, in the order found
    assert sorted(t for g in groups for t in g["items"]) == sorted(i["text"] for i in items)
    first = groups[0]
    assert first["label"].startswith("WI/NRI: 3 items, $")
    # the group's total, worked independently: items 0, 11 and 22 of the list
    total = sum(Decimal(items[n]["amount"]) for n in (0, 11, 22))
    assert first["label"].endswith(f"${total:,.2f}")
    assert first["owner"] == "UBEN"  # the owner its items share
    assert {g["owner"] for g in groups[1:]} == {"UALICE"}
    assert groups[-1]["label"].startswith("Everything else: ")
    # the form: the decision and an owner and a due date per group, inside Block Kit's 50
    exc = {"kind": "signoff", "details": {"facts": {"groups": groups}}}
    rows = assignment_questions(exc)
    assert [r["type"] for r in rows] == ["user", "date"] * MAX_GROUPS
    decision = {"question": "Sign off?", "options": ["Carry", "Block"], "recommended": 1}
    ask = parse_ask({"context": "Sign-off", "questions": [decision, *rows]})
    form = blocks.question_form(ask, question_id="q", who_may_answer="<@UALICE>", nonce="n")
    assert len(form) <= 50

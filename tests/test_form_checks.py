"""Issue 17.1 and 17.8 in Slack: a typed date is previewed before it books (and at the console),
a refused Submit is answered ephemerally and never in the thread, and many alike lines are one
form with their detail CSV attached."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.genmonth import generate
from bot.close.doi_master import money
from bot.close.ledger import Ledger
from bot.sandbox.slack_api import FakeSlack
from bot.store import Store
from tests.cli_run import closebot, run_id_of
from tests.slack_harness import Harness, slack_sample
from tests.test_close_books import Books, expected

ACCEPT = "Accept operator's decimal, update DOI"
TYPED = "2026-06-01"


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def labels(bot: Harness, question_id: str, number: int) -> list[str]:
    q = bot.store.questions.get(question_id).questions[number - 1]
    return [o["label"] if isinstance(o, dict) else o for o in q["options"]]


def picks_with(bot: Harness, question_id: str, label: str) -> dict[int, Any]:
    """The recommended picks, with `label` chosen on every question that offers it."""
    picks = bot.recommended_picks(question_id)
    for n in picks:
        if label in labels(bot, question_id, n):
            picks[n] = labels(bot, question_id, n).index(label) + 1
    return picks


def until(bot: Harness, run_id: str, ref_prefix: str, choose: str = "") -> str:
    """Answer forms (the recommendation, or `choose` where offered) until one names `ref_prefix`."""
    for _ in range(12):
        question_id = bot.pending(run_id)
        record = bot.store.questions.get(question_id)
        if any(f"[ref {ref_prefix}" in q["question"] for q in record.questions):
            return question_id
        bot.submit(question_id, picks_with(bot, question_id, choose) if choose else {})
        bot.idle()
    raise AssertionError(f"no form names {ref_prefix}")


def catch_up(folder: Path, well: str, date: str) -> dict[str, Any]:
    """What CLOSE.md says a DOI change from `date` catches up, per account (the calculator of
    test_close_books, from the CSV files)."""
    exc = {"kind": "doi_effective", "details": {"facts": {"well_id": well}}}
    return expected(Books(folder, "2026-10"), exc, date)


def test_a_typed_effective_date_is_previewed_before_it_books(
    bot: Harness, fake: FakeSlack, db_path: Path
) -> None:
    run = bot.start()
    question_id = until(bot, run.id, "doi_effective:", choose=ACCEPT)
    record = bot.store.questions.get(question_id)
    n = next(i for i, q in enumerate(record.questions, 1) if "doi_effective:" in q["question"])
    well = record.questions[n - 1]["question"].split("[ref doi_effective:")[1].split("]")[0]
    want = catch_up(slack_sample(db_path.parent) / "2026-10", well, TYPED)
    assert want and any(v for v in want.values())
    posted = len(fake.to("chat.postMessage"))
    bot.submit(question_id, {}, other={n: TYPED}, why="the assignment is effective June 1")
    bot.idle()
    # nothing is booked or decided yet: the person sees the entry, privately
    assert bot.store.questions.get(question_id).status == "pending"
    exc = Ledger(bot.store).exception(f"{run.id}:doi_effective:{well}")
    assert exc["status"] == "open"
    (notice,) = bot.ephemerals_to("UALICE")
    assert notice.startswith("Not booked yet") and f"Effective {TYPED}" in notice
    for account, amount in want.items():
        assert f"{account} " in notice and money(abs(amount)) in notice, (account, notice)
    assert len(fake.to("chat.postMessage")) == posted  # nothing in the thread
    (shown,) = bot.store.audit.events(run.id, kind="answer_previewed")
    assert shown.detail["question_id"] == question_id and shown.actor == "UALICE"
    # the same answer submitted again books it, exactly as previewed
    bot.submit(question_id, {}, other={n: TYPED}, why="the assignment is effective June 1")
    bot.idle()
    exc = Ledger(bot.store).exception(f"{run.id}:doi_effective:{well}")
    assert (exc["status"], exc["resolution"]) == ("resolved", TYPED)
    booked: dict[str, Any] = {}
    for c in exc["extra"]["catch_up"]:
        booked[c["debit"]] = booked.get(c["debit"], 0) + float(c["amount"])
        booked[c["credit"]] = booked.get(c["credit"], 0) - float(c["amount"])
    assert {a: round(v, 2) for a, v in booked.items() if v} == {
        a: float(v) for a, v in want.items() if v
    }


def test_a_typed_date_at_the_console_is_shown_and_confirmed_before_it_books(
    tmp_path: Path,
) -> None:
    data = slack_sample(tmp_path)
    db = tmp_path / "console.db"
    # WI/NRI: the recommendations (Baker short-paid, Smith's decimal accepted); then Smith's
    # effective date typed, declined once at the preview (after a stray answer, asked again:
    # issue 30), typed again and confirmed — a typed answer explains itself: no "Why" asked
    answers = ["3", "1", f"other: {TYPED}", "maybe", "n", f"other: {TYPED}", "y"]
    ran = closebot("run", "2026-10", "--data", str(data), "--db", str(db), stdin="\n".join(answers))
    run_id = run_id_of(ran.stdout)
    out = ran.stdout[ran.stdout.index("DOI effective date") :]
    want = catch_up(data / "2026-10", "W-TX-001", TYPED)
    (amount,) = [v for v in want.values() if v > 0]
    shown = f"This books: Effective {TYPED} for Smith 14-2H"
    assert out.count(shown) == 2, out[:4000]
    assert money(amount) in out[: out.index("Book it? [y/N]")]
    assert "'maybe' is not y or n" in out  # re-asked, never taken as No
    assert out.index("Book it? [y/N]: maybe") < out.index("Book it? [y/N]: n")
    assert out.index("Book it? [y/N]: n") < out.index("Book it? [y/N]: y")
    assert "Why, for question 1?" not in out[out.index("Book it? [y/N]: y") :].split("Question")[0]
    store = Store(db)
    (effective,) = [e for e in Ledger(store).exceptions(run_id) if e["kind"] == "doi_effective"]
    assert (effective["status"], effective["resolution"]) == ("resolved", TYPED)
    assert len(store.audit.events(run_id, kind="answer_previewed")) == 2


def test_a_refused_submit_is_answered_ephemerally_and_never_in_the_thread(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    thread = len(fake.thread(run.thread_ts or ""))
    calls = len(fake.calls)
    bot.submit(question_id, {1: 1, 2: None})  # question 2's preselection taken away
    bot.idle()
    after = [c for c in fake.calls[calls:]]
    assert [c.method for c in after if c.method.startswith("chat.")] == ["chat.postEphemeral"]
    assert "Not submitted" in after[-1].params["text"]
    assert len(fake.thread(run.thread_ts or "")) == thread
    assert not any("Not submitted" in (m.get("text") or "") for m in fake.messages.values())


def test_many_alike_lines_are_one_form_with_their_detail_attached(
    fake: FakeSlack, tmp_path: Path
) -> None:
    generate(tmp_path / "month", 1200, seed=5, alike=5)
    bot = Harness(fake, tmp_path / "c.db", CLOSEBOT_DATA=str(tmp_path / "month"))
    try:
        run = bot.start()
        question_id = until(bot, run.id, "alike:duplicate:")
        form = bot.form_of(question_id)
        text = json.dumps(form["blocks"], ensure_ascii=False)
        assert "5 alike duplicate exceptions" in text  # the card's row: the group, its total
        details = json.dumps(bot.service.presenter.form_details(question_id), ensure_ascii=False)
        assert "The same check found 5 alike duplicate exceptions" in details
        radios = [b["element"] for b in form["blocks"] if b.get("type") == "input"]
        group = next(
            r for r in radios if any("line by line" in json.dumps(o) for o in r["options"])
        )
        assert "Short-pay and dispute ⭐" in group["initial_option"]["text"]["text"]
        # the detail is in the thread before the form: one row per line, with what each books
        (detail,) = [f for f in fake.files.values() if f["name"].startswith("alike-duplicate-")]
        rows = list(csv.DictReader(io.StringIO(fake.uploads[detail["id"]].decode())))
        members = [
            e
            for e in Ledger(bot.store).exceptions(run.id)
            if e["details"].get("group", "").startswith("alike:duplicate:")
        ]
        assert [r["ref"] for r in rows] == [e["details"]["ref"] for e in members]
        assert len(rows) == 5
        thread = fake.thread(run.thread_ts or "")
        where = [i for i, m in enumerate(thread) if detail["id"] in json.dumps(m.get("files"))]
        assert where and where[0] < [m["ts"] for m in thread].index(form["ts"])
        bot.submit(question_id, bot.recommended_picks(question_id))
        bot.idle()
        decided = [
            e
            for e in Ledger(bot.store).exceptions(run.id)
            if e["details"].get("group", "").startswith("alike:duplicate:")
        ]
        assert {(e["status"], e["resolution"], e["question_id"]) for e in decided} == {
            ("resolved", "short_pay", question_id)
        }
        # posted again (a retry), the form does not attach its detail twice
        bot.service.presenter.post_form(bot.store.questions.get(question_id), nonce="again")
        assert len([f for f in fake.files.values() if f["name"] == detail["name"]]) == 1
    finally:
        bot.close()

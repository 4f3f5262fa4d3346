"""Issue 30.3: one way to show an option. Every option of every exception on the sample months
shows its entry the same way wherever it appears — accounts by number and name, every amount,
only the sides that apply, never "books nothing" for an option that books; the Slack form lists
each option's entry on its own line (never "2, 4." merged); a typed answer's follow-up and
the decision tool's result show the same words. Entries are checked against the lines booked,
summed here per account."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from bot import blocks
from bot.close.doi_master import ACCOUNT_NAMES, money
from bot.close.exception_questions import question_for
from bot.close.kinds import book
from bot.core.questions import MAX_DESCRIPTION, Question, Response, parse_ask
from bot.store import Store
from tests.close_helpers import CloseRun, choose_label, close_run, recommended


@pytest.fixture(scope="module")
def closes(tmp_path_factory: pytest.TempPathFactory) -> list[CloseRun]:
    db = tmp_path_factory.mktemp("entries") / "c.db"
    store = Store(db)
    october = close_run(None, db, store=store)
    return [october, close_run(None, db, period="2026-11", store=store)]


def per_account(lines: list[dict[str, object]]) -> dict[str, tuple[Decimal, Decimal]]:
    out: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for x in lines:
        out[str(x["account"])][0] += Decimal(str(x["debit"]))
        out[str(x["account"])][1] += Decimal(str(x["credit"]))
    return {a: (d, c) for a, (d, c) in out.items()}


def test_every_option_shows_its_entry_by_account_number_and_name(closes: list[CloseRun]) -> None:
    checked = 0
    for run in closes:
        for exc in run.exceptions():
            d = exc["details"]
            q = question_for(exc)
            for code, option in zip(d["options"], q.get("options") or [], strict=False):
                text = option["description"]
                lines = book(exc["kind"], code, d["facts"], {})
                assert "books nothing" not in text, (d["ref"], code, text)
                assert not text.startswith(" / ") and " /  " not in text and "Dr  " not in text
                if not lines:
                    assert text, (d["ref"], code)  # what it does, in words
                    continue
                totals = per_account(lines)
                for account, (debit, credit) in totals.items():
                    net_dr, net_cr = debit, credit
                    if net_dr:
                        assert f"Dr {account}" in text and money(net_dr) in text, (text, account)
                    else:
                        assert f"Dr {account}" not in text  # no side that does not apply
                    if net_cr:
                        assert f"Cr {account}" in text and money(net_cr) in text, (text, account)
                    else:
                        assert f"Cr {account}" not in text
                # the largest account is always named; every account is when the entry fits
                biggest = max(totals, key=lambda a: sum(totals[a]))
                assert f"{biggest} {ACCOUNT_NAMES[biggest]}" in text, text
                named = " / ".join(f"{a} {ACCOUNT_NAMES[a]}" for a in totals)
                if len(named) + 20 * len(totals) < MAX_DESCRIPTION - 30:
                    assert all(f"{a} {ACCOUNT_NAMES[a]}" in text for a in totals), text
                assert not re.search(r"\$[\d,]*\.\d?…|\$[\d,]+…", text)  # never a cut amount
                # each account once per side it is on: the entry is never said twice
                for account, (debit, credit) in totals.items():
                    sides = bool(debit) + bool(credit)
                    assert len(re.findall(rf"\b{account}\b", text)) == sides, (text, account)
                checked += 1
    assert checked > 20


def test_a_typed_pay_as_billed_is_never_shown_as_booking_nothing(tmp_path: Path) -> None:
    typed = choose_label(**{"afe_overrun:AFE-ABO-2025-014": "other:pay as billed"})

    def choose(q: Question) -> Response | None:
        return recommended(q) if q.header == "Your answer" else typed(q)

    run = close_run(None, tmp_path / "c.db", choose=choose)
    follow = [
        o
        for a in run.asks
        for q in a.questions
        if q.header == "Your answer" and "AFE-ABO-2025-014" in q.question
        for o in q.options
    ]
    assert follow, "the typed answer's follow-up was not asked"
    said = {o.label: o.description for o in follow}
    assert "Pay as billed" in said
    assert "books nothing" not in said["Pay as billed"]
    assert "as the operator billed it" in said["Pay as billed"]


def test_the_slack_form_lists_each_options_entry_once_on_its_own_line() -> None:
    same = "Dr 1395 JIB Suspense $591.87 / Cr 6210 Lease Operating Expense $560.00, Cr 6250 Operator Overhead $31.87"
    options = [{"label": f"Option {n}", "description": same} for n in range(1, 6)]
    ask = parse_ask(
        {"context": "WI/NRI", "questions": [{"question": "Which?", "options": options}]}
    )
    # issue 30: the card keeps to its choices; each option's entry is in its Details modal
    form = json.dumps(
        blocks.details_view(ask, question_id="q"),
        ensure_ascii=False,
    )
    assert not re.search(r"\*\d+, \d+", form)  # never "2, 4." merged
    for n in range(1, 6):
        assert form.count(f"• *Option {n}*: {same}") == 1

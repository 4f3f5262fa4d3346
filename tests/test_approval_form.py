"""The posting approval form (issue 17.4), read from the blocks Slack would draw: the batch by
account in a table that fits a thread, addressed only to the people who may approve (and why
the starter may not), Approve / Keep as draft / Reject as separate buttons with the confirm
dialog on an Approve that posts only (not on a first approval over the limit, which posts
nothing), the draft CSV attached once. The buttons go through the same controls
as a Submit: a person who may not approve is refused privately and the refusal audited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bot.blocks import CHOICE_ACTION, DETAILS_ACTION, SUBMIT_ACTION
from bot.close.ledger import Ledger
from bot.sandbox.slack_api import FakeSlack
from bot.slack.http.server import HttpServer
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def buttons(form: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for b in form["blocks"] if b["type"] == "actions" for e in b["elements"]]


def money(amount: Decimal) -> str:
    return f"${amount:,.2f}"


def press(bot: Harness, question_id: str, number: int, *, user: str, why: str | None) -> None:
    """A person presses the form's button for option `number` (its Why box filled or not)."""
    assert bot.click(f"{CHOICE_ACTION}{number}", question_id, user=user, why=why).status == 200
    bot.idle()


def test_the_approval_form_names_only_who_may_approve_and_confirms_on_approve_only(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    approval = bot.answer_until(run.id, "Posting")
    form = bot.form_of(approval)
    shown = json.dumps(form["blocks"], ensure_ascii=False)
    batch = Ledger(bot.store).current_batch(run.id)
    assert batch is not None
    lines = Ledger(bot.store).lines(batch["id"])
    # addressed to the approvers who may approve, saying why the starter may not
    footer = [b for b in form["blocks"] if b["type"] == "context"][-1]
    who = footer["elements"][0]["text"]
    assert (
        who
        == "Who may approve: <@UAPPROVER>, <@UAPPROVER2> — not Alice, who started this close"  # named, not pinged
    )
    assert "Who may answer" not in shown
    # no radio buttons and no Submit: one button per choice, each choice once
    assert not [
        b
        for b in form["blocks"]
        if b["type"] == "input" and b["element"]["type"] != "plain_text_input"
    ]
    assert SUBMIT_ACTION not in shown
    approve, keep, reject, _details = buttons(form)
    assert [b["text"]["text"] for b in buttons(form)] == [
        "Approve and post ⭐",
        "Keep as draft",
        "Reject with a comment",
        "Details",  # issue 30: what each choice does, and why the ⭐, in a modal
    ]
    assert [b["action_id"] for b in buttons(form)] == [
        *(f"{CHOICE_ACTION}{n}" for n in (1, 2, 3)),
        DETAILS_ACTION,
    ]
    assert all(b["value"] == approval for b in buttons(form))
    # only Approve carries the dialog, naming what it posts (counted here from the lines)
    assert "confirm" not in keep and "confirm" not in reject
    entries = len({x["entry_no"] for x in lines})
    total = sum((Decimal(str(x["debit"] or 0)) for x in lines), Decimal(0))
    # The sample batch holds an entry over the approval limit (summed here per entry), so this
    # first approval posts nothing — a second, different approver is asked — and, since issue
    # 30, carries no "Post to the ledger?" dialog (it was a click that confirmed nothing): the
    # second approval, which posts, does (checked at the end of this test).
    per_entry: dict[int, Decimal] = {}
    for x in lines:
        per_entry[x["entry_no"]] = per_entry.get(x["entry_no"], Decimal(0)) + Decimal(
            str(x["debit"] or 0)
        )
    assert max(per_entry.values()) > Decimal("250000.00")  # the default approval limit
    assert "confirm" not in approve
    assert approve["style"] == "primary" and "style" not in keep and "style" not in reject
    # what each choice does: once, in the Details modal (the card keeps to its buttons)
    modal = json.dumps(bot.service.presenter.form_details(approval), ensure_ascii=False)
    assert modal.count("Leave the batch for review; nothing is posted.") == 1
    assert "Leave the batch for review" not in shown
    # the batch by account: three columns (account and name in one, wrapped), the totals
    (table,) = [b for b in form["blocks"] if b["type"] == "table"]
    rows = [[c["text"].strip() for c in row] for row in table["rows"]]
    assert rows[0] == ["Account", "Debit", "Credit"]
    assert table["column_settings"] == [
        {"is_wrapped": True},
        {"align": "right"},
        {"align": "right"},
    ]
    # each account row shown (the card shows the first few, then "… N more" and the Total)
    for row in rows[1:]:
        if row[0].startswith(("…", "Total")):
            continue
        account = row[0].split()[0]
        mine = [x for x in lines if x["account"] == account]
        debits = sum((Decimal(str(x["debit"] or 0)) for x in mine), Decimal(0))
        credits = sum((Decimal(str(x["credit"] or 0)) for x in mine), Decimal(0))
        assert row[1:] == [money(debits) if debits else "", money(credits) if credits else ""]
    accounts = len({x["account"] for x in lines})
    (more,) = [r for r in rows if r[0].startswith("… ")]
    assert more[0].startswith(f"… {accounts - (len(rows) - 3)} more accounts")
    assert rows[-1] == ["Total", money(total), money(total)]
    # the approval is bound to the batch's content hash in the stored question (the decision
    # log keeps it); the card people read does not show the hash (issue 30.6)
    assert f"content hash {batch['content_hash'][:16]}" not in shown and batch["id"] in shown
    stored = bot.store.questions.get(approval).questions[0]["question"]
    assert f"content hash {batch['content_hash'][:16]}" in stored
    # the draft journal attached once, before the form
    drafts = [f["filename"] for f in fake.to("files.getUploadURLExternal")]
    assert drafts == [f"journal-{batch['id']}-draft.csv"]
    # the first approval given: the second approval's Approve posts, so it asks first, naming
    # what it posts (counted here from the lines)
    press(bot, approval, 1, user="UAPPROVER", why=None)
    second = bot.pending(run.id)
    assert bot.store.questions.get(second).questions[0]["header"] == "Second approval"
    posts = buttons(bot.form_of(second))[0]
    assert posts["text"]["text"].startswith("Approve")
    assert posts["confirm"]["text"]["text"] == (
        f"Post {entries} entries, {money(total)}, batch {batch['id']}? This cannot be undone."
    )
    assert posts["confirm"]["title"]["text"] == "Post to the ledger?"
    assert "confirm" not in buttons(bot.form_of(second))[1]


def test_keep_as_draft_and_reject_post_nothing_and_reject_needs_its_why(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    approval = bot.answer_until(run.id, "Posting")
    batch = Ledger(bot.store).current_batch(run.id)
    assert batch is not None
    # Reject goes against the recommendation: without a Why it is refused, nothing taken
    press(bot, approval, 3, user="UAPPROVER", why=None)
    assert bot.store.questions.get(approval).status == "pending"
    assert any("say why in 'Why'" in n for n in bot.ephemerals_to("UAPPROVER"))
    # Keep as draft, with its reason: taken at once (no dialog), and nothing is posted
    press(bot, approval, 2, user="UAPPROVER", why="the AFE overrun is not supported yet")
    record = bot.store.questions.get(approval)
    assert (record.status, record.answered_by, record.overridden) == ("answered", "UAPPROVER", 1)
    assert record.answer is not None and record.answer["1"]["labels"] == ["Keep as draft"]
    assert record.rationale == "the AFE overrun is not supported yet"
    bot.finish(run.id)
    assert Ledger(bot.store).posted_batch("2026-10") is None
    assert Ledger(bot.store).batch(batch["id"])["status"] == "draft"
    assert not bot.store.audit.events(run.id, kind="journal_posted")
    answered = json.dumps(bot.form_of(approval)["blocks"], ensure_ascii=False)
    assert "*Keep as draft*" in answered and not buttons(bot.form_of(approval))


def test_approve_by_someone_who_may_not_approve_is_refused_privately_and_audited(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    server = HttpServer(bot.service, host="127.0.0.1", port=0)
    server.start()
    try:
        run = bot.start()
        approval = bot.answer_until(run.id, "Posting")
        form = bot.form_of(approval)
        values = sp.form_values(form["blocks"], {}, None, None)
        url = f"http://127.0.0.1:{server.port}/slack/events"

        def press_over_http(user: str) -> int:
            """Approve, as Slack delivers it: a signed payload through the HTTP edge."""
            import urllib.request

            body = sp.block_action(
                f"{CHOICE_ACTION}1",
                approval,
                user=user,
                channel=form["channel"],
                message=form,
                values=values,
            )
            request = urllib.request.Request(
                url, data=body.encode(), headers=sp.signed_headers(body, content_type=FORM)
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)

        # the starter (segregation of duties) and a colleague who may not answer at all
        for user in ("UALICE", "UCARA"):
            assert press_over_http(user) == 200
            bot.idle()
            assert bot.store.questions.get(approval).status == "pending"
        alice = " ".join(bot.ephemerals_to("UALICE"))
        assert "segregation of duties: you started this close" in alice.casefold()
        assert "nothing was changed" in alice
        assert any("Only <@UALICE>" in t for t in bot.ephemerals_to("UCARA"))
        refused = bot.store.audit.events(run.id, kind="answer_refused")
        assert [e.actor for e in refused] == ["UALICE", "UCARA"]
        assert refused[0].detail["question_id"] == approval
        assert not [m for m in bot.thread_texts(run) if "segregation" in m.casefold()]
        # an approver's Approve posts the batch
        assert press_over_http("UAPPROVER") == 200
        bot.idle()
        record = bot.store.questions.get(approval)
        assert (record.status, record.answered_by) == ("answered", "UAPPROVER")
        bot.finish(run.id)
        posted = Ledger(bot.store).posted_batch("2026-10")
        assert posted is not None and posted["posted_by"] == "UAPPROVER"
    finally:
        server.stop()
        bot.close()


def test_a_batch_of_more_accounts_than_a_table_holds_keeps_every_row_and_its_total(
    bot: Harness, fake: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Slack's table block: 100 rows and 10,000 characters across its cells
    # (docs.slack.dev/reference/block-kit/blocks/table-block). Past 98 accounts the form used
    # to drop rows and its Total; now the Total stays last, the rows left out are counted in
    # the table, and every account is in a CSV attached beside the draft journal.
    real = Ledger.account_totals
    extra = [
        {"account": f"9{n:03d}", "debit": Decimal(f"{n}.25"), "credit": Decimal(0)}
        for n in range(150)
    ]

    def many(self: Ledger, batch_id: str) -> list[dict[str, Any]]:
        return [*real(self, batch_id), *extra]

    monkeypatch.setattr(Ledger, "account_totals", many)
    run = bot.start()
    approval = bot.answer_until(run.id, "Posting")
    form = bot.form_of(approval)  # posted: the fake's Block Kit checker let it through
    batch = Ledger(bot.store).current_batch(run.id)
    assert batch is not None
    accounts = many(Ledger(bot.store), batch["id"])
    debit = sum((Decimal(str(a["debit"] or 0)) for a in accounts), Decimal(0))
    credit = sum((Decimal(str(a["credit"] or 0)) for a in accounts), Decimal(0))
    (table,) = [b for b in form["blocks"] if b["type"] == "table"]
    rows = [[c["text"].strip() for c in row] for row in table["rows"]]
    assert len(rows) <= 100 and sum(len(c) for r in rows for c in r) <= 10_000
    assert rows[-1] == ["Total", money(debit), money(credit)]
    name = f"accounts-{batch['id']}-draft.csv"
    (more,) = [r for r in rows if r[0].startswith("… ")]
    shown = len(rows) - 3  # the header, the "more" row, the total
    assert more[0] == (
        f"… {len(accounts) - shown} more accounts (in the Total): every account in {name}"
    )
    uploaded = [f["filename"] for f in fake.to("files.getUploadURLExternal")]
    assert uploaded == [f"journal-{batch['id']}-draft.csv", name]
    (file_id,) = [i for i, f in fake.files.items() if f["name"] == name]
    listed = fake.uploads[file_id].decode().splitlines()
    assert len(listed) == 1 + len(accounts) + 1  # the header, every account, the total
    assert listed[-1] == f'Total,"{money(debit)}","{money(credit)}"'

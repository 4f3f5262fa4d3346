"""Races and the rest (issue 31.8): an approval and "Change a decision" at the same instant are
decided in one transaction — one wins and the other is told what happened, nothing is left
pending for good. Real signed payloads through the HTTP edge, the fake Slack behind it."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlencode

from bot.blocks import CHANGE_ACTION, CHOICE_ACTION
from bot.close.ledger import Ledger
from bot.sandbox.slack_api import FakeSlack, Person
from bot.slack.http.server import HttpServer
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness

TRIALS = 12


def post(url: str, body: str) -> int:
    headers = sp.signed_headers(body, content_type=FORM)
    request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def approve_body(bot: Harness, question_id: str, user: str) -> str:
    """The approver's Approve button on the approval form, as Slack sends it."""
    form = bot.form_of(question_id)
    labels = [o["label"] for o in bot.store.questions.get(question_id).questions[0]["options"]]
    number = next(n for n, label in enumerate(labels, 1) if label.startswith("Approve"))
    return sp.block_action(
        f"{CHOICE_ACTION}{number}",
        question_id,
        user=user,
        channel=form["channel"],
        message=form,
        values=sp.form_values(form["blocks"], {1: number}),
        response_url=bot.fake.response_url(
            channel=form["channel"], user=user, message_ts=form["ts"]
        ),
    )


def change_body(bot: Harness, run_id: str, value: str, user: str) -> str:
    """`value` picked in the close message's 'Change a decision' menu, as Slack sends it."""
    root = bot.message(bot.store.runs.get(run_id).thread_ts or "")
    menu = next(
        e
        for b in root["blocks"]
        if b["type"] == "actions"
        for e in b.get("elements", [])
        if e["action_id"] == CHANGE_ACTION
    )
    option = next(o for o in menu["options"] if o["value"] == value)
    body = sp.block_action(CHANGE_ACTION, "", user=user, channel=root["channel"], message=root)
    payload = json.loads(parse_qs(body)["payload"][0])
    payload["actions"][0] = {
        "type": "static_select",
        "action_id": CHANGE_ACTION,
        "block_id": "closebot:root-stop:0:x",
        "selected_option": option,
        "action_ts": "1.2",
    }
    return urlencode({"payload": json.dumps(payload)})


def at_once(url: str, bodies: list[str]) -> list[int]:
    """Every body posted to `url` at the same instant (released together by a barrier)."""
    gate = threading.Barrier(len(bodies))
    statuses: list[int] = [0] * len(bodies)

    def send(n: int) -> None:
        gate.wait(timeout=20)
        statuses[n] = post(url, bodies[n])

    threads = [threading.Thread(target=send, args=(n,)) for n in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return statuses


def told(fake: FakeSlack, user: str, since: int) -> list[str]:
    """What `user` was told privately (ephemerals) since the fake held `since` of them."""
    return [str(e.get("text") or "") for e in fake.ephemerals[since:] if e["visible_to"] == user]


def test_approve_and_change_a_decision_at_the_same_instant_one_wins_every_time(
    fake: FakeSlack, tmp_path: Path
) -> None:
    """The second approval (which posts) and 'Change a decision' on the first form, sent
    together over HTTP, TRIALS times: each time exactly one takes. Approve won: the batch is
    posted, no change question exists and the person changing is told it was approved. Change
    won: the approval is withdrawn, the batch is not posted, the change waits on its form and
    the approver is told the approval was withdrawn."""
    outcomes = []
    for trial in range(TRIALS):
        db = tmp_path / f"trial{trial}" / "closebot.db"
        db.parent.mkdir()
        bot = Harness(fake, db)
        server = HttpServer(bot.service, host="127.0.0.1", port=0)
        server.start()
        try:
            run = bot.start()
            first = bot.pending(run.id)  # WI/NRI: Baker (1) and Smith (2)
            approval = bot.answer_until(run.id, "Posting")
            bot.submit(approval, {1: 1}, user="UAPPROVER")  # over the limit: a second is asked
            bot.idle()
            second = bot.pending(run.id)
            assert bot.store.questions.get(second).questions[0]["header"] == "Second approval"
            ledger = Ledger(bot.store)
            batch = ledger.current_batch(run.id)
            assert batch is not None
            before = len(fake.ephemerals)
            statuses = at_once(
                f"http://127.0.0.1:{server.port}/slack/events",
                [
                    approve_body(bot, second, "UAPPROVER2"),
                    change_body(bot, run.id, f"{first}:1", "UALICE"),
                ],
            )
            assert statuses == [200, 200]
            bot.idle()
            changes = [q for q in bot.store.questions.of_run(run.id) if q.changes == first]
            posted = ledger.batch(batch["id"])["status"] == "posted"
            approval_record = bot.store.questions.get(second)
            if posted:
                outcome = "approved"
                assert changes == [], f"trial {trial}: posted AND a change was asked"
                assert approval_record.status == "answered"
                waiting = bot.store.questions.pending(run.id)  # the close goes on to sign-off
                assert waiting is None or waiting.changes is None
                said = " ".join(told(fake, "UALICE", before))
                assert "approved" in said and "not changed" in said.casefold(), said
            else:
                outcome = "changed"
                assert approval_record.status == "cancelled" and approval_record.source == "change"
                assert [c.status for c in changes] == ["pending"]
                assert bot.store.questions.pending(run.id) == changes[0]
                assert bot.store.questions.get(changes[0].id).message_ts, "its form was posted"
                said = " ".join(told(fake, "UAPPROVER2", before))
                assert "withdrew" in said and "not approved" in said.casefold(), said
            outcomes.append(outcome)
        finally:
            server.stop()
            bot.close()
    assert len(outcomes) == TRIALS, outcomes


def test_two_slack_ids_of_one_grid_person_cannot_give_both_approvals(
    fake: FakeSlack, db_path: Path
) -> None:
    """UAPPROVER and UAPPROVER2 are one person's accounts in an Enterprise Grid org (users.info
    gives both the same `enterprise_user.id`): the second approval by the other account is
    refused as the same person, audited, and the batch waits; another person's second
    approval posts it."""
    fake.people["UAPPROVER"] = Person("UAPPROVER", "Ann Approver", enterprise_user="W0ANN")
    fake.people["UAPPROVER2"] = Person("UAPPROVER2", "Ann Approver", enterprise_user="W0ANN")
    fake.people["UAPPROVER3"] = Person("UAPPROVER3", "Ben Approver", enterprise_user="W0BEN")
    bot = Harness(fake, db_path, CLOSEBOT_APPROVERS="UAPPROVER,UAPPROVER2,UAPPROVER3")
    try:
        run = bot.start()
        approval = bot.answer_until(run.id, "Posting")
        bot.submit(approval, {1: 1}, user="UAPPROVER")  # over the limit: a second is asked
        bot.idle()
        second = bot.pending(run.id)
        assert bot.store.questions.get(second).questions[0]["header"] == "Second approval"
        batch = Ledger(bot.store).current_batch(run.id)
        assert batch is not None
        before = len(fake.ephemerals)
        bot.submit(second, {1: 1}, user="UAPPROVER2")
        bot.idle()
        said = " ".join(told(fake, "UAPPROVER2", before))
        assert "one person's accounts" in said and "nothing was changed" in said, said
        assert bot.store.questions.get(second).status == "pending"
        assert Ledger(bot.store).batch(batch["id"])["status"] == "draft"
        refused = bot.store.audit.events(run.id, kind="answer_refused")
        assert [e.actor for e in refused] == ["UAPPROVER2"]
        assert "one person's accounts" in refused[0].detail["reason"]
        bot.submit(second, {1: 1}, user="UAPPROVER3")  # a different person
        bot.idle()
        assert Ledger(bot.store).batch(batch["id"])["status"] == "posted"
    finally:
        bot.close()

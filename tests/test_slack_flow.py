"""The Slack app end to end: signed payloads through the real Bolt app, a fake Web API."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.blocks import SUBMIT_ACTION
from bot.close import STEPS, formats
from bot.close.ledger import Ledger
from bot.close.playbook import PlaybookModel
from bot.core.errors import ModelError
from bot.sandbox.slack_api import FakeSlack
from bot.slack.http import edge
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness, distinct_periods


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def inputs(message: dict) -> list[dict]:  # type: ignore[type-arg]
    return [b for b in message["blocks"] if b["type"] in ("input", "actions")]


def all_text(message: dict) -> str:  # type: ignore[type-arg]
    return json.dumps(message["blocks"], ensure_ascii=False)


def test_close_opens_a_thread_asks_as_radio_buttons_and_finishes_after_submit(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start("2026-10")
    root = bot.message(run.thread_ts or "")
    assert (
        root["text"] == "Month-end close · October 2026 · started by Alice"  # a name: no ping
        and root["thread_ts"] is None
    )
    assert bot.message(run.status_ts or "")["thread_ts"] == run.thread_ts
    status = bot.status(run)
    assert "WI/NRI validation — waiting on you" in status and "Intake — done" in status

    question_id = bot.pending(run.id)
    form = bot.form_of(question_id)
    assert form["thread_ts"] == run.thread_ts
    radios = [b["element"] for b in form["blocks"] if b["type"] == "input"]
    # issue 30: two items, one card — a table of them, a menu per row; Other and Why once,
    # only when a choice calls for them (a row set to Other…, an override of a ⭐)
    assert [r["type"] for r in radios] == [
        "static_select",  # Baker 3-1H
        "static_select",  # Smith 14-2H
    ]
    (table,) = [b for b in form["blocks"] if b["type"] == "table"]
    cells = [[c["text"] for c in row] for row in table["rows"]]
    assert cells[0][0] == "Item" and [row[0] for row in cells[1:]] == ["Baker 3-1H", "Smith 14-2H"]
    assert "+$1,200.00" in cells[2]  # Smith 14-2H's JIB billed over the DOI
    # question 1 is Baker 3-1H (JIB only), question 2 Smith 14-2H (both documents agree)
    accept = radios[1]["options"][0]
    assert accept["text"]["text"].endswith("Accept operator's decimal, update DOI ⭐")
    assert radios[1]["initial_option"] == accept
    dispute = radios[0]["options"][2]
    assert dispute["text"]["text"].endswith("Book at DOI, short-pay and dispute ⭐")
    assert radios[0]["initial_option"] == dispute
    # the reasoning and the whole question are one click away, in the Details modal
    details = json.dumps(bot.service.presenter.form_details(question_id), ensure_ascii=False)
    assert "Both operator documents agree" in details
    assert "Billed $13,200.00 vs $12,000.00 at DOI (+$1,200.00)" in details
    buttons = form["blocks"][-1]["elements"]
    assert [b["text"]["text"] for b in buttons] == ["Submit", "Details", "Cancel"]
    assert buttons[0]["style"] == "primary"

    bot.submit(question_id, {1: 3, 2: 1})
    bot.idle()
    answered = bot.form_of(question_id)
    assert inputs(answered) == []  # read-only now
    assert "✅ Alice chose the answers above · " in all_text(
        answered
    ) and "source:" not in all_text(answered)
    assert "✅ Alice chose the answers above · " in all_text(
        answered
    ) and "Book at DOI, short-pay and dispute" in all_text(answered)
    record = bot.store.questions.get(question_id)
    assert (record.status, record.answered_by, record.source) == ("answered", "UALICE", "user")

    approval = bot.answer_until(run.id, "Posting")
    assert "Approve and post" in all_text(bot.form_of(approval))
    bot.finish(run.id)
    finished = bot.store.runs.get(run.id)
    assert finished.status == "done"
    assert "finished" in bot.status(run)
    assert "Intake — done" in bot.status(run) and "waiting" not in bot.status(run)
    summary = [
        m
        for m in fake.thread(run.thread_ts or "")
        if "Month-end close · October 2026" in (m["text"] or "") and "finished" in m["text"]
    ]
    # the summary names who decided (the tool result's user id read as a name: no ping)
    shown = json.dumps(bot.message(summary[-1]["ts"])["blocks"], ensure_ascii=False)
    assert summary and "decided by Alice" in shown and "UALICE" not in shown
    assert "(user)" not in shown  # the stored source word stays in the decision log
    batch = Ledger(bot.store).current_batch(run.id)
    assert batch and batch["status"] == "posted" and batch["posted_by"] == "UAPPROVER"
    status_text = bot.status(run)
    assert status_text.count(" — done") == len(STEPS) and "not run yet" not in status_text
    root = all_text(bot.message(run.thread_ts or ""))
    assert "✅ Finished: every step ran" in root and '"actions"' not in root
    files = fake.to("files.completeUploadExternal")
    assert files and files[0]["thread_ts"] == run.thread_ts
    # the draft journal once (before the first approval form), the decision log, the journal
    # and, posted, its import files for the ledgers the export registry attaches (QuickBooks
    # Online, Xero, NetSuite…)
    names = sorted(f["name"] for f in fake.files.values())
    attached = sorted(f.id for f in formats() if f.attached)
    assert {"qbo", "xero", "netsuite"} <= set(attached)
    assert [n for n in names if n.endswith(tuple(f"-{fmt}.csv" for fmt in attached))] == [
        f"journal-{batch['id']}-{fmt}.csv" for fmt in attached
    ]
    assert len(fake.uploads) == 3 + len(attached) and any(
        b"Accept operator" in data for data in fake.uploads.values()
    )


def test_a_bad_period_gets_an_ephemeral_usage_and_starts_nothing(
    bot: Harness, fake: FakeSlack
) -> None:
    response = bot.command("October")
    assert response.status == 200
    body = json.loads(response.body)
    assert (
        body["response_type"] == "ephemeral"
        and "write it as YYYY-MM" in body["text"]
        and "/close [YYYY-MM]" in body["text"]
    )
    assert bot.store.runs.recent() == [] and fake.to("chat.postMessage") == []


def test_a_required_question_left_empty_is_named_and_the_form_kept(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    before = json.dumps(bot.form_of(question_id)["blocks"])
    # question 2's preselection taken away (question 1's ⭐ kept: no Why box to add)
    bot.submit(question_id, {**bot.recommended_picks(question_id), 2: None})
    bot.idle()
    (notice,) = bot.ephemerals_to("UALICE")
    assert "Not submitted: question 2 (WI/NRI · Smith 14-2H) is required" in notice
    assert json.dumps(bot.form_of(question_id)["blocks"]) == before
    assert bot.store.questions.get(question_id).status == "pending"


def test_someone_neither_starter_nor_approver_is_refused_and_audited(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    bot.submit(question_id, {1: 1, 2: 1}, user="UMALLORY")
    bot.idle()
    (notice,) = bot.ephemerals_to("UMALLORY")
    assert "Only <@UALICE> (who started this close) or an approver can answer this" in notice
    (shown,) = [p["blocks"] for p in fake.to("chat.postEphemeral") if p["user"] == "UMALLORY"]
    assert "Only <@UALICE> (who started" in shown[0]["text"]["text"]  # a mention, not &lt;@…&gt;
    assert bot.store.questions.get(question_id).status == "pending"
    (event,) = bot.store.audit.events(run.id, kind="answer_refused")
    assert event.actor == "UMALLORY"


def test_an_approver_may_answer_someone_elses_run(bot: Harness) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    bot.submit(question_id, {1: 1, 2: 2}, user="UAPPROVER")
    bot.idle()
    assert bot.store.questions.get(question_id).answered_by == "UAPPROVER"


def test_a_double_submit_changes_nothing_the_second_time(bot: Harness) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    form = bot.form_of(question_id)
    form_copy = {**form, "blocks": list(form["blocks"])}
    bot.submit(question_id, {1: 1, 2: 2}, form=form_copy)
    bot.submit(question_id, {1: 2, 2: 2}, form=form_copy)
    bot.idle()
    assert bot.store.questions.get(question_id).answer["1"]["labels"] == [
        "Accept operator's decimal, update DOI"
    ]
    assert bot.ephemerals_to("UALICE") == [
        "This question was already answered by <@UALICE>; nothing was changed."
    ]


def test_two_users_racing_to_submit_have_one_winner(bot: Harness) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    form = bot.form_of(question_id)
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def click(user: str) -> None:
        barrier.wait()
        statuses.append(bot.submit(question_id, {1: 1, 2: 2}, user=user, form=form).status)

    threads = [threading.Thread(target=click, args=(u,)) for u in ("UALICE", "UAPPROVER")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    bot.idle()
    assert statuses == [200, 200]
    winner = bot.store.questions.get(question_id).answered_by
    loser = "UAPPROVER" if winner == "UALICE" else "UALICE"
    assert bot.ephemerals_to(loser) == [
        f"This question was already answered by <@{winner}>; nothing was changed."
    ]
    assert bot.ephemerals_to(winner) == []
    assert len(bot.store.audit.events(run.id, kind="question_answered")) == 1


def test_unknown_action_ids_are_acked_and_change_nothing(bot: Harness, fake: FakeSlack) -> None:
    run = bot.start()
    calls = len(fake.calls)
    response = bot.dispatch(sp.block_action("some_radio_change", "3"), FORM)
    assert response.status == 200
    bot.idle()
    assert len(fake.calls) == calls and bot.store.questions.pending(run.id) is not None


def test_bad_signature_and_stale_timestamp_get_401_and_change_nothing(
    bot: Harness, fake: FakeSlack
) -> None:
    body = sp.slash_command("2026-10")
    forged = sp.signed_headers(body, content_type=FORM, secret="wrong-secret")
    stale = sp.signed_headers(body, content_type=FORM, timestamp=1_000_000_000)
    from slack_bolt.request import BoltRequest

    for headers in (forged, stale):
        assert bot.service.app.dispatch(BoltRequest(body=body, headers=headers)).status == 401
    bot.idle()
    assert bot.store.runs.recent() == [] and fake.to("chat.postMessage") == []


def test_thread_messages_wait_while_a_question_is_pending_and_are_read_after(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    bot.pending(run.id)  # a question is pending
    msg = {
        "type": "message",
        "channel": "CFIN",
        "user": "UALICE",
        "text": "what's the status?",
        "ts": "1761900099.000001",
        "thread_ts": run.thread_ts,
    }
    assert bot.dispatch(sp.event(msg, event_id="Ev1"), "application/json").status == 200
    bot.idle()
    model_calls = len(bot.store.transcript.messages(run.id))
    assert any(
        "I'm waiting on the question above" in (m["text"] or "")
        for m in fake.thread(run.thread_ts or "")
    )
    assert (
        bot.store.questions.pending(run.id) is not None
        and len(bot.store.transcript.messages(run.id)) == model_calls
    )
    bot.finish(run.id)
    transcript = [m.content for m in bot.store.transcript.messages(run.id) if m.role == "user"]
    (heard,) = [
        content
        for content in transcript
        if any("<@UALICE>: what's the status?" in str(b.get("text")) for b in content)
    ]
    # read with the answer it waited for (its tool result), at the step after it
    assert heard[0]["type"] == "tool_result" and heard[-1]["type"] == "text"
    assert bot.store.runs.get(run.id).status == "done"  # the playbook went on to the end


def test_a_retried_event_is_handled_once(bot: Harness, fake: FakeSlack) -> None:
    run = bot.start()
    bot.finish(run.id)
    mention = {
        "type": "app_mention",
        "channel": "CFIN",
        "user": "UALICE",
        "text": "<@UBOT> help",
        "ts": "1761900099.000002",
        "thread_ts": run.thread_ts,
    }
    body = sp.event(mention, event_id="EvRetry")
    assert bot.dispatch(body, "application/json").status == 200
    assert (
        bot.dispatch(
            body,
            "application/json",
            **{"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"},
        ).status
        == 200
    )
    bot.idle()
    said = [
        b
        for m in bot.store.transcript.messages(run.id)
        if m.role == "user"
        for b in m.content
        if b.get("text") == "<@UALICE>: help"
    ]
    assert len(said) == 1
    # the same text as a plain thread message (Slack sends both for a mention) is not handled twice either
    echo = {**mention, "type": "message"}
    bot.dispatch(sp.event(echo, event_id="EvEcho"), "application/json")
    bot.idle()
    assert (
        len(
            [
                b
                for m in bot.store.transcript.messages(run.id)
                if m.role == "user"
                for b in m.content
                if b.get("text") == "<@UALICE>: help"
            ]
        )
        == 1
    )


def test_bot_messages_and_edits_are_ignored(bot: Harness) -> None:
    run = bot.start()
    before = len(bot.store.transcript.messages(run.id))
    for i, extra in enumerate(({"bot_id": "BBOT"}, {"subtype": "message_changed"})):
        msg = {
            "type": "message",
            "channel": "CFIN",
            "user": "UALICE",
            "text": "hi",
            "ts": f"1761900099.00001{i}",
            "thread_ts": run.thread_ts,
            **extra,
        }
        bot.dispatch(sp.event(msg, event_id=f"EvIgnored{i}"), "application/json")
    bot.idle()
    assert (
        len(bot.store.transcript.messages(run.id)) == before and bot.store.inbox.take(run.id) == []
    )


def test_two_runs_in_two_threads_stay_independent(bot: Harness, fake: FakeSlack) -> None:
    first = bot.start(user="UALICE", channel="CFIN")
    (other,) = distinct_periods(Path(bot.store.path).parent, 1)  # a period has one live close
    second = bot.start(other, user="UBOB", channel="CTAX")
    assert first.thread_ts != second.thread_ts
    q1, q2 = bot.pending(first.id), bot.pending(second.id)
    bot.submit(q2, {1: 2, 2: 2}, user="UBOB")
    bot.idle()
    assert bot.store.questions.get(q1).status == "pending"
    assert bot.store.questions.get(q2).answered_by == "UBOB"
    bot.submit(q1, {1: 1, 2: 2}, user="UBOB")  # Bob did not start Alice's close
    bot.idle()
    assert bot.store.questions.get(q1).status == "pending"
    bot.submit(q1, {1: 1, 2: 2})
    bot.idle()
    ledger = Ledger(bot.store)
    assert ledger.exception(f"{first.id}:wi_nri:W-OK-001")["resolution"] == "accept"
    assert ledger.exception(f"{first.id}:wi_nri:W-TX-001")["resolution"] == "protest"
    assert ledger.exception(f"{second.id}:wi_nri:W-OK-001")["resolution"] == "protest"
    for run in (first, second):
        assert all(m["channel"] == run.channel for m in fake.thread(run.thread_ts or ""))


def test_a_form_rebuilt_after_a_restart_still_accepts_its_submit(
    fake: FakeSlack, db_path: Path
) -> None:
    first = Harness(fake, db_path)
    run = first.start()
    question_id = first.pending(run.id)
    first.close()

    second = Harness(fake, db_path)  # a new process: new Store, new app, new runner
    try:
        assert second.service.work.recover() == []  # waiting on a person: nothing to redo
        record = second.store.questions.get(question_id)
        second.service.presenter.post_form(
            record, nonce="rebuilt"
        )  # the form posted again from the store
        rebuilt = second.form_of(question_id)
        assert (
            rebuilt["ts"] != record.message_ts
        )  # a new message, not the one posted before the restart
        assert all(
            b["block_id"].endswith("rebuilt") for b in rebuilt["blocks"] if b["type"] == "input"
        )
        second.submit(question_id, {1: 1, 2: 2}, form=rebuilt)
        second.idle()
        assert second.store.questions.get(question_id).status == "answered"
        assert (
            second.store.questions.pending(run.id) is not None
        )  # the run went on to the approval question
    finally:
        second.close()


def test_a_run_cut_off_mid_turn_is_recovered_at_start(fake: FakeSlack, db_path: Path) -> None:
    first = Harness(fake, db_path)
    run = first.start()
    question_id = first.pending(run.id)
    # Simulate a crash between the claim and the resume: the answer is stored, nothing advanced.
    record = first.store.questions.get(question_id)
    from bot.agent_loop import ask_of
    from bot.core.questions import Response, answer_payload

    first.store.questions.claim(
        question_id,
        answer=answer_payload(
            ask_of(record), {1: Response(selected=(1,)), 2: Response(selected=(2,))}
        ),
        answered_by="UALICE",
        source="user",
    )
    first.close()
    second = Harness(fake, db_path)
    try:
        assert second.service.work.recover() == [run.id]
        second.idle()
        assert inputs(second.form_of(question_id)) == []  # the answered form was turned read-only
        follow_up = second.pending(run.id)  # the accepted decimal asks for its effective date
        assert follow_up != question_id
        assert "From what date does Baker 3-1H's new decimal" in json.dumps(
            second.service.presenter.form_details(follow_up)
        )
    finally:
        second.close()


def test_rate_limited_web_api_calls_are_retried(fake: FakeSlack, bot: Harness) -> None:
    fake.rate_limit["chat.postMessage"] = 1
    run = bot.start()
    assert bot.store.runs.get(run.id).thread_ts in fake.messages
    assert len([c for c in fake.calls if c.method == "chat.postMessage"]) >= 2


def test_submit_is_a_button_named_submit_and_other_text_is_taken(bot: Harness) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    bot.submit(question_id, {2: 2}, other={1: "Hold until the operator sends the assignment"})
    bot.idle()
    answer = bot.store.questions.get(question_id).answer
    assert answer["1"]["other"] == "Hold until the operator sends the assignment"
    exc = Ledger(bot.store).exception(f"{run.id}:wi_nri:W-OK-001")
    # a typed answer books nothing by itself: the exception stays open with the text
    assert exc["status"] == "open" and exc["extra"] == {
        "other": "Hold until the operator sends the assignment",
        "owner": "UALICE",  # who answered owns the open item
    }
    assert SUBMIT_ACTION == "closebot_submit"


def test_a_huge_question_is_served_as_a_searchable_menu(bot: Harness, fake: FakeSlack) -> None:
    from bot.core.questions import parse_ask

    run = bot.start()
    options = [{"label": f"Well {i:03d} " + "x" * 60, "description": "d" * 150} for i in range(100)]
    huge = parse_ask(
        {
            "context": "Map the property",
            "questions": [{"question": "Which well?", "options": options, "recommended": 42}] * 5,
        }
    )
    record, _ = bot.store.questions.create(
        run.id, question_id="toolu_huge", context=huge.context, questions=huge.questions_json()
    )
    bot.service.presenter.post_form(record)
    form = bot.form_of("toolu_huge")
    menu = next(b for b in form["blocks"] if b["type"] == "input")
    assert menu["element"]["type"] == "external_select"
    payload = {
        "type": "block_suggestion",
        "user": {"id": "UALICE"},
        "team": sp.TEAM,
        "container": {"type": "message", "message_ts": form["ts"], "channel_id": form["channel"]},
        "action_id": "answer",
        "block_id": menu["block_id"],
        "value": "well 04",
        "api_app_id": "A0001",
        "token": "legacy",
    }
    response = bot.dispatch(urlencode({"payload": json.dumps(payload)}), FORM)
    found = json.loads(response.body)["options"]
    assert [o["value"] for o in found] == [str(n) for n in range(41, 51)]
    assert found[1]["text"]["text"].endswith("⭐")


def test_an_unanswered_question_times_out_with_its_recommended_answer_but_nothing_is_posted(
    fake: FakeSlack, db_path: Path
) -> None:
    from datetime import UTC, datetime, timedelta

    now = [datetime(2026, 11, 2, 9, 0, tzinfo=UTC)]
    h = Harness(fake, db_path, clock=lambda: now[0], CLOSEBOT_QUESTION_TIMEOUT_MINUTES="60")
    try:
        run = h.start()
        question_id = h.pending(run.id)
        assert "⌛ If nobody answers by" in all_text(
            h.form_of(question_id)
        ) and "the recommended answers are applied" in all_text(h.form_of(question_id))
        now[0] += timedelta(minutes=59)
        assert h.service.work.expire_due() == []
        now[0] += timedelta(minutes=2)
        assert h.service.work.expire_due() == [question_id]
        h.idle()
        record = h.store.questions.get(question_id)
        assert (record.status, record.source, record.answered_by) == (
            "answered",
            "timeout_default",
            "timeout",
        )
        assert (
            "Timed out: the recommended answers were applied" in all_text(h.form_of(question_id))
            and inputs(h.form_of(question_id)) == []
        )
        for _ in range(20):  # every later form times out the same way
            pending = h.store.questions.pending(run.id)
            if pending is None:
                break
            now[0] += timedelta(minutes=61)
            assert h.service.work.expire_due() == [pending.id]
            h.idle()
        batch = Ledger(h.store).current_batch(run.id)
        assert batch and batch["status"] == "draft"  # a timeout is nobody's approval
        approval = [
            q for q in h.store.questions.of_run(run.id) if q.questions[0].get("header") == "Posting"
        ]
        assert approval and approval[0].source == "timeout_default"
        # nor does it put a DOI change in force
        assert [r["status"] for r in Ledger(h.store).all_doi_rows("W-TX-001")] == ["proposed"]
        assert h.store.runs.get(run.id).status == "done"
    finally:
        h.close()


def test_a_mention_outside_a_run_gets_help(bot: Harness, fake: FakeSlack) -> None:
    mention = {
        "type": "app_mention",
        "channel": "CFIN",
        "user": "UALICE",
        "text": "<@UBOT> hello",
        "ts": "1761900200.000001",
    }
    assert bot.dispatch(sp.event(mention, event_id="EvHelp"), "application/json").status == 200
    bot.idle()
    (reply,) = fake.to("chat.postMessage")
    assert reply["thread_ts"] == "1761900200.000001" and "/close [YYYY-MM]" in reply["text"]
    assert bot.store.runs.recent() == []


def test_a_form_that_never_reached_slack_is_posted_at_recovery(
    fake: FakeSlack, db_path: Path
) -> None:
    first = Harness(fake, db_path)
    run = first.start()
    question_id = first.pending(run.id)
    first.store.db.execute(
        "update questions set message_ts = null where id = ?", (question_id,)
    )  # as if the post had failed
    first.close()
    second = Harness(fake, db_path)
    try:
        assert second.service.work.recover() == []
        second.idle()
        form = second.form_of(question_id)
        assert form["thread_ts"] == run.thread_ts and inputs(form)
    finally:
        second.close()


def test_malformed_payloads_change_nothing(bot: Harness, fake: FakeSlack) -> None:
    run = bot.start()
    question_id = bot.pending(run.id)
    calls = len(fake.calls)
    empty = {"type": "block_actions", "team": sp.TEAM, "actions": [], "user": {"id": "UALICE"}}
    # Bolt itself fails on an action-less block_actions, before any listener: the edge in
    # front of it refuses the body with a 400 (tests/test_edge.py sends it over HTTP).
    raw = urlencode({"payload": json.dumps(empty)})
    with pytest.raises(edge.Refused) as refused:
        edge.check(raw.encode(), sp.signed_headers(raw, content_type=FORM), sp.SECRET)
    assert refused.value.status == 400
    for payload in (
        {
            "type": "block_actions",
            "team": sp.TEAM,
            "actions": [{"action_id": "closebot_submit", "value": question_id}],
            "api_app_id": "A0001",
            "token": "t",
        },
        {
            "type": "block_actions",
            "team": sp.TEAM,
            "user": {"id": "UALICE"},
            "actions": [{"action_id": "closebot_submit", "value": question_id}],
            "state": {"values": "nonsense"},
            "api_app_id": "A0001",
            "token": "t",
        },
    ):
        response = bot.dispatch(urlencode({"payload": json.dumps(payload)}), FORM)
        assert response.status == 200, response.body
    bot.idle()
    assert bot.store.questions.get(question_id).status == "pending"
    notices = [c.params["text"] for c in fake.calls[calls:]]
    assert notices == [
        "Not submitted: the form sent no values. Your choices are still in the form."
    ]


class FlakyPlaybook:
    """The playbook, except that the next reply fails as an unreachable API would."""

    name = "flaky-playbook"

    def __init__(self) -> None:
        self.inner = PlaybookModel()
        self.fail_next = False

    def respond(self, **kw: Any) -> Any:
        if self.fail_next:
            self.fail_next = False
            # not a passing failure (those wait and retry by themselves): one that fails the turn
            raise ModelError("the Anthropic SDK failed: the stream ended early")
        return self.inner.respond(**kw)


def test_a_failed_turn_is_retried_by_a_thread_message_without_losing_it(
    fake: FakeSlack, db_path: Path
) -> None:
    model = FlakyPlaybook()
    h = Harness(fake, db_path, model=model)

    def say(text: str, n: int) -> None:
        msg = {
            "type": "message",
            "channel": "CFIN",
            "user": "UALICE",
            "text": text,
            "ts": f"1761900300.00000{n}",
            "thread_ts": run.thread_ts,
        }
        h.dispatch(sp.event(msg, event_id=f"EvRetry{n}"), "application/json")
        h.idle()

    try:
        run = h.start()
        model.fail_next = True
        h.submit(h.pending(run.id), {1: 1, 2: 2})
        h.idle()
        assert h.store.runs.get(run.id).status == "failed"
        assert any(
            "The close stopped: the Anthropic SDK failed: the stream ended early"
            in (m["text"] or "")
            for m in fake.thread(run.thread_ts or "")
        )
        model.fail_next = True
        say(
            "retry please", 1
        )  # the retry fails too: the message is kept, not pushed after the failure
        assert h.store.runs.get(run.id).status == "failed"
        roles = [m.role for m in h.store.transcript.messages(run.id)]
        assert all(a != b for a, b in itertools.pairwise(roles))  # never two user messages in a row
        say("retry", 2)
        assert (
            h.store.questions.pending(run.id) is not None
        )  # the turn went on to the approval question
        roles = [m.role for m in h.store.transcript.messages(run.id)]
        assert all(a != b for a, b in itertools.pairwise(roles))
        # heard by the agent at the turn's next step (with its tool results), once each
        heard = [
            str(b.get("text"))
            for m in h.store.transcript.messages(run.id)
            if m.role == "user" and any(b.get("type") == "tool_result" for b in m.content)
            for b in m.content
            if b.get("type") == "text"
        ]
        assert sum("retry please" in t for t in heard) == 1
        assert sum("<@UALICE>: retry\n" in t + "\n" for t in heard) == 1
        assert h.store.inbox.take(run.id) == []
    finally:
        h.close()

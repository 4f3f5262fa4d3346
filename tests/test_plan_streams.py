"""The plan across human waits, against Slack's rules for streams: a stream ends about five
minutes after it starts (python-slack-sdk #1859, node-slack-sdk #2702), a streaming message
cannot be edited (`streaming_state_conflict`), and a person can stop the app's work (Slack's
Stop: `agent_session_stopped`). closebot streams one working stretch at a time (a short one
between two waits is drawn on the stopped plan as a Block Kit plan instead: Tier 2 budget),
stops the plan before each wait, mends a stream Slack ended, and takes Slack's Stop as Stop."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.close.playbook import PlaybookModel
from bot.close.steps import names as step_names
from bot.sandbox.run import STARTER, Sandbox
from bot.sandbox.slack_api import FakeSlack, fake_slack
from bot.sandbox.slack_api.streams import STREAM_LIFETIME
from bot.slack.presenter.plan import TASK_STATUS
from bot.slack.presenter.status import PLAN_GAP, STREAM_AFTER
from tests import slack_payloads as sp
from tests.slack_harness import Harness, drawn_plan, status_text

TOKEN = "xoxb-stream-tests"
LONGER_THAN_A_STREAM = STREAM_LIFETIME.total_seconds() + 60  # a person takes their time


def error_of(call: Any) -> str:
    with pytest.raises(SlackApiError) as caught:
        call()
    return str(caught.value.response["error"])


def start_stream(client: WebClient, channel: str = "CFIN") -> tuple[str, str]:
    root = str(client.chat_postMessage(channel=channel, text="a close")["ts"])
    ts = client.chat_startStream(
        channel=channel,
        thread_ts=root,
        recipient_user_id="UALICE",
        recipient_team_id="T0SANDBOX",
        task_display_mode="plan",
        chunks=[{"type": "task_update", "id": "1", "title": "Intake", "status": "in_progress"}],
    )["ts"]
    return root, str(ts)


# -- the fake keeps Slack's rules ---------------------------------------------------------


def test_a_stream_ends_after_slacks_lifetime_and_shows_broken_until_mended() -> None:
    with fake_slack(token=TOKEN) as fake:
        client = WebClient(token=TOKEN, base_url=fake.api_url)
        _, ts = start_stream(client)
        task = {"type": "task_update", "id": "1", "title": "Intake", "status": "complete"}
        client.chat_appendStream(channel="CFIN", ts=ts, chunks=[task])  # within its lifetime
        fake.advance(STREAM_LIFETIME.total_seconds() - 1)
        client.chat_appendStream(channel="CFIN", ts=ts, chunks=[task])  # appends do not extend it
        fake.advance(1)
        assert fake.messages[ts]["stream"]["state"] == "expired"  # the broken placeholder
        for call in (
            lambda: client.chat_appendStream(channel="CFIN", ts=ts, chunks=[task]),
            lambda: client.chat_stopStream(channel="CFIN", ts=ts),
        ):
            assert error_of(call) == "message_not_in_streaming_state"
        client.chat_update(channel="CFIN", ts=ts, text="Intake — done")  # the only way to mend it
        assert "stream" not in fake.messages[ts] and fake.messages[ts]["text"] == "Intake — done"


def test_a_shorter_lifetime_is_set_per_workspace() -> None:
    with fake_slack(token=TOKEN) as fake:
        fake.stream_lifetime = timedelta(seconds=30)
        client = WebClient(token=TOKEN, base_url=fake.api_url)
        _, ts = start_stream(client)
        fake.advance(30)
        assert error_of(lambda: client.chat_stopStream(channel="CFIN", ts=ts)) == (
            "message_not_in_streaming_state"
        )


def test_chat_update_of_a_message_still_streaming_is_a_streaming_state_conflict() -> None:
    with fake_slack(token=TOKEN) as fake:
        client = WebClient(token=TOKEN, base_url=fake.api_url)
        _, ts = start_stream(client)
        assert error_of(lambda: client.chat_update(channel="CFIN", ts=ts, text="x")) == (
            "streaming_state_conflict"
        )
        assert fake.messages[ts]["stream"]["state"] == "streaming"  # untouched
        client.chat_stopStream(channel="CFIN", ts=ts)
        client.chat_update(channel="CFIN", ts=ts, text="x")  # a stopped stream may be edited


def test_a_person_stops_the_apps_streams_in_a_thread() -> None:
    with fake_slack(token=TOKEN) as fake:
        client = WebClient(token=TOKEN, base_url=fake.api_url)
        root, ts = start_stream(client)
        _, other = start_stream(client)
        assert fake.stop_streams_by_user("CFIN", root, "UALICE") == [ts]
        stream = fake.messages[ts]["stream"]
        assert (stream["state"], stream["stopped_by"]) == ("stopped_by_user", "UALICE")
        assert stream["tasks"]  # what was streamed stays
        assert error_of(lambda: client.chat_appendStream(channel="CFIN", ts=ts, chunks=[])) in (
            "message_not_in_streaming_state"
        )
        assert fake.messages[other]["stream"]["state"] == "streaming"  # another thread's
        assert fake.stop_streams_by_user("CFIN", root, "UALICE") == []  # nothing left to stop


# -- closebot keeps its plan readable across every wait --------------------------------


def blocks_of(params: dict[str, Any]) -> list[dict[str, Any]]:
    found = params.get("blocks") or []
    return json.loads(found) if isinstance(found, str) else list(found)


def plans_in(fake: FakeSlack, thread_ts: str) -> list[dict[str, Any]]:
    return [m for m in fake.thread(thread_ts) if m.get("stream") is not None]


def test_a_close_whose_waits_outlast_a_stream_keeps_its_plan_readable_the_whole_time(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    approvers = {"Posting": "UAPPROVER", "Second approval": "UAPPROVER2"}
    try:
        bot.service.presenter.status.clock = fake.now  # the plan's folds on the fake's time
        run = bot.start()
        waits = 0
        plan_ts_seen = set()
        while (record := bot.store.questions.pending(run.id)) is not None:
            fake.advance(LONGER_THAN_A_STREAM)  # the person answers after Slack would end it
            bot.service.presenter.draw_owed_plans()  # the watchdog's tick meanwhile
            plan_ts = bot.store.runs.get(run.id).status_ts or ""
            plan_ts_seen.add(plan_ts)
            plan = fake.messages[plan_ts]
            # it shows the steps as they stand at this wait, not an earlier one's
            steps = bot.store.runs.get(run.id).steps
            assert [
                t["status"] for t in (plan.get("stream") or drawn_plan(plan) or {})["tasks"]
            ] == [TASK_STATUS[steps.get(s, "pending")] for s in step_names()], waits
            # the plan was stopped before the wait (or, after a short stretch, the stopped
            # plan drawn anew as a plan): what it shows stays, no broken placeholder
            assert (plan.get("stream") or {}).get("state", "drawn") in ("stopped", "drawn")
            assert plan.get("stream") or drawn_plan(plan), waits
            shown = status_text(plan).split("\n")
            assert shown[0].endswith("— waiting on you")
            assert [line.split(" — ")[0] for line in shown[1:-1]] == list(step_names())
            assert any("waiting on you" in line for line in shown[1:-1])
            who = approvers.get(record.questions[0].get("header") or "", "UALICE")
            bot.submit(record.id, bot.recommended_picks(record.id), user=who)
            bot.idle()
            waits += 1
        run = bot.store.runs.get(run.id)
        assert run.status == "done" and waits >= 5
        final = fake.messages[run.status_ts or ""]
        # the close's end is drawn on the plan already in the thread (stopped, or drawn anew
        # as a plan): one plan a thread, none posted after it (issue 30)
        assert (final.get("stream") or {}).get("state", "drawn") in ("stopped", "drawn")
        assert status_text(final).count(" — done") == len(step_names())
        after = [m for m in fake.thread(run.thread_ts or "") if float(m["ts"]) > float(final["ts"])]
        assert not [m for m in after if m.get("stream") or drawn_plan(m)]
        # every plan is still a plan, readable: none broken, none left streaming, none
        # replaced by plain status blocks (a plan is only ever drawn again as a plan)
        plans = plans_in(fake, run.thread_ts or "")
        # (each stream left is stopped; the last may have been drawn anew as a plan)
        assert {p["stream"]["state"] for p in plans} <= {"stopped"}
        plan_ts_seen |= {p["ts"] for p in plans}
        for ts in plan_ts_seen:
            assert fake.messages[ts].get("stream") or drawn_plan(fake.messages[ts]), ts
        redrawn = [p for p in fake.to("chat.update") if p["ts"] in plan_ts_seen]
        assert all(drawn_plan({"blocks": blocks_of(p)}) for p in redrawn)
        # fewer streams than waits: a short stretch between two waits costs no
        # chat.startStream / chat.stopStream (Tier 2)
        assert len(fake.to("chat.startStream")) < waits
    finally:
        bot.close()


class HeldPlaybook:
    """The playbook, except that one reply waits until the test lets it go (a model slow to
    answer in the middle of a working stretch)."""

    name = "held-playbook"

    def __init__(self) -> None:
        self.inner = PlaybookModel()
        self.hold_next = False
        self.arrived = threading.Event()
        self.release = threading.Event()

    def respond(self, **kw: Any) -> Any:
        if self.hold_next:
            self.hold_next = False
            self.arrived.set()
            assert self.release.wait(20), "the test never let the model answer"
        return self.inner.respond(**kw)


def working_stretch(bot: Harness, model: HeldPlaybook) -> tuple[str, str]:
    """Answer the first form and hold the model in the stretch after it: (run id, the ts of
    the stretch's plan, still streaming)."""
    bot.service.presenter.status.clock = bot.fake.now  # the stretch's length, moved
    run = bot.start()
    model.hold_next = True
    bot.submit(bot.pending(run.id), bot.recommended_picks(bot.pending(run.id)))
    assert model.arrived.wait(20), "the close did not go on after the answer"
    bot.service.presenter.update_status(run.id)  # the stretch is at work ...
    bot.fake.advance(STREAM_AFTER)  # ... long enough for its plan to stream
    bot.service.presenter.update_status(run.id)
    plan_ts = bot.store.runs.get(run.id).status_ts or ""
    assert bot.fake.messages[plan_ts]["stream"]["state"] == "streaming"
    return run.id, plan_ts


def test_a_stretch_that_outlasts_its_stream_mends_it_and_goes_on_in_a_new_one(
    fake: FakeSlack, db_path: Path
) -> None:
    model = HeldPlaybook()
    bot = Harness(fake, db_path, model=model)
    try:
        run_id, plan_ts = working_stretch(bot, model)
        fake.advance(LONGER_THAN_A_STREAM)  # the model takes longer than Slack keeps a stream
        assert fake.messages[plan_ts]["stream"]["state"] == "expired"  # broken, for now
        # the stretch's next step change
        bot.store.runs.set_step(run_id, list(step_names())[1], "done")
        bot.service.presenter.update_status(run_id)
        # the broken stream was mended (chat.update) and the stretch goes on in a new stream
        mended = fake.messages[plan_ts]
        assert "stream" not in mended and "WI/NRI validation" in status_text(mended)
        run = bot.store.runs.get(run_id)
        assert run.status_ts != plan_ts
        assert fake.messages[run.status_ts or ""]["stream"]["state"] == "streaming"
        model.release.set()
        bot.idle()
        run = bot.store.runs.get(run_id)
        assert run.status == "waiting"  # the next form: the new stream was stopped for it
        assert fake.messages[run.status_ts or ""]["stream"]["state"] == "stopped"
        states = [(m.get("stream") or {}).get("state") for m in fake.thread(run.thread_ts or "")]
        assert "expired" not in states and "streaming" not in states
    finally:
        model.release.set()
        bot.close()


def test_a_stream_slack_ends_during_a_stretch_is_mended_at_the_wait(
    fake: FakeSlack, db_path: Path
) -> None:
    model = HeldPlaybook()
    bot = Harness(fake, db_path, model=model)
    try:
        run_id, plan_ts = working_stretch(bot, model)
        fake.advance(LONGER_THAN_A_STREAM)
        model.release.set()  # the stretch ends on the next form with no step change between
        bot.idle()
        run = bot.store.runs.get(run_id)
        shown = fake.messages[run.status_ts or ""]
        assert "stream" not in shown and "waiting on you" in status_text(shown)
        answer = bot.pending(run_id)
        model.arrived.clear()
        model.release.clear()
        model.hold_next = True  # the next stretch works long enough to stream
        bot.submit(answer, bot.recommended_picks(answer))
        assert model.arrived.wait(20), "the close did not go on after the answer"
        bot.service.presenter.update_status(run_id)
        fake.advance(STREAM_AFTER)
        bot.service.presenter.update_status(run_id)
        model.release.set()
        bot.idle()
        # the next stretch is streamed again, and stopped for the next wait
        run = bot.store.runs.get(run_id)
        assert run.status_ts != plan_ts
        assert fake.messages[run.status_ts or ""]["stream"]["state"] == "stopped"
    finally:
        model.release.set()
        bot.close()


def test_the_bot_never_edits_a_plan_that_still_streams(fake: FakeSlack, db_path: Path) -> None:
    model = HeldPlaybook()
    bot = Harness(fake, db_path, model=model)
    refused: list[str] = []
    fake.on_refusal = lambda method, body: refused.append(f"{method}: {body['error']}")
    try:
        run_id, plan_ts = working_stretch(bot, model)
        # Slack is unwell for one append: the stream still streams, so it is not edited
        fake.fail("chat.appendStream", error="internal_error", times=1)
        step = list(step_names())[1]  # the step at work (WI/NRI validation)
        bot.store.runs.set_step(run_id, step, "done")
        with pytest.raises(SlackApiError):
            bot.service.presenter.update_status(run_id)
        assert fake.messages[plan_ts]["stream"]["state"] == "streaming"
        bot.service.presenter.update_status(run_id)  # the next update carries the state
        assert fake.messages[plan_ts]["stream"]["tasks"][1]["status"] == "complete"
        model.release.set()
        bot.idle()
        assert not [p for p in fake.to("chat.update") if p["ts"] == plan_ts]
        assert [r for r in refused if "streaming_state_conflict" in r] == []
    finally:
        model.release.set()
        bot.close()


def test_slacks_own_stop_on_the_plan_stops_the_close(fake: FakeSlack, db_path: Path) -> None:
    model = HeldPlaybook()
    bot = Harness(fake, db_path, model=model)
    try:
        run_id, plan_ts = working_stretch(bot, model)
        run = bot.store.runs.get(run_id)
        # Alice presses Slack's Stop: Slack stops the stream and tells the app
        stopped = fake.stop_streams_by_user(run.channel or "", run.thread_ts or "", "UALICE")
        assert stopped == [plan_ts]
        event = {
            "type": "agent_session_stopped",
            "channel": run.channel,
            "user": "UALICE",
            "thread_ts": run.thread_ts,
            "streaming_message_ts": stopped,
            "event_ts": "1761909999.000100",
        }
        response = bot.dispatch(sp.event(event, event_id="EvSlackStop"), "application/json")
        assert response.status == 200
        model.release.set()
        bot.idle()
        run = bot.store.runs.get(run_id)
        assert (run.status, run.stop_requested_by) == ("cancelled", "UALICE")
        assert all(q.status != "pending" for q in bot.store.questions.of_run(run_id))
        assert any("stopped this close" in t for t in bot.thread_texts(run))
        # the stopped stream was mended to show the close stopped (no task left spinning)
        shown = fake.messages[plan_ts]
        assert "stream" not in shown and "cancelled" in status_text(shown)
    finally:
        model.release.set()
        bot.close()


def test_slacks_stop_from_someone_who_may_not_stop_the_close_changes_nothing(
    fake: FakeSlack, db_path: Path
) -> None:
    model = HeldPlaybook()
    bot = Harness(fake, db_path, model=model)
    try:
        run_id, plan_ts = working_stretch(bot, model)
        run = bot.store.runs.get(run_id)
        stopped = fake.stop_streams_by_user(run.channel or "", run.thread_ts or "", "UMALLORY")
        event = {
            "type": "agent_session_stopped",
            "channel": run.channel,
            "user": "UMALLORY",
            "thread_ts": run.thread_ts,
            "streaming_message_ts": stopped,
            "event_ts": "1761909999.000200",
        }
        bot.dispatch(sp.event(event, event_id="EvSlackStopRefused"), "application/json")
        model.release.set()
        bot.idle()
        run = bot.store.runs.get(run_id)
        assert run.status == "waiting" and run.stop_requested_by is None
        assert bot.ephemerals_to("UMALLORY")  # told, privately, why not
        # the close went on to its next form; the stopped stream was mended to show it
        assert run.status_ts == plan_ts
        shown = fake.messages[plan_ts]
        assert "stream" not in shown and "waiting on you" in status_text(shown)
    finally:
        model.release.set()
        bot.close()


def test_a_persons_stop_in_the_sandbox_reaches_the_bot_as_slacks_event(
    sandbox: Sandbox,
) -> None:
    said = sandbox.client.say(user=STARTER.id, channel="CFINANCE", text="/close 2026-10")
    assert said["ok"]
    fake = sandbox.fake
    assert fake.wait_for(lambda: bool(sandbox.store.runs.recent()), timeout=30)
    service = sandbox.service
    assert service is not None and service.runner.wait_idle(30)
    (run,) = sandbox.store.runs.recent()
    # a stream of the app's in the close's thread, as the plan is while the close works
    bot = WebClient(token=fake.token, base_url=fake.api_url)
    live = bot.chat_startStream(
        channel=run.channel or "",
        thread_ts=run.thread_ts or "",
        recipient_user_id=STARTER.id,
        recipient_team_id="T0SANDBOX",
        markdown_text="working…",
    )["ts"]
    answer = sandbox.client.stop_stream(user=STARTER.id, channel=run.channel or "", ts=live)
    assert answer == {"ok": True, "stopped": [live]}
    assert fake.wait_for(
        lambda: sandbox.store.runs.get(run.id).status == "cancelled", timeout=30
    ), "Slack's Stop did not stop the close"
    assert sandbox.store.runs.get(run.id).stop_requested_by == STARTER.id


def test_a_plan_owed_at_a_quick_wait_is_drawn_once_its_gap_has_passed(
    fake: FakeSlack, db_path: Path
) -> None:
    """Answers quicker than PLAN_GAP: the plan at the next wait is owed (no chat.update of
    it yet), and the watchdog's tick draws it, as a plan, once the gap has passed."""
    bot = Harness(fake, db_path)
    presenter = bot.service.presenter
    presenter.status.clock = fake.now
    try:
        run = bot.start()
        for _ in range(2):  # two quick answers: the second wait comes within the gap
            first = bot.pending(run.id)
            bot.submit(first, bot.recommended_picks(first))
            bot.idle()
        run = bot.store.runs.get(run.id)
        assert run.status == "waiting"
        plan_ts = run.status_ts or ""
        owed = [r for r, _ in presenter.status.owed()]
        assert owed == [] and run.id in dict(presenter.status._plan_owed)  # owed, not yet due
        updates = len([p for p in fake.to("chat.update") if p["ts"] == plan_ts])
        assert presenter.draw_owed_plans() == []  # within the gap: nothing drawn
        fake.advance(PLAN_GAP)
        assert presenter.draw_owed_plans() == [run.id]
        drawn = [p for p in fake.to("chat.update") if p["ts"] == plan_ts]
        assert len(drawn) == updates + 1 and drawn_plan({"blocks": blocks_of(drawn[-1])})
        steps = bot.store.runs.get(run.id).steps
        shown = drawn_plan(fake.messages[plan_ts]) or {}
        assert [t["status"] for t in shown["tasks"]] == [
            TASK_STATUS[steps.get(s, "pending")] for s in step_names()
        ]
        assert presenter.draw_owed_plans() == []  # drawn once
    finally:
        bot.close()

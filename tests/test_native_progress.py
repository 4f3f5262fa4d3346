"""Slack's own progress surfaces: the thread's status line (assistant.threads.setStatus) while a
turn works, and the close's steps as a streamed plan (chat.startStream with
task_display_mode "plan", a task_update per step, chat.stopStream before each human wait and
with the final state: a stream per working stretch) — with the ordinary status message where
Slack refuses the stream. All on the one fake, which checks every chunk the way Slack does.
(The plan across waits longer than Slack keeps a stream: tests/test_plan_streams.py.)"""

from __future__ import annotations

import csv
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.close.ledger import Ledger
from bot.close.steps import names as step_names
from bot.sandbox.blockkit import problems
from bot.sandbox.slack_api import FakeSlack
from tests.slack_harness import Harness, drawn_plan, refuse_streams, status_text

STATUSES = {"pending", "in_progress", "complete", "error"}
ORDER = {"pending": 0, "in_progress": 1, "complete": 2, "error": 2}


def stream_calls(fake: FakeSlack, ts: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (c.method, c.params)
        for c in fake.calls
        if c.method in ("chat.appendStream", "chat.stopStream") and c.params.get("ts") == ts
    ]


def test_a_whole_close_streams_its_plan_one_working_stretch_at_a_time(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    bot.service.presenter.status.clock = lambda: 0.0  # every stretch after a wait is short
    try:
        run = bot.start()
        (start,) = fake.to("chat.startStream")
        assert start["task_display_mode"] == "plan" and start["thread_ts"] == run.thread_ts
        # In a channel Slack needs whom the stream answers.
        assert start["recipient_user_id"] == "UALICE" and start["recipient_team_id"]
        first = [c for c in start["chunks"] if c["type"] == "task_update"]
        assert [c["title"] for c in first] == list(step_names())
        assert {c["status"] for c in first} <= STATUSES
        bot.finish(run.id)
        run = bot.store.runs.get(run.id)
        assert run.status == "done"
        forms = bot.store.questions.of_run(run.id)
        # one stream per working stretch that works STREAM_AFTER seconds: here the first only
        # (the short stretches between two waits are drawn on the stopped plan instead, no
        # stream of their own: chat.startStream is Tier 2); and the close's end is drawn on
        # that same plan, not a second plan posted below it (issue 30: one plan a thread)
        starts = [c for c in fake.calls if c.method == "chat.startStream"]
        assert len(forms) >= 5 and len(starts) == 1
        ts = str(run.status_ts)
        calls = stream_calls(fake, ts)
        # appended while the close moved, stopped once before the first wait, nothing after
        assert [m for m, _ in calls].count("chat.stopStream") == 1, calls
        assert calls[-1][0] == "chat.stopStream"
        assert all(m == "chat.appendStream" for m, _ in calls[:-1])
        assert "waiting on you" in (calls[-1][1]["chunks"][0].get("title") or "")
        redrawn = [p for p in fake.to("chat.update") if p["ts"] == ts]
        plan = drawn_plan(fake.messages[ts])
        assert redrawn and plan is not None  # a plan is only ever drawn again as a plan
        moves: list[dict[str, Any]] = [starts[0].params, *(params for _, params in calls)]
        # every step moved forward only (pending → in_progress → complete; fast changes are
        # folded into one update, so a quick step may go straight to complete)
        seen: dict[str, list[str]] = {}
        for params in moves:
            for chunk in params.get("chunks") or []:
                if chunk["type"] == "task_update":
                    seen.setdefault(chunk["title"], []).append(chunk["status"])
        for task in plan["tasks"]:
            seen.setdefault(task["title"], []).append(task["status"])
        for step in step_names():
            assert seen[step][-1] == "complete", (step, seen[step])
            order = [ORDER[status] for status in seen[step]]
            assert order == sorted(order), (step, seen[step])
        assert any("in_progress" in statuses for statuses in seen.values())
        assert "finished" in (plan["title"] or "")
        assert [t["status"] for t in plan["tasks"]] == ["complete"] * len(step_names())
        # each step's one-line result travels with it
        journal = next(t for t in plan["tasks"] if t["title"] == "Journal entries")
        assert "entries, $" in journal["output"] and "(posted)" in journal["output"]
        # no ordinary status message was posted: the one plan in the thread shows the end
        shown = [m for m in fake.thread(run.thread_ts or "") if m.get("stream") or drawn_plan(m)]
        assert [m["ts"] for m in shown] == [ts]
    finally:
        bot.close()


def test_a_refused_stream_falls_back_to_the_status_message_and_loses_nothing(
    fake: FakeSlack, db_path: Path
) -> None:
    refuse_streams(fake)
    bot = Harness(fake, db_path)
    try:
        run = bot.start()
        assert len(fake.to("chat.startStream")) == 1  # tried once, refused
        status = bot.message(run.status_ts or "")
        assert "stream" not in status and status["blocks"]
        assert "WI/NRI validation — waiting on you" in status_text(status)
        bot.finish(run.id)
        text = status_text(bot.message(run.status_ts or ""))
        assert text.count(" — done") == len(step_names()) and "finished" in text
        assert fake.to("chat.appendStream") == [] and fake.to("chat.stopStream") == []
    finally:
        bot.close()


def test_streams_slack_ends_at_once_are_mended_and_nothing_is_left_broken(
    fake: FakeSlack, db_path: Path
) -> None:
    fake.stream_lifetime = timedelta(0)  # Slack ends every stream as soon as it starts
    bot = Harness(fake, db_path)
    try:
        run = bot.start()
        bot.finish(run.id)
        run = bot.store.runs.get(run.id)
        thread = fake.thread(run.thread_ts or "")
        # no broken placeholder is left: each ended stream was mended with chat.update
        assert not [m["ts"] for m in thread if (m.get("stream") or {}).get("state")]
        status = bot.message(run.status_ts or "")
        text = status_text(status)
        assert "stream" not in status and text.count(" — done") == len(step_names())
        assert "finished" in text
    finally:
        bot.close()


def test_the_threads_status_names_the_step_with_its_figures_and_is_cleared(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    try:
        run = bot.start()
        bot.finish(run.id)
        sent = [p for p in fake.to("assistant.threads.setStatus") if p["status"]]
        assert sent and all(p["thread_ts"] == run.thread_ts for p in sent)
        assert all(1 <= len(p["loading_messages"]) <= 10 for p in sent)
        # An independent count of the JIB lines the close read.
        with (Path(bot.service.work.data_dir or "") / "2026-10" / "jib.csv").open() as f:
            lines = sum(1 for _ in csv.DictReader(f))
        said = [m for p in sent for m in p["loading_messages"]]
        assert f"Reconciling {lines} JIB lines…" in said
        assert fake.status_of(run.channel or "", run.thread_ts or "") is None
    finally:
        bot.close()


def test_a_whole_close_posts_only_the_plan_the_forms_the_summary_and_the_files(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    bot.service.presenter.status.clock = lambda: 0.0  # every stretch after a wait is short
    try:
        run = bot.start()
        bot.finish(run.id)
        run = bot.store.runs.get(run.id)
        forms = {q.message_ts for q in bot.store.questions.of_run(run.id)}
        thread = fake.thread(run.thread_ts or "")
        kinds = []
        for message in thread:
            if message.get("stream") is not None or drawn_plan(message):
                kinds.append("plan")
            elif message["ts"] in forms:
                kinds.append("form")
            elif message.get("files"):
                kinds.append("files")
            elif "finished" in (message.get("text") or ""):
                kinds.append("summary")
            else:
                kinds.append(f"other: {message.get('text')!r}")
        # one plan: the first stretch's, above the first form it stopped for, drawn anew at
        # the waits after it and at the close's end (issue 30: one plan a thread)
        assert kinds[0] == "plan" and kinds.count("plan") == 1
        assert kinds.count("summary") == 1 and kinds.count("form") == len(forms)
        assert [k for k in kinds if k.startswith("other")] == []
        # the model's narration went onto the plan's steps instead of the thread
        streamed = ("chat.startStream", "chat.appendStream", "chat.stopStream")
        calls = [c for c in fake.calls if c.method in streamed]
        details = [
            chunk.get("details")
            for c in calls
            for chunk in c.params.get("chunks") or []
            if chunk.get("details")
        ]
        assert details, "no narration reached the plan"
        assert all(len(d) <= 200 and "\n" not in d for d in details)
    finally:
        bot.close()


def _amount(cell: dict[str, Any]) -> Decimal:
    text = str(cell.get("text") or "").strip().replace("$", "").replace(",", "")
    return Decimal(text) if text else Decimal(0)


def test_the_posting_approval_carries_its_entries_as_one_table_within_slacks_limits(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    try:
        run = bot.start()
        approval = bot.answer_until(run.id, "Posting")
        form = bot.form_of(approval)
        assert problems(form["blocks"]) == []  # as the fake checked it when it was posted
        (table,) = [b for b in form["blocks"] if b["type"] == "table"]
        rows = table["rows"]
        assert 2 <= len(rows) <= 100 and all(1 <= len(r) <= 20 for r in rows)
        assert len({len(r) for r in rows}) == 1  # every row as wide as the header
        header = [c["text"] for c in rows[0]]
        debit, credit = header.index("Debit"), header.index("Credit")
        body = [r for r in rows[1:] if r[0]["text"].split()[0].isdigit()]  # "2115 Accrued LOE"
        # An independent sum of the draft batch's lines, per account.
        batch = Ledger(bot.store).current_batch(run.id)
        assert batch is not None
        lines = Ledger(bot.store).lines(batch["id"])
        by_account: dict[str, list[Decimal]] = {}
        for line in lines:
            acc = by_account.setdefault(str(line["account"]), [Decimal(0), Decimal(0)])
            acc[0] += Decimal(str(line["debit"] or 0))
            acc[1] += Decimal(str(line["credit"] or 0))
        # issue 30: the approval card shows its first accounts, the rest counted in one row
        # (every line is in the draft journal attached above it), and the total
        shown = {r[0]["text"].split()[0] for r in body}
        assert shown <= set(by_account) and shown
        (more,) = [r for r in rows[1:] if r[0]["text"].startswith("… ")]
        assert more[0]["text"].startswith(f"… {len(by_account) - len(shown)} more accounts")
        for r in body:
            d, c = by_account[r[0]["text"].split()[0]]
            assert (_amount(r[debit]), _amount(r[credit])) == (d, c)
        total = sum((d for d, _ in by_account.values()), Decimal(0))
        assert total == sum((c for _, c in by_account.values()), Decimal(0))
        assert any(_amount(r[debit]) == total for r in rows[1:] if r[0]["text"] == "Total")
        assert form["text"]  # the text fallback is kept for notifications
    finally:
        bot.close()


def test_the_channel_message_names_only_who_the_form_waits_on(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    try:
        run = bot.start()
        state = bot.message(run.thread_ts or "")["blocks"][1]["elements"][0]["text"]
        assert state.startswith("🙋 Waiting on <@UALICE> (started this close)")
        bot.answer_until(run.id, "Posting")
        bot.service.presenter.update_status(run.id)  # the debounced update, now
        state = bot.message(run.thread_ts or "")["blocks"][1]["elements"][0]["text"]
        # the posting approval waits on the approvers only: the starter may not approve
        assert state == "🙋 Waiting on <@UAPPROVER>, <@UAPPROVER2> — Posting"
    finally:
        bot.close()


def test_a_stream_answers_the_starter_in_their_own_team_not_the_apps(
    fake: FakeSlack, db_path: Path
) -> None:
    # chat.startStream's recipient_team_id is "the team the user receiving the streaming text
    # belongs to" (docs.slack.dev/reference/methods/chat.startStream): for a Slack Connect
    # guest (or a user of an org's other workspace) that is not the app's own team, which
    # auth.test gives. The team comes from the payload that started the close, kept on the run.
    from bot.sandbox.slack_api import Person
    from tests import slack_payloads as sp
    from tests.slack_harness import FORM

    fake.people["UGUEST"] = Person("UGUEST", "Gwen Guest", "Controller", team="T0GUEST")
    fake.channel("CFIN").members.add("UGUEST")
    bot = Harness(fake, db_path)
    try:
        body = sp.slash_command(
            "2026-10",
            user="UGUEST",
            channel="CFIN",
            response_url=fake.response_url(channel="CFIN", user="UGUEST"),
            team="T0GUEST",
        )
        assert bot.dispatch(body, FORM).status == 200
        bot.idle()
        (run,) = bot.store.runs.recent()
        (start,) = fake.to("chat.startStream")
        assert start["recipient_user_id"] == "UGUEST" and start["recipient_team_id"] == "T0GUEST"
        assert fake.messages[run.status_ts or ""].get("stream")  # streamed, not refused
        assert run.started_team == "T0GUEST"
    finally:
        bot.close()

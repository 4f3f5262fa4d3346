"""Slack's agent surfaces in the sandbox, in a real browser: the close's streamed plan and the
thread's status line, closebot's App Home (Home tab and the DM in its Messages tab), and table
blocks — drawn from what the bot really sent the fake Slack."""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient

from bot.close.steps import names as step_names
from bot.sandbox.run import Sandbox
from tests.sandbox_browser import ARTIFACTS, say, start_close


def shoot(page: Any, name: str, locator: Any = None) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    (locator or page).screenshot(path=str(ARTIFACTS / name))


def test_the_close_shows_as_a_streamed_plan_with_a_line_per_step(
    page: Any, sandbox: Sandbox
) -> None:
    from playwright.sync_api import expect

    pane = start_close(page)
    plan = pane.locator(".plan")
    expect(plan).to_have_count(1)
    tasks = plan.locator(".task")
    expect(tasks).to_have_count(len(step_names()))
    # the sample's first question is Intake's (an unknown property): that step waits on it
    expect(tasks.nth(0)).to_have_class("task task-in_progress")
    expect(tasks.nth(0)).to_contain_text("Intake")
    expect(tasks.nth(1)).to_have_class("task task-pending")
    expect(plan).to_contain_text("waiting on a decision")  # the step the form belongs to
    expect(plan.locator(".plan-title")).to_contain_text("October 2026")
    # the channel message shows the close's live state, with Stop
    root = page.locator("#messages .msg").filter(has=page.locator(".thread-link")).last
    expect(root).to_contain_text("Waiting on")
    expect(root.get_by_role("button", name="Stop")).to_be_visible()
    plan.scroll_into_view_if_needed()
    shoot(page, "sandbox-plan.png")
    shoot(page, "sandbox-plan-card.png", pane.locator(".msg").filter(has=page.locator(".plan")))
    # the plan as the bot streamed it: the page draws the fake's own record of it
    status_ts = sandbox.store.runs.recent()[0].status_ts
    with sandbox.fake.lock:
        stream = sandbox.fake.messages[status_ts or ""]["stream"]
    assert [t["title"] for t in stream["tasks"]] == list(step_names())
    # stopped before the wait (Slack would end it in five minutes), readable as it stands
    assert stream["state"] == "stopped"
    expect(pane.locator(".stream-stop")).to_have_count(0)  # nothing streams to stop


def test_the_threads_status_line_is_drawn_while_the_bot_works(page: Any, sandbox: Sandbox) -> None:
    from playwright.sync_api import expect

    start_close(page)
    run = sandbox.store.runs.recent()[0]
    bot = WebClient(token=sandbox.fake.token, base_url=sandbox.fake.api_url)
    bot.assistant_threads_setStatus(
        channel_id=run.channel or "",
        thread_ts=run.thread_ts or "",
        status="is working on the close…",
        loading_messages=["Reconciling 27 JIB lines…"],
    )
    line = page.locator("#thread-status")
    expect(line).to_be_visible()
    expect(line).to_contain_text("Reconciling 27 JIB lines…")
    shoot(page, "sandbox-status.png")
    bot.assistant_threads_setStatus(
        channel_id=run.channel or "", thread_ts=run.thread_ts or "", status=""
    )
    expect(line).to_be_hidden()


def test_app_home_shows_what_waits_on_the_viewer_and_the_dm_answers(
    page: Any, sandbox: Sandbox
) -> None:
    from playwright.sync_api import expect

    start_close(page)
    page.locator("#open-app").click()
    home = page.locator("#home")
    expect(home).to_be_visible()
    expect(home).to_contain_text("Waiting on you (1)")
    expect(home).to_contain_text("October 2026 — waiting on you")
    expect(home).to_contain_text("Closes by period")
    shoot(page, "sandbox-app-home.png")
    # its link opens the close's thread
    home.locator("a.permalink").first.click()
    expect(page.locator("#thread")).to_be_visible()
    expect(page.locator("#thread-messages .plan")).to_have_count(1)
    # the Messages tab is the DM with closebot
    page.locator("#open-app").click()
    page.locator("#tab-messages").click()
    say(page, "What's waiting on me?")
    expect(page.locator("#messages")).to_contain_text("Waiting on you (1)")
    shoot(page, "sandbox-dm.png")


def test_a_table_block_is_drawn_as_a_table(page: Any, sandbox: Sandbox) -> None:
    from playwright.sync_api import expect

    bot = WebClient(token=sandbox.fake.token, base_url=sandbox.fake.api_url)
    rows = [
        ["Account", "Name", "Debit", "Credit"],
        ["1390", "Paid under protest", "$1,200.00", ""],
        ["6210", "Lease Operating Expense", "", "$1,200.00"],
    ]
    bot.chat_postMessage(
        channel="CFINANCE",
        text="Entries by account",
        blocks=[
            {
                "type": "table",
                "rows": [[{"type": "raw_text", "text": c or " "} for c in r] for r in rows],
                "column_settings": [
                    None,
                    {"is_wrapped": True},
                    {"align": "right"},
                    {"align": "right"},
                ],
            }
        ],
    )
    table = page.locator("#messages table.bk-table")
    expect(table).to_have_count(1)
    expect(table.locator("th")).to_have_text(rows[0])
    expect(table.locator("tbody tr").nth(0).locator("td")).to_have_text(
        ["1390", "Paid under protest", "$1,200.00", " "]
    )
    expect(table.locator("tbody td.align-right").first).to_have_text("$1,200.00")
    shoot(page, "sandbox-table.png", table)


def test_a_stream_slack_ended_is_drawn_broken_and_slacks_stop_stops_the_close(
    page: Any, sandbox: Sandbox
) -> None:
    from playwright.sync_api import expect

    pane = start_close(page)
    run = sandbox.store.runs.recent()[0]
    fake = sandbox.fake
    bot = WebClient(token=fake.token, base_url=fake.api_url)

    def stream(title: str) -> str:
        """A plan streamed in the close's thread, as the close's is while it works."""
        return str(
            bot.chat_startStream(
                channel=run.channel or "",
                thread_ts=run.thread_ts or "",
                recipient_user_id=run.started_by,
                recipient_team_id="T0SANDBOX",
                task_display_mode="plan",
                chunks=[
                    {"type": "plan_update", "title": title},
                    {"type": "task_update", "id": "1", "title": "Intake", "status": "in_progress"},
                ],
            )["ts"]
        )

    stream("Ended by Slack")
    fake.advance(6 * 60)  # past Slack's five minutes: a broken placeholder until mended
    expect(pane.locator(".stream-expired")).to_contain_text("Something went wrong")
    stream("Still streaming")
    stop = pane.locator(".stream-stop")
    expect(stop).to_have_count(1)
    shoot(
        page,
        "sandbox-stream-stop.png",
        pane.locator(".msg").filter(has=page.locator(".stream-stop")),
    )
    stop.click()  # Slack's own Stop: the stream stops and the bot hears agent_session_stopped
    expect(pane.locator(".stream-note")).to_contain_text("Stopped by Alice Park")
    expect(stop).to_have_count(0)
    assert fake.wait_for(lambda: sandbox.store.runs.get(run.id).status == "cancelled", 30)
    root = page.locator("#messages .msg").filter(has=page.locator(".thread-link")).last
    expect(root).to_contain_text("Stopped by")

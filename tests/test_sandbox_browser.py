"""The sandbox in a real browser: a person runs a close by clicking, as in Slack.

Driven generically (each form gets its recommended option, or the first; a posting
approval gets "Approve"), so the close domain may ask more or fewer questions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from bot.close.ledger import Ledger
from bot.sandbox.run import APPROVER, APPROVERS, COLLEAGUE, STARTER, Sandbox
from tests.sandbox_browser import (
    ARTIFACTS,
    answer_button,
    answered,
    csv_links,
    expect_settled,
    fill_form,
    open_thread,
    pending_form,
    press_submit,
    say,
    start_close,
    submit_button,
    switch_to,
)

MAX_FORMS = 20


def _approves(label: str) -> bool:
    return bool(re.match(r"\s*Approve", label))


def test_a_whole_close_by_clicking(page: Any, sandbox: Sandbox) -> None:
    from playwright.sync_api import expect

    refused: list[tuple[str, dict[str, Any]]] = []
    sandbox.fake.on_refusal = lambda method, body: refused.append((method, body))
    pane = start_close(page)
    form = pending_form(pane)
    expect(form).to_contain_text("⭐ books")  # what the recommendation books, on the card
    expect(form.locator("label.choice", has_text="⭐").first).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "sandbox-page.png"))
    page.set_viewport_size({"width": 1440, "height": 2400})  # the whole form at once
    form.screenshot(path=str(ARTIFACTS / "sandbox-question-form.png"))
    page.set_viewport_size({"width": 1440, "height": 900})

    root = page.locator("#messages .msg").filter(has=page.locator(".thread-link")).last
    finished = root.get_by_text("Finished: every step ran")  # the channel message says so
    forms = 0
    approvers = list(APPROVERS)  # posting: not the starter; over the limit, a second one
    while not finished.count():
        expect(answer_button(pane).or_(finished).first).to_be_visible()
        if finished.count():
            break
        ts = pending_form(pane).get_attribute("data-ts")
        labels = answered(pane, ts).locator("label.choice, button").all_inner_texts()
        who = approvers.pop(0) if any(_approves(label) for label in labels) else STARTER
        switch_to(page, who.id)
        fill_form(answered(pane, ts))
        press_submit(page, answered(pane, ts))
        settled = answered(pane, ts)
        expect_settled(settled)
        expect(settled).to_contain_text(f"{who.name} chose")
        forms += 1
        assert forms < MAX_FORMS, "the close kept asking"

    assert forms >= 2, "a close asks at least a question and the posting approval"
    expect(csv_links(pane).filter(has_text="Decision log")).to_have_count(1)
    expect(csv_links(pane).filter(has_text="Journal entries")).not_to_have_count(0)
    expect(pane).to_contain_text("finished")
    expect_settled(pane)
    page.screenshot(path=str(ARTIFACTS / "sandbox-finished.png"))
    assert refused == [], "Slack would have refused some of the bot's calls"
    (run,) = sandbox.store.runs.recent()
    assert run.status == "done"
    batch = Ledger(sandbox.store).batches(run.id)[-1]
    assert batch["status"] == "posted" and batch["posted_by"] in {a.id for a in APPROVERS}
    href = csv_links(pane).filter(has_text="Decision log").get_attribute("href")
    download = page.request.get(href)
    header = download.text().splitlines()[0]
    assert download.ok and "," in header and "answer" in header


def test_a_colleague_is_refused_privately_and_an_approver_may_answer(page: Any) -> None:
    from playwright.sync_api import expect

    pane = start_close(page)
    form = pending_form(pane)
    ts = form.get_attribute("data-ts")

    switch_to(page, COLLEAGUE.id)
    fill_form(pending_form(pane))
    press_submit(page, pending_form(pane))
    refusal = pane.locator(".msg.ephemeral", has_text="can answer this")
    expect(refusal).to_contain_text(f"@{STARTER.name}")
    expect(refusal).to_contain_text("Only visible to you")
    expect(submit_button(answered(pane, ts))).to_be_visible()  # nothing changed

    switch_to(page, STARTER.id)
    expect(submit_button(answered(pane, ts))).to_be_visible()
    expect(pane.locator(".msg.ephemeral", has_text="can answer this")).to_have_count(0)

    switch_to(page, APPROVER.id)
    fill_form(pending_form(pane))
    press_submit(page, pending_form(pane))
    expect_settled(answered(pane, ts))
    expect(answered(pane, ts)).to_contain_text(f"{APPROVER.name} chose")


def test_a_reload_mid_run_shows_the_same_state(page: Any) -> None:
    from playwright.sync_api import expect

    pane = start_close(page)
    form = pending_form(pane)
    ts = form.get_attribute("data-ts")
    fill_form(form)
    # then change the last question's answer to its last option ("Other", which would ask for a
    # typed answer, aside: issue 30)
    choices = form.locator("label.choice").filter(has_not_text=re.compile(r"^Other \("))
    choices.last.click()
    picked = choices.last.locator(".choice-label").inner_text()
    page.mouse.move(0, 0)  # no hover times in what is compared
    before = pane.locator(".msg").all_inner_texts()

    page.reload()
    pane = page.locator("#thread-messages")
    expect(pane.locator(f'.msg[data-ts="{ts}"]')).to_be_visible()  # the thread is still open
    expect(pane.locator(".msg")).to_have_count(len(before))
    assert pane.locator(".msg").all_inner_texts() == before
    checked = answered(pane, ts).locator("label.choice", has=pane.page.locator("input:checked"))
    expect(checked.last.locator(".choice-label")).to_have_text(picked)  # unsent choices survive
    expect(checked).to_have_count(answered(pane, ts).locator("[role=radiogroup]").count())

    press_submit(page, answered(pane, ts))
    expect_settled(answered(pane, ts))
    label = re.sub(r"^\d+\. ", "", picked.replace("⭐", "").strip())  # '5. Hold …' → 'Hold …'
    expect(answered(pane, ts)).to_contain_text(label)


def test_the_composer_speaks_slack(page: Any) -> None:
    from playwright.sync_api import expect

    say(page, "/close someday")
    expect(page.locator("#messages .msg.ephemeral", has_text="Usage")).to_be_visible()
    say(page, "/deploy now")
    expect(page.locator("#messages .msg.ephemeral", has_text="not a valid command")).to_be_visible()
    say(page, "@closebot hello")
    reply = open_thread(page)
    expect(reply).to_contain_text("Usage")
    expect(page.locator("#messages .msg", has_text="hello").locator(".mention")).to_have_text(
        "@closebot"
    )
    page.locator("#channel-list li", has_text="general").click()
    expect(page.locator("#channel-name")).to_have_text("# general")
    expect(page.locator("#messages .msg")).to_have_count(0)


def test_a_confirm_dialog_stands_between_the_click_and_the_payload(
    page: Any, sandbox: Sandbox
) -> None:
    from playwright.sync_api import expect

    pane = start_close(page)
    form = pending_form(pane)
    ts = form.get_attribute("data-ts")
    sent = len(sandbox.fake.calls)
    form.get_by_role("button", name="Cancel", exact=True).click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Not now?")
    page.locator("#dialog-deny").click()  # "Keep answering": nothing is sent
    expect(dialog).to_be_hidden()
    expect(submit_button(answered(pane, ts))).to_be_visible()
    assert (run := sandbox.store.runs.recent()[0]) and sandbox.store.questions.pending(run.id)
    assert len(sandbox.fake.calls) == sent

    answered(pane, ts).get_by_role("button", name="Cancel", exact=True).click()
    page.locator("#dialog-confirm").click()
    expect(answered(pane, ts)).to_contain_text(f"Put off by {STARTER.name}")
    expect_settled(answered(pane, ts))


def test_every_kind_of_block_is_drawn(page: Any, sandbox: Sandbox) -> None:
    from playwright.sync_api import expect
    from slack_sdk import WebClient

    bot = WebClient(token=sandbox.fake.token, base_url=sandbox.fake.api_url)
    plain = {"type": "plain_text", "text": "Pick"}
    options = [
        {"text": {"type": "plain_text", "text": f"Option {i}"}, "value": str(i)} for i in (1, 2)
    ]
    posted = bot.chat_postMessage(
        channel="CFINANCE",
        text="every block",
        blocks=[
            {"type": "header", "text": {"type": "plain_text", "text": "October close :tada:"}},
            {
                "type": "section",
                "text": {
                    "type": "mrkdwn",
                    "text": "*Bold* _italic_ ~gone~ `code` <https://example.com|a link> <@UBEN>",
                },
                "fields": [
                    {"type": "mrkdwn", "text": "*Debits*\n$1,005,227.07"},
                    {"type": "mrkdwn", "text": "*Credits*\n$1,005,227.07"},
                ],
            },
            {"type": "divider"},
            {
                "type": "rich_text",
                "elements": [
                    {
                        "type": "rich_text_section",
                        "elements": [
                            {"type": "text", "text": "Open items", "style": {"bold": True}}
                        ],
                    },
                    {
                        "type": "rich_text_list",
                        "style": "bullet",
                        "elements": [
                            {
                                "type": "rich_text_section",
                                "elements": [{"type": "text", "text": "dispute $591.87"}],
                            },
                            {
                                "type": "rich_text_section",
                                "elements": [{"type": "user", "user_id": "UCARA"}],
                            },
                        ],
                    },
                ],
            },
            {
                "type": "input",
                "block_id": "sel",
                "label": plain,
                "element": {"type": "static_select", "action_id": "s", "options": options},
            },
            {
                "type": "input",
                "block_id": "chk",
                "label": plain,
                "hint": {"type": "plain_text", "text": "any"},
                "element": {"type": "checkboxes", "action_id": "c", "options": options},
            },
            {
                "type": "input",
                "block_id": "txt",
                "optional": True,
                "label": plain,
                "element": {"type": "plain_text_input", "action_id": "t"},
            },
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "Context line"}]},
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "action_id": "ok",
                        "text": {"type": "plain_text", "text": "Post"},
                        "style": "primary",
                    },
                    {
                        "type": "button",
                        "action_id": "no",
                        "text": {"type": "plain_text", "text": "Discard"},
                        "style": "danger",
                    },
                ],
            },
        ],
    )
    message = page.locator(f'#messages .msg[data-ts="{posted["ts"]}"]')
    expect(message.locator(".header-block")).to_have_text("October close 🎉")
    expect(message.locator(".section-main b").first).to_have_text("Bold")
    expect(message.locator(".section-main i")).to_have_text("italic")
    expect(message.locator(".section-main s")).to_have_text("gone")
    expect(message.locator(".section-main code")).to_have_text("code")
    expect(message.locator(".section-main a")).to_have_attribute("href", "https://example.com")
    expect(message.locator(".section-main .mention")).to_have_text("@Ben Ortiz")
    expect(message.locator(".fields > div")).to_have_count(2)
    expect(message.locator("hr.divider")).to_have_count(1)
    expect(message.locator(".rt li")).to_have_count(2)
    expect(message.locator(".rt li .mention")).to_have_text("@Cara Lee")
    expect(message.locator("select.select option")).to_have_count(3)  # the placeholder too
    expect(message.locator("input[type=checkbox]")).to_have_count(2)
    expect(message.locator(".hint")).to_have_text("any")
    expect(message.locator(".input-label .optional")).to_have_count(1)
    expect(message.locator(".context")).to_contain_text("Context line")
    expect(message.locator(".bk-btn.primary")).to_have_text("Post")
    expect(message.locator(".bk-btn.danger")).to_have_text("Discard")
    ARTIFACTS.mkdir(exist_ok=True)
    message.screenshot(path=str(ARTIFACTS / "sandbox-blocks.png"))

    bot.chat_update(
        channel="CFINANCE",
        ts=posted["ts"],
        text="replaced",
        blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": "Replaced in place"}}],
    )
    expect(message).to_contain_text("Replaced in place")
    expect(message.locator(".edited")).to_have_count(1)
    expect(page.locator("#messages .msg")).to_have_count(1)


def test_an_external_select_searches_the_bot_as_you_type(page: Any, sandbox: Sandbox) -> None:
    from playwright.sync_api import expect

    from bot.core.questions import parse_ask

    pane = start_close(page)
    (run,) = sandbox.store.runs.recent()
    options = [{"label": f"Well {i:03d} " + "x" * 60, "description": "d" * 150} for i in range(100)]
    huge = parse_ask(
        {
            "context": "Map the property",
            "questions": [{"question": "Which well?", "options": options, "recommended": 42}] * 5,
        }
    )
    record, _ = sandbox.store.questions.create(
        run.id, question_id="toolu_huge", context=huge.context, questions=huge.questions_json()
    )
    assert sandbox.service is not None
    sandbox.service.presenter.post_form(record)
    ts = sandbox.store.questions.get("toolu_huge").message_ts
    menu = pane.locator(f'.msg[data-ts="{ts}"] .typeahead input').first
    menu.fill("well 04")
    found = pane.locator(f'.msg[data-ts="{ts}"] .typeahead-list [role=option]')
    expect(found).to_have_count(10)  # the bot's options listener answered block_suggestion
    expect(found.nth(1)).to_contain_text("Well 041")  # option 42, the recommended one
    found.nth(1).click()
    expect(menu).to_have_value(re.compile(r"^(42\. )?Well 041 x+ ⭐$"))


def test_a_page_on_another_origin_cannot_drive_the_sandbox(
    open_page: Callable[[str], Any], sandbox: Sandbox, page: Any
) -> None:
    """A site the person happens to have open posts to the sandbox as a form or a script
    would (no preflight: text/plain that merely mentions application/json): refused."""
    from tests.loopback import QuietHandler, loopback

    class Elsewhere(QuietHandler):
        def do_GET(self) -> None:
            self.send(200, b"<html><body>another site</body></html>", {"content-type": "text/html"})

    say(page, "hello from the page")  # the sandbox's own page writes (with its token)
    page.locator("#messages .msg", has_text="hello from the page").wait_for()
    with loopback(Elsewhere) as other_url:
        other = open_page(other_url)
        target = sandbox.url.replace("127.0.0.1", "localhost")  # another name, same server
        for url in (sandbox.url, target):
            status = other.evaluate(
                """async (url) => {
                    const body = JSON.stringify({user: "UALICE", channel: "CFINANCE",
                                                 text: "/close 2026-10"});
                    const r = await fetch(url + "sandbox/say", {method: "POST", mode: "no-cors",
                        headers: {"Content-Type": "text/plain; x=application/json"}, body});
                    return r.type;
                }""",
                url,
            )
            assert status == "opaque"  # sent; the answer is not the other site's to read
    assert [m["text"] for m in sandbox.fake.messages.values()] == ["hello from the page"]
    assert sandbox.store.runs.recent() == []

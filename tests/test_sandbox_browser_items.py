"""Open items in a real browser: at sign-off a person picks an owner (users_select) and a due
date (datepicker) for an item, as in Slack; the owner finds the items in their DM."""

from __future__ import annotations

import re
from typing import Any

from bot.close.ledger import Ledger
from bot.sandbox.run import APPROVER, APPROVERS, STARTER, Sandbox
from tests.sandbox_browser import (
    ARTIFACTS,
    answer_button,
    answered,
    expect_settled,
    fill_form,
    pending_form,
    press_submit,
    start_close,
    switch_to,
)

MAX_FORMS = 20


def test_an_owner_and_a_due_date_are_picked_in_the_sign_off_form(
    page: Any, sandbox: Sandbox
) -> None:
    from playwright.sync_api import expect

    refused: list[tuple[str, dict[str, Any]]] = []
    sandbox.fake.on_refusal = lambda method, body: refused.append((method, body))
    pane = start_close(page)
    approvers = list(APPROVERS)
    for _ in range(MAX_FORMS):  # every form as recommended, up to the sign-off
        answer_button(pane).first.wait_for()
        ts = pending_form(pane).get_attribute("data-ts")
        form = answered(pane, ts)
        if form.get_by_role("button", name="Reassign").count():
            # the sign-off card lists owners and due dates; Reassign shows their pickers
            form.get_by_role("button", name="Reassign").click()
            pane.locator("select.users-select").first.wait_for()
            ts = pending_form(pane).get_attribute("data-ts")
            break
        labels = form.locator("label.choice, button").all_inner_texts()
        approve = any(re.match(r"\s*Approve", label) for label in labels)
        who = approvers.pop(0) if approve else STARTER
        switch_to(page, who.id)
        fill_form(form)
        press_submit(page, form)
        expect_settled(answered(pane, ts))
    else:
        raise AssertionError("no sign-off form with owners")

    switch_to(page, STARTER.id)
    form = answered(pane, ts)
    owners = form.locator("select.users-select")
    dates = form.locator("input[type=date]")
    assert owners.count() == dates.count() > 1
    # the recommended owner and due date are preselected: the starter, the 15th of next month
    expect(owners.first).to_have_value(STARTER.id)
    expect(dates.first).to_have_value("2026-11-15")
    first_item = (
        form.locator(".input-block")
        .filter(has=page.locator("select.users-select"))
        .first.locator(".input-label")
    )
    item_text = first_item.inner_text().split(" · owner")[0].split(". ", 1)[1]
    owners.first.select_option(label=APPROVER.name)
    dates.first.fill("2026-11-30")
    expect(owners.first).to_have_value(APPROVER.id)
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1440, "height": 2400})
    form.screenshot(path=str(ARTIFACTS / "sandbox-sign-off-owners.png"))
    page.set_viewport_size({"width": 1440, "height": 900})
    press_submit(page, form)
    expect_settled(answered(pane, ts))
    expect(answered(pane, ts)).to_contain_text(APPROVER.name)  # the owner by name, not id

    root = page.locator("#messages .msg").filter(has=page.locator(".thread-link")).last
    expect(root.get_by_text("Finished: every step ran")).to_be_visible()
    (run,) = sandbox.store.runs.recent()
    items = Ledger(sandbox.store).open_items(run.id)
    mine = [i for i in items if i["owner"] == APPROVER.id]
    assert [(i["due"], item_text[:40] in i["text"]) for i in mine] == [("2026-11-30", True)]
    assert all(i["owner"] == STARTER.id for i in items if i not in mine)

    # Ben's DM with closebot (the App Home's Messages tab) holds the item, its due date, a link
    switch_to(page, APPROVER.id)
    page.locator("#open-app").click()
    page.locator("#tab-messages").click()
    dm = page.locator("#messages .msg", has_text="open item")
    expect(dm).to_contain_text("due 2026-11-30")
    expect(dm.get_by_role("link", name="Open the close's thread")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "sandbox-owner-dm.png"))
    assert refused == [], "Slack would have refused some of the bot's calls"

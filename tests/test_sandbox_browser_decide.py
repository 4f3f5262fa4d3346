"""Nothing dead-ends, in a real browser (issue 17.2): a form put off with Cancel comes back
with Decide and the close finishes; a decision changed from the channel message's menu is asked
again, the batch redrafted and approved anew. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re
from typing import Any

from bot.close.ledger import Ledger
from bot.sandbox.run import APPROVERS, STARTER, Sandbox
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

MAX_FORMS = 25


def _root(page: Any) -> Any:
    """The close's message in the channel."""
    return page.locator("#messages .msg").filter(has=page.locator(".thread-link")).last


def _is_approval(labels: list[str]) -> bool:
    return any(re.match(r"\s*Approve", label) for label in labels)


def _answer_until(page: Any, pane: Any, done: Any, *, stop_at_approval: bool = False) -> int:
    """Answer forms as a person would (recommended, approvals by an approver) until `done`
    shows (or, with `stop_at_approval`, until the posting form is the one waiting)."""
    from playwright.sync_api import expect

    approvers = list(APPROVERS)
    forms = 0
    while True:
        expect(answer_button(pane).or_(done).first).to_be_visible()
        if done.count():
            return forms
        ts = pending_form(pane).get_attribute("data-ts")
        labels = answered(pane, ts).locator("label.choice, button").all_inner_texts()
        if _is_approval(labels) and stop_at_approval:
            return forms
        who = approvers.pop(0) if _is_approval(labels) else STARTER
        switch_to(page, who.id)
        fill_form(answered(pane, ts))
        press_submit(page, answered(pane, ts))
        expect_settled(answered(pane, ts))
        forms += 1
        assert forms < MAX_FORMS, "the close kept asking"


def test_cancel_then_decide_brings_the_form_back_and_the_close_finishes(
    page: Any, sandbox: Sandbox
) -> None:
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    pane = start_close(page)
    ts = pending_form(pane).get_attribute("data-ts")
    form = answered(pane, ts)
    form.get_by_role("button", name="Cancel", exact=True).click()
    dialog = page.locator("#dialog-backdrop")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("goes on without these answers")
    page.locator("#dialog-confirm").click()
    expect(form).to_contain_text("Put off by")
    expect_settled(form)

    root = _root(page)
    decide = root.get_by_role("button", name=re.compile(r"^Decide"))
    _answer_until(page, pane, decide)  # the close goes on without it, then waits
    expect(root).to_contain_text("Waiting on")
    expect(root).to_contain_text("press Decide")
    expect(root).not_to_contain_text("Finished")
    expect(root.get_by_role("button", name="Stop", exact=True)).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "decide-waiting.png"))
    (run,) = sandbox.store.runs.recent()
    assert run.status == "waiting" and Ledger(sandbox.store).current_batch(run.id) is None

    switch_to(page, STARTER.id)
    decide.first.click()
    back = pending_form(pane)
    expect(back).to_be_visible()
    expect(back.locator("label.choice", has_text="⭐").first).to_be_visible()
    back.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "decide-form-back.png"))
    expect(root.get_by_role("button", name=re.compile(r"^Decide"))).to_have_count(0)

    finished = root.get_by_text("Finished: every step ran")
    _answer_until(page, pane, finished)
    page.screenshot(path=str(ARTIFACTS / "decide-finished.png"))
    run = sandbox.store.runs.get(run.id)
    assert run.status == "done"
    batch = Ledger(sandbox.store).current_batch(run.id)
    assert batch is not None and batch["status"] == "posted"


def test_change_a_decision_from_the_channel_redrafts_and_needs_a_new_approval(
    page: Any, sandbox: Sandbox
) -> None:
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    pane = start_close(page)
    root = _root(page)
    _answer_until(page, pane, root.get_by_text("Finished: every step ran"), stop_at_approval=True)
    (run,) = sandbox.store.runs.recent()
    ledger = Ledger(sandbox.store)
    first_batch = ledger.current_batch(run.id)
    assert first_batch is not None
    approval_ts = pending_form(pane).get_attribute("data-ts")

    switch_to(page, STARTER.id)
    menu = root.locator("select")
    expect(menu).to_be_visible()
    labels = menu.locator("option:not([disabled])").all_inner_texts()
    baker = next(label for label in labels if label.startswith("Baker 3-1H"))
    menu.select_option(label=baker)
    dialog = page.locator("#dialog-backdrop")
    expect(dialog).to_contain_text("needs a new approval")
    page.screenshot(path=str(ARTIFACTS / "change-confirm.png"))
    page.locator("#dialog-confirm").click()

    # the approval form is withdrawn; the decision is asked again on its own
    expect_settled(answered(pane, approval_ts))
    change = pending_form(pane)
    expect(change).to_contain_text("Changing a decision")
    change_ts = change.get_attribute("data-ts")
    form = answered(pane, change_ts)
    form.locator("label.choice", has_text="Book billed, difference in suspense").click()
    form.locator(".input-block", has_text="Why").locator("textarea, input[type=text]").first.fill(
        "The operator confirmed the interest."
    )
    form.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "change-form.png"))
    press_submit(page, form)
    expect_settled(form)
    expect(form).to_contain_text("Book billed, difference in suspense")

    finished = root.get_by_text("Finished: every step ran")
    _answer_until(page, pane, finished)
    page.screenshot(path=str(ARTIFACTS / "change-finished.png"))
    posted = ledger.current_batch(run.id)
    assert posted is not None and posted["status"] == "posted"
    assert posted["id"] != first_batch["id"]
    assert ledger.batch(first_batch["id"])["status"] == "superseded"
    (changed,) = sandbox.store.audit.events(run.id, kind="decision_changed")
    assert (changed.detail["was"]["option"], changed.detail["option"]) == ("short_pay", "suspense")

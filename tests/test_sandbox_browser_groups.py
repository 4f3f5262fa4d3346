"""The sandbox in a real browser (17.1, 17.8): many alike lines of one operator are one form
with their detail CSV in the thread, and a typed effective date is shown before it books."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.genmonth import generate
from bot.close.ledger import Ledger
from bot.sandbox.run import Sandbox
from tests.sandbox_browser import (
    ARTIFACTS,
    csv_links,
    fill_form,
    pending_form,
    press_submit,
    start_close,
    submit_button,
)

MAX_FORMS = 8


@pytest.fixture
def alike_sandbox(start_sandbox: Callable[..., Sandbox], tmp_path: Path) -> Sandbox:
    generate(tmp_path / "month", 1200, seed=5, alike=5)
    return start_sandbox(env={**os.environ, "CLOSEBOT_DATA": str(tmp_path / "month")})


def answer_until(page: Any, pane: Any, text: str) -> Any:
    """Answer each form with its recommendation until the pending one contains `text`."""
    for _ in range(MAX_FORMS):
        form = pending_form(pane)
        form.wait_for()
        if text in form.inner_text():
            return form
        ts = form.get_attribute("data-ts")
        fill_form(form)
        press_submit(page, form)
        pane.locator(f'.msg[data-ts="{ts}"]').filter(has=submit_button(page)).wait_for(
            state="detached"
        )
    raise AssertionError(f"no form with {text!r}")


def test_many_alike_lines_are_one_form_with_their_detail(
    open_page: Callable[[str], Any], alike_sandbox: Sandbox
) -> None:
    from playwright.sync_api import expect

    page = open_page(alike_sandbox.url)
    pane = start_close(page)
    form = answer_until(page, pane, "alike duplicate exceptions")
    expect(form).to_contain_text("5 alike duplicate exceptions")  # the card: the group, its total
    form.get_by_role("button", name="Details").click()  # the whole question, in a modal
    expect(page.locator("#modal-backdrop")).to_contain_text(
        "The same check found 5 alike duplicate exceptions"
    )
    page.locator("#modal-close").click()
    # the group is a row of its card (a menu), or the card's one question (radio buttons)
    choices = form.locator("label.choice, select option")
    expect(choices.filter(has_text="Decide line by line")).not_to_have_count(0)
    expect(
        choices.filter(has_text="⭐").filter(has_text="Short-pay and dispute")
    ).not_to_have_count(0)
    expect(csv_links(pane).filter(has_text=re.compile("Detail"))).to_have_count(1)
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1440, "height": 2400})
    form.screenshot(path=str(ARTIFACTS / "sandbox-group-form.png"))
    page.screenshot(path=str(ARTIFACTS / "sandbox-group-thread.png"))
    csv_links(pane).last.scroll_into_view_if_needed()
    pane.evaluate("pane => { pane.scrollTop = pane.scrollTop + 0; }")
    page.screenshot(path=str(ARTIFACTS / "sandbox-group-detail.png"))
    store = alike_sandbox.store
    run_id = store.runs.recent(limit=1)[0].id
    record = store.questions.pending(run_id)
    assert record is not None
    ts = form.get_attribute("data-ts")
    fill_form(form)
    press_submit(page, form)
    # the decisions are recorded before the next form is asked
    pending_form(pane).and_(page.locator(f'.msg:not([data-ts="{ts}"])')).wait_for()
    members = [
        e
        for e in Ledger(store).exceptions(run_id)
        if str(e["details"].get("group", "")).startswith("alike:duplicate:")
    ]
    assert len(members) == 5
    assert {(e["status"], e["resolution"], e["question_id"]) for e in members} == {
        ("resolved", "short_pay", record.id)
    }


def test_a_typed_effective_date_is_shown_before_it_books(page: Any, sandbox: Sandbox) -> None:
    from playwright.sync_api import expect

    pane = start_close(page)
    form = answer_until(
        page, pane, "DOI effective date"
    )  # Smith's decimal accepted, as recommended
    # "Other" is a choice: picking it adds the card's box for the typed answer (issue 30);
    # a typed answer explains itself, so no Why box comes with it
    form.get_by_role("radio", name=re.compile("^Other")).check()
    form.get_by_role("group", name=re.compile("own answer")).locator("textarea, input").fill(
        "2026-06-01"
    )
    expect(form.get_by_role("group", name=re.compile("^Why"))).to_have_count(0)
    press_submit(page, form)
    notice = pane.locator(".msg.ephemeral", has_text="Not booked yet")
    expect(notice).to_contain_text("Effective 2026-06-01")
    expect(notice).to_contain_text("Dr 6210 Lease Operating Expense")
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1440, "height": 2400})
    pane.screenshot(path=str(ARTIFACTS / "sandbox-typed-date-preview.png"))
    expect(submit_button(form)).to_be_visible()  # the form still waits, with what was typed
    ts = form.get_attribute("data-ts")
    press_submit(page, form)
    settled = pane.locator(f'.msg[data-ts="{ts}"]')  # this form, not the next one asked
    expect(settled.get_by_role("button", name="Submit", exact=True)).to_have_count(0)
    expect(settled).to_contain_text("2026-06-01")

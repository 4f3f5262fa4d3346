"""Issue 30's targets, measured in Chromium at 1600×1000 on a full sample close driven in the
sandbox, taking the ⭐ on every decision: the median decision card ≤ 80 words before its
detail, every card ≤ one screen of the thread pane, the whole thread ≤ 4 screens, ≤ 12 clicks
for the close. Each card is saved as card-*.png, and the finished thread a screen at a time as
thread-*.png, to be looked at: in test-artifacts/screenshots/,
or in docs/screenshots/ to refresh the ones the docs show (`SCREENSHOTS_DIR=docs/screenshots`);
a test run never rewrites the tracked files unasked."""

from __future__ import annotations

import math
import os
import re
import statistics
from functools import partial
from pathlib import Path
from typing import Any

from bot.sandbox.run import APPROVERS, STARTER, Sandbox
from tests.sandbox_browser import answer_button, pending_form, say, submit_button, switch_to

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / os.environ.get("SCREENSHOTS_DIR", "test-artifacts/screenshots")
MAX_FORMS = 20
WIDTH, HEIGHT = 1600, 1000


def _words(text: str) -> int:
    return len(re.findall(r"\S+", text))


class Clicks:
    """Every click the reader makes, counted: the measure of 'one click to take the ⭐'."""

    def __init__(self) -> None:
        self.count = 0

    def click(self, locator: Any) -> None:
        locator.click()
        self.count += 1


def _measure(pane: Any, card: Any) -> dict[str, Any]:
    """A card as the reader meets it: its words before any detail is opened, its height
    against the thread pane's."""
    body = card.locator(".msg-body")
    text = body.evaluate(
        # what the reader sees: a closed menu shows its chosen option, not all of them
        "b => { const c = b.cloneNode(true); c.querySelectorAll('.meta').forEach(m => m.remove());"
        " const live = [...b.querySelectorAll('select')];"
        " c.querySelectorAll('select').forEach((s, i) => { const o = live[i].selectedOptions[0];"
        " s.replaceWith(document.createTextNode(' ' + (o ? o.text : '') + ' ')); });"
        # (its radios taken out first: a copy of a checked radio would uncheck the card's)
        " c.querySelectorAll('input').forEach(i => i.remove());"
        " document.body.append(c); const t = c.innerText; c.remove(); return t; }"
    )
    return {
        "words": _words(text),
        "height": card.bounding_box()["height"],
        "pane": pane.evaluate("p => p.clientHeight"),
        "text": text,
    }


def _shown(pane: Any, card: Any, number: int) -> dict[str, Any]:
    card.scroll_into_view_if_needed()
    measured = _measure(pane, card)
    card.screenshot(path=str(SCREENSHOTS / f"card-{number:02d}.png"))
    return measured


def _thread_screens(pane: Any) -> None:
    """The finished thread as its reader scrolls it: one thread-N.png a screen of the pane."""
    for shot in SCREENSHOTS.glob("thread-*.png"):
        shot.unlink()
    count = math.ceil(pane.evaluate("p => p.scrollHeight / p.clientHeight") - 0.01)
    for n in range(count):
        pane.evaluate(f"p => {{ p.scrollTop = {n} * p.clientHeight; }}")
        pane.screenshot(path=str(SCREENSHOTS / f"thread-{n + 1}.png"))


def _unfolded(pane: Any) -> tuple[str, str]:
    """The close's full summary and the first answered card's question, each opened with one
    click on its fold (a collapsed container), saved as summary-full.png and card-asked.png."""
    from playwright.sync_api import expect

    folds = pane.locator("details.bk-container")
    shown = []
    for fold, name in ((folds.last, "summary-full.png"), (folds.first, "card-asked.png")):
        fold.locator("summary").click()
        expect(fold).to_have_attribute("open", "")
        card = fold.locator("xpath=ancestor::div[contains(concat(' ', @class, ' '), ' msg ')][1]")
        card.scroll_into_view_if_needed()
        card.screenshot(path=str(SCREENSHOTS / name))
        shown.append(fold.inner_text())
    return shown[0], shown[1]


def _again(measure: Any) -> Any:
    """A card redrawn while it is measured (the thread updates under it) is measured again."""
    from playwright.sync_api import Error

    for _ in range(20):
        try:
            return measure()
        except Error:
            continue
    return measure()


def test_a_full_close_taking_every_star_meets_the_targets(browser: Any, sandbox: Sandbox) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(sandbox.url)
    clicks = Clicks()
    switch_to(page, STARTER.id)
    say(page, "/close 2026-10")
    pane = page.locator("#thread-messages")
    page.locator("#messages .msg.ephemeral", has_text="Starting the").wait_for()
    try:  # the thread opens by itself (issue 30); one that does not costs a click
        pane.locator(".msg").first.wait_for(timeout=10_000)
    except PlaywrightTimeout:
        link = page.locator("#messages .thread-link").last
        link.wait_for()
        clicks.click(link)
    root = page.locator("#messages .msg").filter(has=page.locator(".thread-link")).last
    finished = root.get_by_text("Finished: every step ran")
    cards: list[dict[str, Any]] = []
    approvers = list(APPROVERS)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for shot in SCREENSHOTS.glob("card-*.png"):
        shot.unlink()
    while True:
        expect(answer_button(pane).or_(finished).first).to_be_visible()
        if finished.count():
            break
        card = pending_form(pane)
        ts = card.get_attribute("data-ts")
        card = pane.locator(f'.msg[data-ts="{ts}"]')
        approving = card.get_by_role("button", name=re.compile(r"^Approve")).count() > 0
        who = approvers.pop(0) if approving else STARTER
        switch_to(page, who.id)
        card = pane.locator(f'.msg[data-ts="{ts}"]')
        measured = _again(partial(_shown, pane, card, len(cards) + 1))
        cards.append(measured)
        # take the ⭐: it is preselected, so the reader only answers (and confirms a posting)
        button = card.get_by_role("button", name=re.compile(r"^Approve")).or_(submit_button(card))
        clicks.click(button.first)
        dialog = page.locator("#dialog-backdrop")
        if dialog.is_visible():
            clicks.click(page.locator("#dialog-confirm"))
        expect(pane.locator(f'.msg[data-ts="{ts}"] .input-block')).to_have_count(0)
        expect(pane.locator(f'.msg[data-ts="{ts}"]').get_by_role("button")).to_have_count(0)
        assert len(cards) < MAX_FORMS, "the close kept asking"
    # the whole thread as it ends: the summary and the files the close attaches after it
    expect(pane.locator(".msg", has_text="Full summary")).to_have_count(1)
    expect(pane.locator(".msg", has_text="Decision log")).to_have_count(1)
    screens = pane.evaluate("p => p.scrollHeight / p.clientHeight")
    heights = pane.evaluate(
        "p => [...p.querySelectorAll(':scope > .msg')].map(m => Math.round(m.offsetHeight) + ' '"
        " + (m.innerText.replace(/\\s+/g, ' ').slice(0, 70)))"
    )
    _thread_screens(pane)
    unfolded = _unfolded(pane)
    words = [c["words"] for c in cards]
    tall = [c["height"] / c["pane"] for c in cards]
    report = (
        f"{len(cards)} cards; words median {statistics.median(words)} max {max(words)}; "
        f"px {[round(c['height']) for c in cards]} in a {cards[0]['pane']} px pane "
        f"(max {max(tall):.2f} screens); thread {screens:.2f} screens; {clicks.count} clicks"
    )
    print(report)
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    (ROOT / "test-artifacts" / "cards-measured.txt").write_text(
        report + "\n\n" + "\n".join(heights) + "\n\n" + "\n\n---\n".join(c["text"] for c in cards)
    )
    context.close()
    assert not errors, errors
    # nothing folded is lost: the summary's rest and each card's question, one click away
    summary, asked = unfolded
    assert "Journal batch" in summary and "Open items" in summary and "Steps" in summary
    assert "Decision" in asked and "→" in asked
    assert statistics.median(words) <= 80, report
    assert max(tall) <= 1.0, report
    assert clicks.count <= len(cards) + 2, report  # one click a decision, and each Post confirmed
    # ≤ 12 clicks: only an Approve that posts asks "Post to the ledger?" — the first of two
    # approvals (an entry over the approval limit) posts nothing and is taken at once
    assert clicks.count <= 12, report
    # the whole thread ≤ 4 screens: each answered card folded to who chose what and what it
    # books, one plan a thread, the summary's point with the rest folded (issue 30)
    assert screens <= 4, report


def test_the_thread_opens_by_itself_details_open_in_a_modal_and_typing_survives_updates(
    page: Any, sandbox: Sandbox
) -> None:
    from playwright.sync_api import expect

    switch_to(page, STARTER.id)
    say(page, "/close 2026-10")
    pane = page.locator("#thread-messages")
    # no click on "N replies": the close's thread opens by itself (issue 30)
    expect(pane.locator(".msg").first).to_be_visible()
    card = pending_form(pane)
    card.wait_for()
    ts = card.get_attribute("data-ts")
    card = pane.locator(f'.msg[data-ts="{ts}"]')
    # Details: the whole decision in a modal (views.open), closed again
    card.get_by_role("button", name="Details").click()
    modal = page.locator("#modal-backdrop")
    expect(modal).to_be_visible()
    expect(modal).to_contain_text("Decision details")
    expect(modal).to_contain_text("Recommended, preselected")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "card-details-modal.png"))
    page.locator("#modal-close").click()
    expect(modal).to_be_hidden()
    assert sandbox.fake.wait_for(lambda: STARTER.id not in sandbox.fake.modals, timeout=15)
    # the card opens with no Why box: choosing against the ⭐ adds it (a block_actions from
    # the dispatching choice; the card redrawn: issue 30)
    why = card.locator("[data-block-id^='closebot:w:0:']")
    expect(why).to_have_count(0)
    card.get_by_role("radio").first.check()
    expect(why).to_have_count(1)
    # a reason typed while the thread updates under it: focus and every keystroke kept
    box = card.locator("[data-block-id^='closebot:w:0:'] input").first
    box.click()
    words = ["October", "had", "one", "more", "well", "on", "the", "JIB"]
    for n, word in enumerate(words):
        page.keyboard.type(word + " ")
        sandbox.client.say(
            user=APPROVERS[0].id, channel="CFINANCE", text=f"note {n}", thread_ts=_root(sandbox)
        )
        expect(pane.locator(".msg", has_text=f"note {n}")).to_have_count(1)
    typed = " ".join(words) + " "
    expect(
        pane.locator(f'.msg[data-ts="{ts}"] [data-block-id^="closebot:w:0:"] input')
    ).to_have_value(typed)
    assert page.evaluate("() => document.activeElement && document.activeElement.value") == typed


def _root(sandbox: Sandbox) -> str:
    (run,) = sandbox.store.runs.recent()
    return str(sandbox.store.runs.get(run.id).thread_ts)

"""Playwright driving Debian's Chromium against a running sandbox: fixtures and page helpers."""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.close.playbook import PlaybookModel
from bot.sandbox.run import Sandbox
from bot.store import Store

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
WAIT_MS = 30_000  # a bound on every wait; the shared CI machine has two cores


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require_chromium() -> str:
    """Debian's Chromium; in CI its absence fails the run, elsewhere it skips these tests."""
    path = chromium_path()
    if path:
        return path
    message = "Chromium is not installed (apt-get install chromium; .ci/run does it)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module (Debian's; Playwright's download cannot work here)."""
    executable = require_chromium()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def start_sandbox(db_path: Path) -> Iterator[Callable[..., Sandbox]]:
    """Starts the sandbox on the test's database with the playbook model, on a free port:
    `start_sandbox()`, or `start_sandbox(env={...})` for another month's files. Whatever it
    started is stopped, and its store closed, after the test."""
    started: list[tuple[Sandbox, Store]] = []

    def start(env: dict[str, str] | None = None) -> Sandbox:
        store = Store(db_path)
        running = Sandbox(store=store, model=PlaybookModel(), env=env, port=0)
        started.append((running, store))
        running.start()
        return running

    yield start
    for running, store in reversed(started):
        running.stop()
        store.close()


@pytest.fixture
def sandbox(start_sandbox: Callable[..., Sandbox]) -> Sandbox:
    """The sandbox on the sample months, as `make sandbox` runs it."""
    return start_sandbox()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[[str], Any]]:
    """Opens `url` in a fresh browser context (1440×900, every wait bounded by WAIT_MS);
    an error thrown by any page it opened fails the test."""
    contexts: list[Any] = []
    errors: list[str] = []

    def open_(url: str) -> Any:
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        contexts.append(context)
        opened = context.new_page()
        opened.on("pageerror", lambda e: errors.append(str(e)))
        opened.set_default_timeout(WAIT_MS)
        opened.goto(url)
        return opened

    yield open_
    for context in contexts:
        context.close()
    assert not errors, f"the page threw: {errors}"


@pytest.fixture
def page(open_page: Callable[[str], Any], sandbox: Sandbox) -> Any:
    """The sandbox's page in Chromium: the set-up every browser test starts from."""
    return open_page(sandbox.url)


# -- helpers -----------------------------------------------------------------


def say(page: Any, text: str, *, in_thread: bool = False) -> None:
    box = page.locator("#thread-input" if in_thread else "#composer-input")
    box.fill(text)
    box.press("Enter")


def start_close(page: Any, period: str = "2026-10") -> Any:
    """`/close <period>` in the channel, as the person would type it; the close's thread pane,
    once its first form has arrived."""
    say(page, f"/close {period}")
    page.locator("#messages .msg.ephemeral", has_text="Starting the").wait_for()
    pane = open_thread(page)
    submit_button(pane).first.wait_for()
    return pane


def switch_to(page: Any, user: str) -> None:
    page.locator("#user-switcher").select_option(user)
    page.wait_for_function(
        "u => document.querySelector('#user-switcher').value === u && "
        "document.querySelector('#me-avatar') !== null",
        arg=user,
    )


def open_thread(page: Any) -> Any:
    """Open the latest thread in the channel; the thread pane's message list.

    A message arriving above the link can move it between Playwright finding it and
    clicking it (as in Slack), so the click is tried again until the pane opens, within
    WAIT_MS.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    pane = page.locator("#thread-messages")
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        page.locator("#messages .thread-link").last.click()
        try:
            pane.locator(".msg").first.wait_for(timeout=3000)
            return pane
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise


def submit_button(pane: Any) -> Any:
    return pane.get_by_role("button", name="Submit", exact=True)


def approve_button(pane: Any) -> Any:
    """The posting approval's Approve button (its choices are buttons, not a Submit)."""
    return pane.get_by_role("button", name=re.compile(r"^Approve"))


def answer_button(pane: Any) -> Any:
    """What answers a form: its Submit, or the approval's Approve."""
    return submit_button(pane).or_(approve_button(pane))


def expect_settled(form: Any) -> None:
    """A form answered: no input left, nor anything that answers it (an approval card has no
    input at all until a Why is asked for: issue 30)."""
    from playwright.sync_api import expect

    expect(form.locator(".input-block")).to_have_count(0)
    expect(answer_button(form)).to_have_count(0)


def pending_form(pane: Any) -> Any:
    """The thread's form that can still be answered (a Submit, or an approval's buttons)."""
    return pane.locator(".msg").filter(has=answer_button(pane.page)).last


def csv_links(pane: Any) -> Any:
    return pane.locator("a.file-title[href$='.csv']")


def _preferred(labels: list[str]) -> int:
    """Approve a posting, else the recommended option (⭐), else the first."""
    for test in (lambda t: bool(re.match(r"\s*Approve", t)), lambda t: "⭐" in t):
        for i, label in enumerate(labels):
            if test(label):
                return i
    return 0


def fill_form(form: Any) -> None:
    """Answer every input of a form: choices as _preferred says, text where it is required."""
    for group in form.locator(".input-block").all():
        choices = group.locator("label.choice")
        selects = group.locator("select")
        typeahead = group.locator(".typeahead input")
        text = group.locator("textarea, input[type=text]")
        optional = group.locator(".optional").count() > 0
        if choices.count():
            choices.nth(_preferred(choices.all_inner_texts())).click()
        elif selects.count():
            labels = selects.first.locator("option:not([disabled])").all_inner_texts()
            selects.first.select_option(label=labels[_preferred(labels)])
        elif typeahead.count():
            typeahead.first.click()
            options = group.locator(".typeahead-list [role=option]")
            options.first.wait_for()
            options.nth(_preferred(options.all_inner_texts())).click()
        elif text.count() and not optional:
            text.first.fill("Reviewed in the sandbox; go ahead.")


def press_submit(page: Any, form: Any) -> None:
    """Click Submit (or, on a posting approval, Approve); confirm the dialog if the button
    carries a Block Kit `confirm`."""
    answer_button(form).first.click()
    dialog = page.locator("#dialog-backdrop")
    if dialog.is_visible():
        page.locator("#dialog-confirm").click()


def answered(pane: Any, ts: str) -> Any:
    return pane.locator(f'.msg[data-ts="{ts}"]')

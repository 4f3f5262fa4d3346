"""A person drops files into a close's thread in the sandbox page (headless Chromium): one
with the + button, one dragged onto the thread; the bot reads them through the fake Web API
(files.info, the download with its token) and answers in the thread."""

from __future__ import annotations

from typing import Any

from bot.close.data import SAMPLE_DIR
from bot.close.imports.intake import Imports
from bot.sandbox.run import Sandbox
from tests.import_files import jib_xlsx
from tests.sandbox_browser import ARTIFACTS, open_thread, press_submit, say


def _drop(page: Any, selector: str, name: str, data: bytes, mime: str) -> None:
    """A file dragged from the desktop and dropped on `selector`, as the browser delivers it."""
    transfer = page.evaluate_handle(
        """([name, bytes, mime]) => {
            const dt = new DataTransfer();
            dt.items.add(new File([new Uint8Array(bytes)], name, { type: mime }));
            return dt;
        }""",
        [name, list(data), mime],
    )
    page.dispatch_event(selector, "dragenter", {"dataTransfer": transfer})
    page.dispatch_event(selector, "drop", {"dataTransfer": transfer})


def test_files_dropped_in_the_sandbox_thread_are_read_and_a_mapping_is_confirmed(
    page: Any, sandbox: Sandbox
) -> None:
    from playwright.sync_api import expect

    say(page, "/close 2026-12")  # a month with no data: the close waits for its files
    pane = open_thread(page)
    expect(pane).to_contain_text("Drop the period's files into this thread")

    # the + button: a CSV chosen from disk
    page.set_input_files(
        "#thread-file",
        files=[
            {
                "name": "revenue.csv",
                "mimeType": "text/csv",
                "buffer": (SAMPLE_DIR / "2026-10" / "revenue.csv").read_bytes(),
            }
        ],
    )
    expect(pane).to_contain_text("Revenue check stubs (revenue.csv) for December 2026")
    expect(pane).to_contain_text("your net value by payor")

    # dragged onto the thread: the operator's workbook, in its own column names
    _drop(
        page,
        "#thread",
        "Permian JIB Dec.xlsx",
        jib_xlsx(),
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
    form = pane.locator(".msg").filter(has_text="its columns are not named as closebot names them")
    expect(form).to_have_count(1)
    expect(form.locator(".typeahead input").first).to_have_value("Operator Name")
    expect(form).to_contain_text("Preview")
    # the fake served files.info and the downloads, each with the bot's token
    assert len(sandbox.fake.to("files.info")) >= 2
    tokens = {c["token"] for c in sandbox.fake.to("url_private_download")}
    assert tokens and None not in tokens
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1440, "height": 2300})  # the whole thread in the picture
    pane.locator(".msg").last.scroll_into_view_if_needed()
    page.locator("#thread").screenshot(path=str(ARTIFACTS / "sandbox-file-dropped.png"))

    press_submit(page, form)
    expect(pane).to_contain_text("JIB (joint interest billing) (jib.csv) for December 2026")
    expect(pane).to_contain_text("Still needed for December 2026")
    page.locator("#thread").screenshot(path=str(ARTIFACTS / "sandbox-file-mapped.png"))
    active = {f["kind"]: f["filename"] for f in Imports(sandbox.store).active("2026-12")}
    assert active == {"revenue.csv": "revenue.csv", "jib.csv": "Permian JIB Dec.xlsx"}

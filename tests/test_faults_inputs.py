"""Inputs bounded by what they expand to (issue 31): an XLSX is capped on rows, cells, shared
strings and uncompressed bytes before it is parsed, and every problem reading a dropped file —
a decompression bomb, an XML error inside the workbook — is told to the dropper with the
file's name."""

from __future__ import annotations

import io
import tracemalloc
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from openpyxl import Workbook

from bot.close.data import SAMPLE_DIR
from bot.close.imports.intake import Imports
from bot.close.imports.sheet import read_sheets
from bot.core.errors import DataError
from bot.sandbox.slack_api import FakeSlack
from tests import slack_payloads as sp
from tests.import_files import jib_xlsx, sample_rows
from tests.slack_harness import Harness

SHEET = "xl/worksheets/sheet1.xml"
STRINGS = "xl/sharedStrings.xml"
SAMPLE = SAMPLE_DIR / "2026-10"


def workbook_with(parts: dict[str, bytes]) -> bytes:
    """A real workbook (openpyxl's own) with some of its parts replaced."""
    book = Workbook()
    book.active.append(["a", "b"])
    plain = io.BytesIO()
    book.save(plain)
    out = io.BytesIO()
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item.filename, parts.pop(item.filename, None) or src.read(item))
        for name, data in parts.items():
            dst.writestr(name, data)
    return out.getvalue()


def rows_bomb(rows: int) -> bytes:
    """`rows` numeric rows: repeated XML that compresses to a few hundred KB."""
    head = (
        b'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats'
        b'.org/spreadsheetml/2006/main"><sheetData>'
    )
    body = b"<row><c><v>1</v></c></row>" * rows  # rows and cells may omit their numbers
    return workbook_with({SHEET: head + body + b"</sheetData></worksheet>"})


def strings_bomb(megabytes: int) -> bytes:
    """Shared strings of `megabytes` MB: one long string, repeated."""
    one = b"<si><t>" + b"x" * 1000 + b"</t></si>"
    count = megabytes * 1000
    xml = (
        b'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/'
        b'spreadsheetml/2006/main" count="%d" uniqueCount="%d">'
        % (count, count)
        + one * count
        + b"</sst>"
    )
    return workbook_with({STRINGS: xml})


def test_six_hundred_thousand_rows_in_a_small_file_are_refused_before_parsing() -> None:
    raw = rows_bomb(600_000)
    assert len(raw) < 2_000_000  # small on the wire …
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match=r"bomb\.xlsx: more than 200,000 rows"):
            read_sheets("bomb.xlsx", raw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64_000_000, f"{peak / 1e6:.0f} MB"  # … and never expanded whole


def test_sixty_four_megabytes_of_shared_strings_are_refused_before_parsing() -> None:
    raw = strings_bomb(64)
    assert len(raw) < 2_000_000
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match=r"strings\.xlsx: the workbook expands to 6\d MB"):
            read_sheets("strings.xlsx", raw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64_000_000, f"{peak / 1e6:.0f} MB"


def test_an_operators_workbook_within_the_caps_is_read_as_before() -> None:
    rows = sample_rows("jib.csv")
    (sheet,) = read_sheets("Permian JIB.xlsx", jib_xlsx(rows))
    assert len(sheet.rows) == len(rows)


@pytest.fixture
def h(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    harness = Harness(fake, db_path)
    yield harness
    harness.close()


def drop_in_dm(h: Harness, name: str, data: bytes) -> list[str]:
    message, f = h.fake.share_file(
        user="UALICE", channel="DUALICE", thread_ts=None, name=name, data=data
    )
    shared = {
        "type": "file_shared",
        "channel_id": "DUALICE",
        "file_id": f["id"],
        "user_id": "UALICE",
        "file": {"id": f["id"]},
        "event_ts": message["ts"],
    }
    assert h.dispatch(sp.event(shared, event_id=f"Ev{f['id']}"), "application/json").status == 200
    h.idle()
    return [
        str(m.get("text") or "") + str(m.get("blocks") or "")
        for m in h.fake.sorted_messages()
        if m["channel"] == "DUALICE" and m.get("user") == "UBOT"
    ]


@pytest.mark.parametrize(
    ("name", "data", "said"),
    [
        ("Permian JIB.xlsx", rows_bomb(600_000), "more than 200,000 rows"),
        ("Permian JIB.xlsx", workbook_with({SHEET: b"<worksheet><sheetData><row"}), "XLSX"),
    ],
    ids=["rows-bomb", "xml-error"],
)
def test_a_workbook_that_cannot_be_read_is_told_to_the_dropper_by_name(
    h: Harness, name: str, data: bytes, said: str
) -> None:
    replies = drop_in_dm(h, name, data)
    assert replies, "the dropper was never answered"
    assert name in replies[-1] and said in replies[-1], replies[-1]
    assert Imports(h.store).active("2026-10") == []


def test_files_info_answering_internal_error_once_is_asked_again(
    h: Harness, fake: FakeSlack
) -> None:
    fake.fail("files.info", error="internal_error")
    replies = drop_in_dm(h, "jib.csv", (SAMPLE / "jib.csv").read_bytes())
    assert len(fake.to("files.info")) == 2  # the error, then the answer
    assert replies and "jib.csv" in replies[-1]
    assert [f["filename"] for f in Imports(h.store).history("2026-10")] == ["jib.csv"]


def test_a_file_shared_before_its_share_keeps_the_threads_reply(
    h: Harness, fake: FakeSlack
) -> None:
    """Slack sent `file_shared` first, before files.info listed the share; the `message`
    event with the thread came after: the file is the thread's, answered there."""
    run = h.start("2026-10")
    channel, thread = run.channel or "", run.thread_ts or ""
    message, f = fake.share_file(
        user="UALICE",
        channel=channel,
        thread_ts=thread,
        name="revenue.csv",
        data=(SAMPLE / "revenue.csv").read_bytes(),
    )
    with fake.lock:
        shares, fake.files[f["id"]]["shares"] = fake.files[f["id"]]["shares"], {}
    shared = {
        "type": "file_shared",
        "channel_id": channel,
        "file_id": f["id"],
        "user_id": "UALICE",
        "file": {"id": f["id"]},
        "event_ts": message["ts"],
    }
    assert h.dispatch(sp.event(shared, event_id="EvFirst"), "application/json").status == 200
    assert fake.wait_for(lambda: len(fake.to("files.info")) >= 1)  # read before the share
    inner = {
        "type": "message",
        "subtype": "file_share",
        "channel": channel,
        "user": "UALICE",
        "text": "",
        "ts": message["ts"],
        "thread_ts": thread,
        "files": [{"id": f["id"], "name": "revenue.csv"}],
        "channel_type": "channel",
    }
    assert h.dispatch(sp.event(inner, event_id="EvSecond"), "application/json").status == 200
    with fake.lock:
        fake.files[f["id"]]["shares"] = shares
    h.idle()
    (kept,) = Imports(h.store).history("2026-10")
    assert kept["thread_ts"] == thread and kept["run_id"] == run.id
    assert any("revenue.csv" in t for t in h.thread_texts(run)[1:])


def test_a_21_digit_file_id_in_a_column_menu_is_answered_with_no_options_not_a_500(
    h: Harness,
) -> None:
    import json
    from urllib.parse import urlencode

    from bot.slack.blocks.files import COLUMN_PREFIX, PICK_ACTION
    from tests.slack_harness import FORM

    payload = {
        "type": "block_suggestion",
        "user": {"id": "UALICE"},
        "team": sp.TEAM,
        "container": {"type": "message", "message_ts": "1.1", "channel_id": "DUALICE"},
        "action_id": PICK_ACTION,
        "block_id": f"{COLUMN_PREFIX}owner_net_amount:{'9' * 21}",
        "value": "",
        "api_app_id": "A0001",
        "token": "legacy",
    }
    response = h.dispatch(urlencode({"payload": json.dumps(payload)}), FORM)
    assert response.status == 200, response.body
    assert json.loads(response.body)["options"] == []

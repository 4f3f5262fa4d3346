"""Files dropped into a /close thread or a DM, through the fake Slack: the two events of a
drop, files.info, the download with the bot token, the answer in the thread, the mapping
form, and the close using what was dropped."""

from __future__ import annotations

import csv
import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bot.close.data import SAMPLE_DIR
from bot.close.imports.intake import Imports, load_period
from bot.close.ledger import Ledger
from bot.core.decision_log import decision_rows
from bot.sandbox.slack_api import FakeSlack
from bot.slack.blocks.files import CANCEL_ACTION, CONFIRM_ACTION
from bot.slack.blocks.files import PICK_ACTION as PICK
from tests import slack_payloads as sp
from tests.import_files import jib_xlsx, sample_rows
from tests.slack_harness import FORM, Harness, slack_sample

DM = "DALICE"


@pytest.fixture
def h(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    harness = Harness(fake, db_path)
    yield harness
    harness.close()


class Dropper:
    def __init__(self, h: Harness) -> None:
        self.h = h
        self.n = 0

    def drop(
        self, name: str, data: bytes, *, channel: str, thread_ts: str | None, user: str = "UALICE"
    ) -> str:
        """A person drops a file: Slack keeps it and sends both events, as it does."""
        self.n += 1
        message, f = self.h.fake.share_file(
            user=user, channel=channel, thread_ts=thread_ts, name=name, data=data
        )
        inner: dict[str, Any] = {
            "type": "message",
            "subtype": "file_share",
            "channel": channel,
            "user": user,
            "text": "",
            "ts": message["ts"],
            "files": [{"id": f["id"], "name": name}],
            "upload": True,
            "channel_type": "im" if channel.startswith("D") else "channel",
        }
        if thread_ts:
            inner["thread_ts"] = thread_ts
        shared = {
            "type": "file_shared",
            "channel_id": channel,
            "file_id": f["id"],
            "user_id": user,
            "file": {"id": f["id"]},
            "event_ts": message["ts"],
        }
        for body in (
            sp.event(inner, event_id=f"EvDrop{self.n}"),
            sp.event(shared, event_id=f"EvShared{self.n}"),
        ):
            assert self.h.dispatch(body, "application/json").status == 200
        self.h.idle()
        return str(f["id"])


def _replies(fake: FakeSlack, channel: str) -> list[dict[str, Any]]:
    with fake.lock:
        return [
            m for m in fake.sorted_messages() if m["channel"] == channel and m.get("user") == "UBOT"
        ]


def _submit_file_form(
    h: Harness, form: dict[str, Any], *, user: str = "UALICE", **typed: str
) -> None:
    """Submit a file form as it stands (the proposal preselected), typing `typed` by block."""
    values: dict[str, Any] = {}
    for block in form["blocks"]:
        if block["type"] != "input":
            continue
        element = block["element"]
        base = block["block_id"].rsplit(":", 1)[0]
        if element["type"] == "plain_text_input":
            values[block["block_id"]] = {
                PICK: {
                    "type": "plain_text_input",
                    "value": typed.get(base, element.get("initial_value")),
                }
            }
        else:
            chosen = element.get("initial_option")
            if base in typed:
                chosen = next(o for o in element.get("options", []) if o["value"] == typed[base])
            values[block["block_id"]] = {PICK: {"type": element["type"], "selected_option": chosen}}
    file_id = next(
        e["value"] for b in form["blocks"] if b["type"] == "actions" for e in b["elements"]
    )
    body = sp.block_action(
        CONFIRM_ACTION, file_id, user=user, channel=form["channel"], message=form, values=values
    )
    assert h.dispatch(body, FORM).status == 200
    h.idle()


def _revenue_csv(new_check: str) -> bytes:
    rows = sample_rows("revenue.csv")
    rows = [
        {**r, "check_no": new_check if r["check_no"] == "CHK-884120" else r["check_no"]}
        for r in rows
    ]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def test_a_close_without_data_waits_in_its_thread_for_a_csv_and_an_xlsx_and_uses_them(
    fake: FakeSlack, db_path: Path
) -> None:
    """The new user's path: /close for a month closebot has no data for, the files dropped
    into its thread (the JIB as the operator's XLSX, the rest as CSV), one mapping confirmed,
    and the close runs on those files."""
    empty = db_path.parent / "no-data"
    empty.mkdir()
    source = slack_sample(db_path.parent) / "2026-10"
    h = Harness(fake, db_path, CLOSEBOT_DATA=str(empty))
    try:
        assert h.command("2026-10").status == 200
        h.idle()
        assert h.store.runs.recent() == []  # nothing to close yet
        (root,) = [m for m in fake.sorted_messages() if "waiting for files" in m["text"]]
        drops = Dropper(h)
        jib_rows = [
            {**r, "invoice_no": r["invoice_no"].replace("PRO-JIB-2609-118", "PRO-JIB-2609-999")}
            for r in csv.DictReader(io.StringIO((source / "jib.csv").read_text()))
        ]
        revenue_id = drops.drop(
            "revenue.csv", _revenue_csv("CHK-777001"), channel=root["channel"], thread_ts=root["ts"]
        )
        drops.drop(
            "Permian JIB Oct.xlsx",
            jib_xlsx(jib_rows),
            channel=root["channel"],
            thread_ts=root["ts"],
        )
        for f in sorted(source.iterdir()):
            if f.name not in ("jib.csv", "revenue.csv"):
                drops.drop(f.name, f.read_bytes(), channel=root["channel"], thread_ts=root["ts"])
        assert h.store.runs.recent() == []  # the JIB waits for its mapping, so the close waits too

        # Slack was asked as Slack is: files.info, then the download with the bot token
        assert fake.to("files.info")[0]["file"] == revenue_id
        downloads = fake.to("url_private_download")
        assert len(downloads) == 11 and {d["token"] for d in downloads} == {"xoxb-test-token"}
        assert len(Imports(h.store).history("2026-10")) == 11  # one each, though two events came

        said = "\n".join(
            m["blocks"][0]["text"]["text"] for m in fake.thread(root["ts"]) if m["blocks"]
        )
        assert "*revenue.csv* → *Revenue check stubs (revenue.csv)* for *October 2026*" in said
        payors: dict[str, Decimal] = {}
        for r in sample_rows("revenue.csv"):
            payors[r["payor"]] = payors.get(r["payor"], Decimal(0)) + Decimal(r["owner_net_value"])
        first = sorted(payors)[0]
        assert f"{first} ${payors[first]:,.2f}" in said  # totals per payor, as read

        form = next(m for m in fake.thread(root["ts"]) if "file_col:" in json.dumps(m["blocks"]))
        shown = {
            b["block_id"].split(":")[1]: b["element"]
            .get("initial_option", {})
            .get("text", {})
            .get("text")
            for b in form["blocks"]
            if b["type"] == "input"
        }
        assert shown["owner_net_amount"] == "Your Share" and shown["gross_amount"] == "Gross Amt"
        assert "PRO-JIB-2609-999" in json.dumps(form["blocks"])  # the preview of mapped rows
        _submit_file_form(h, form)
        assert all(b["type"] != "input" for b in fake.messages[form["ts"]]["blocks"])

        (run,) = h.store.runs.recent()
        assert (run.channel, run.thread_ts) == (root["channel"], root["ts"])
        h.idle()
        h.finish(run.id)
        assert h.store.runs.get(run.id).status == "done"
        ledger = Ledger(h.store)
        batch = ledger.current_batch(run.id)
        assert batch is not None
        memos = " ".join(f"{li['entry']} {li['memo']}" for li in ledger.lines(batch["id"]))
        assert "CHK-777001" in memos and "CHK-884120" not in memos  # the dropped stubs
        assert "PRO-JIB-2609-999" in memos  # and the dropped workbook's JIB
        evidence = decision_rows(h.store, run.id)[0]["input_files"]
        assert "Permian JIB Oct.xlsx, dropped by Alice (UALICE)" in evidence
        assert "owner_net_amount←Your Share" in evidence
    finally:
        h.close()


def test_a_file_dropped_into_a_running_close_is_kept_for_the_next_one(
    h: Harness, fake: FakeSlack
) -> None:
    run = h.start("2026-10")
    Dropper(h).drop(
        "revenue.csv", _revenue_csv("CHK-1"), channel=run.channel or "", thread_ts=run.thread_ts
    )
    assert [f["filename"] for f in Imports(h.store).active("2026-10")] == ["revenue.csv"]
    said = _replies(fake, run.channel or "")[-1]["text"]
    assert "goes on with those" in said and "next /close 2026-10 uses it" in said
    h.finish(run.id)
    ledger = Ledger(h.store)
    batch = ledger.current_batch(run.id)
    assert batch is not None
    memos = " ".join(li["memo"] for li in ledger.lines(batch["id"]))
    assert "CHK-884120" in memos and "CHK-1 " not in memos  # it closed on what it had read


def test_a_foreign_layout_confirmed_once_maps_next_months_file_by_itself(
    h: Harness, fake: FakeSlack
) -> None:
    drops = Dropper(h)
    drops.drop("Permian JIB 2026-10.xlsx", jib_xlsx(), channel=DM, thread_ts=None)
    form = next(
        m for m in _replies(fake, DM) if m["blocks"] and m["blocks"][-2]["type"] == "actions"
    )
    _submit_file_form(h, form)
    assert [f["filename"] for f in Imports(h.store).active("2026-10")] == [
        "Permian JIB 2026-10.xlsx"
    ]

    november = [{**r, "service_month": "2026-10"} for r in sample_rows("jib.csv")]
    forms_before = sum(1 for m in _replies(fake, DM) if "file_col:" in json.dumps(m["blocks"]))
    drops.drop("Permian JIB 2026-11.xlsx", jib_xlsx(november), channel=DM, thread_ts=None)
    forms_after = sum(1 for m in _replies(fake, DM) if "file_col:" in json.dumps(m["blocks"]))
    assert forms_after == forms_before  # no second form
    (active,) = Imports(h.store).active("2026-11")
    assert active["filename"] == "Permian JIB 2026-11.xlsx"
    last = _replies(fake, DM)[-1]["blocks"][0]["text"]["text"]
    assert "the mapping confirmed by Alice" in last and "for *November 2026*" in last


def test_a_bad_file_is_reported_whole_in_the_thread_and_nothing_is_used(
    h: Harness, fake: FakeSlack
) -> None:
    run = h.start("2026-10")
    text = (SAMPLE_DIR / "2026-10" / "revenue.csv").read_text().splitlines()
    text[1] = text[1].replace("2026-08", "Augst")
    cells = text[2].split(",")
    cells[5] = "crude"  # the product column
    text[2] = ",".join(cells)
    Dropper(h).drop(
        "revenue.csv",
        ("\n".join(text) + "\n").encode(),
        channel=run.channel or "",
        thread_ts=run.thread_ts,
    )
    said = _replies(fake, run.channel or "")[-1]["blocks"][0]["text"]["text"]
    assert "*revenue.csv*: 2 problems; nothing of it was used." in said
    assert "row 2, column *sale_month*: `Augst` expected a month as YYYY-MM" in said
    assert "row 3, column *product*: `crude`" in said
    assert Imports(h.store).active("2026-10") == []


def test_a_file_replaced_in_the_thread_supersedes_the_first_with_an_audit_event(
    h: Harness, fake: FakeSlack
) -> None:
    run = h.start("2026-10")
    drops = Dropper(h)
    drops.drop(
        "revenue.csv", _revenue_csv("CHK-1"), channel=run.channel or "", thread_ts=run.thread_ts
    )
    drops.drop(
        "revenue-fixed.csv",
        _revenue_csv("CHK-2"),
        channel=run.channel or "",
        thread_ts=run.thread_ts,
        user="UAPPROVER",
    )
    said = next(
        m["blocks"][0]["text"]["text"]
        for m in reversed(_replies(fake, run.channel or ""))
        if m["blocks"] and "revenue-fixed.csv" in m["blocks"][0]["text"]["text"]
    )
    assert "Replaces revenue.csv (dropped by Alice" in said
    (event,) = h.store.audit.events(run.id, kind="file_superseded")
    assert event.actor == "UAPPROVER" and event.detail["old"]["filename"] == "revenue.csv"
    assert [f["filename"] for f in Imports(h.store).active("2026-10")] == ["revenue-fixed.csv"]


def test_the_download_answers_only_with_the_bot_token(fake: FakeSlack) -> None:
    _, f = fake.share_file(
        user="UALICE", channel="CFIN", thread_ts=None, name="a.csv", data=b"a,b\n"
    )
    # Slack does not refuse a download without a token: it redirects to its sign-in page
    with urllib.request.urlopen(f["url_private_download"], timeout=5) as refused:
        assert refused.headers["Content-Type"].startswith("text/html")
        assert b"a,b" not in refused.read() and "/signin" in refused.url
    request = urllib.request.Request(
        f["url_private_download"], headers={"Authorization": "Bearer xoxb-test-token"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.read() == b"a,b\n"


def test_a_download_answered_with_slacks_sign_in_page_is_said_as_such(
    h: Harness, fake: FakeSlack
) -> None:
    # A file the token cannot read: Slack answers a redirect to its sign-in page (HTML, 200),
    # not the file and not an error. closebot says so instead of reading the page as data.
    _, f = fake.share_file(
        user="UALICE", channel="DUALICE", thread_ts=None, name="revenue.csv", data=b"a,b\n"
    )
    fake.hide_file(f["id"])
    shared = {
        "type": "file_shared",
        "channel_id": "DUALICE",
        "file_id": f["id"],
        "user_id": "UALICE",
        "file": {"id": f["id"]},
        "event_ts": "1.0",
    }
    assert h.dispatch(sp.event(shared, event_id="EvSignIn"), "application/json").status == 200
    h.idle()
    assert fake.wait_for(lambda: any(m.get("bot_id") for m in fake.sorted_messages()))
    said = [m["text"] for m in fake.sorted_messages() if m.get("bot_id")][-1]
    assert "Slack's sign-in page, not the file" in said and "revenue.csv" in said, said
    assert "eleven" not in said and "can't tell" not in said
    assert Imports(h.store).history("2026-10") == []


def test_the_mapping_form_speaks_plainly_follows_each_pick_and_can_be_cancelled(
    h: Harness, fake: FakeSlack
) -> None:
    Dropper(h).drop("Permian JIB 2026-10.xlsx", jib_xlsx(), channel=DM, thread_ts=None)
    form = next(m for m in _replies(fake, DM) if "file_col:" in json.dumps(m["blocks"]))
    labels = [b["label"]["text"] for b in form["blocks"] if b["type"] == "input"]
    assert "Your net amount" in labels and "Cost category (LOE, overhead, IDC…)" in labels
    assert not any("_" in label for label in labels)  # never a raw field name
    assert any(e["action_id"] == CANCEL_ACTION for b in form["blocks"] if b["type"] == "actions" for e in b["elements"])  # fmt: skip

    # pick "Gross Amt" for the net amount: the preview follows the pick
    first = sample_rows("jib.csv")[0]
    values: dict[str, Any] = {}
    for block in form["blocks"]:
        if block["type"] == "input" and block["block_id"].startswith("file_col:owner_net_amount:"):
            gross = next(
                b["element"]["initial_option"]
                for b in form["blocks"]
                if b["type"] == "input" and b["block_id"].startswith("file_col:gross_amount:")
            )
            values[block["block_id"]] = {
                PICK: {"type": "external_select", "selected_option": gross}
            }
    body = sp.block_action(PICK, "x", user="UALICE", channel=DM, message=form, values=values)
    assert h.dispatch(body, FORM).status == 200
    h.idle()
    redrawn = fake.messages[form["ts"]]
    picked = next(
        b["element"]["initial_option"]["text"]["text"]
        for b in redrawn["blocks"]
        if b["type"] == "input" and b["block_id"].startswith("file_col:owner_net_amount:")
    )
    assert picked == "Gross Amt"
    preview = next(b["text"]["text"] for b in redrawn["blocks"] if "Preview" in json.dumps(b))
    assert f"Your net amount: {first['gross_amount']}" in preview

    # Cancel: nothing of the file is used, and the form says so
    cancel = sp.block_action(
        CANCEL_ACTION, str(Imports(h.store).history("2026-10")[0]["id"]), user="UALICE",
        channel=DM, message=redrawn,
    )  # fmt: skip
    assert h.dispatch(cancel, FORM).status == 200
    h.idle()
    assert Imports(h.store).active("2026-10") == []
    assert [f["status"] for f in Imports(h.store).history("2026-10")] == ["withdrawn"]
    assert "cancelled" in fake.messages[form["ts"]]["blocks"][0]["text"]["text"]
    assert h.store.query("select * from column_maps") == []


def test_a_statement_without_an_operator_column_takes_the_operator_typed_in_the_form(
    h: Harness, fake: FakeSlack
) -> None:
    rows = [r for r in sample_rows("jib.csv") if r["operator"] == "Red Fork Resources Inc."]
    columns = [c for c in rows[0] if c != "operator"]
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["Invoice", "Svc Month", "Property", "Well", "AFE", "Category", "Desc", "Gross", "Decimal", "Net"])  # fmt: skip
    writer.writerows([[r[c] for c in columns] for r in rows])
    Dropper(h).drop("statement.csv", text.getvalue().encode(), channel=DM, thread_ts=None)
    form = next(m for m in _replies(fake, DM) if "file_fixed:operator" in json.dumps(m["blocks"]))
    _submit_file_form(h, form, **{"file_fixed:operator": "Red Fork Resources Inc."})
    (active,) = Imports(h.store).active("2026-10")
    assert active["mapping"]["operator"] == "=Red Fork Resources Inc."
    loaded = load_period(h.store, "2026-10", None).jib
    assert {j.operator for j in loaded} == {"Red Fork Resources Inc."}
    assert [j.owner_net_amount for j in loaded] == [Decimal(r["owner_net_amount"]) for r in rows]

"""Authorization on every way in (issue 31): who may give closebot a period's data, and who may
start a close from the DM and where it runs. A colleague (UCAROL) is neither a close's starter,
nor an approver, nor in finance (CLOSEBOT_FINANCE); Alice is in finance. Every refusal is
audited."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bot.close.imports.intake import Imports
from bot.sandbox.slack_api import FakeSlack
from bot.slack.blocks.period import PERIOD_ACTION, PERIOD_PICK
from tests import slack_payloads as sp
from tests.import_files import sample_rows
from tests.slack_harness import FORM, Harness

COLLEAGUE = "UCAROL"


@pytest.fixture
def h(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    harness = Harness(fake, db_path, CLOSEBOT_CLOSE_CHANNEL="CFIN")
    yield harness
    harness.close()


def raised_jib() -> bytes:
    """The sample JIB with its first line raised by $50,000."""
    rows = sample_rows("jib.csv")
    rows[0] = {**rows[0], "gross_amount": str(Decimal(rows[0]["gross_amount"]) + 50_000)}
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def drop(h: Harness, user: str, channel: str, thread_ts: str | None, name: str, n: int) -> None:
    message, f = h.fake.share_file(
        user=user, channel=channel, thread_ts=thread_ts, name=name, data=raised_jib()
    )
    inner: dict[str, Any] = {
        "type": "message",
        "subtype": "file_share",
        "channel": channel,
        "user": user,
        "text": "",
        "ts": message["ts"],
        "files": [{"id": f["id"], "name": name}],
        "channel_type": "im" if channel.startswith("D") else "channel",
        **({"thread_ts": thread_ts} if thread_ts else {}),
    }
    assert h.dispatch(sp.event(inner, event_id=f"EvDrop{n}"), "application/json").status == 200
    h.idle()


def refusals(h: Harness, kind: str) -> list[dict[str, Any]]:
    return h.store.query(
        "select run_id, actor, detail from audit_events where kind = ? order by id", (kind,)
    )


def dm_texts(fake: FakeSlack, channel: str) -> list[str]:
    return [str(m.get("text") or "") for m in fake.sorted_messages() if m["channel"] == channel]


def test_a_colleague_cannot_replace_a_periods_data_from_the_dm(h: Harness, fake: FakeSlack) -> None:
    drop(h, COLLEAGUE, "DUCAROL", None, "jib.csv", 1)
    assert fake.to("url_private_download") == []  # not even fetched
    assert Imports(h.store).history("2026-10") == []  # nothing kept for the period
    (refused,) = refusals(h, "file_drop_refused")
    assert refused["actor"] == COLLEAGUE and "jib.csv" in refused["detail"]
    assert any("did not read jib.csv" in t for t in dm_texts(fake, "DUCAROL"))
    # someone in finance may
    drop(h, "UALICE", "DUALICE", None, "jib.csv", 2)
    assert [f["dropped_by"] for f in Imports(h.store).history("2026-10")] == ["UALICE"]


def test_a_colleague_cannot_drop_a_file_into_someone_elses_running_close(
    h: Harness, fake: FakeSlack
) -> None:
    run = h.start("2026-10")
    drop(h, COLLEAGUE, run.channel or "", run.thread_ts, "jib.csv", 1)
    assert Imports(h.store).history("2026-10") == []
    (refused,) = refusals(h, "file_drop_refused")
    assert refused["run_id"] == run.id and refused["actor"] == COLLEAGUE
    (told,) = h.ephemerals_to(COLLEAGUE)
    assert "did not read jib.csv" in told
    # the close's starter may
    drop(h, "UALICE", run.channel or "", run.thread_ts, "jib.csv", 2)
    assert [f["dropped_by"] for f in Imports(h.store).history("2026-10")] == ["UALICE"]


def test_a_colleague_cannot_start_a_close_from_the_dm_and_block_the_period(
    h: Harness, fake: FakeSlack
) -> None:
    dm = {
        "type": "message",
        "channel": "DUCAROL",
        "channel_type": "im",
        "user": COLLEAGUE,
        "text": "close November",
        "ts": "1761909000.000001",
    }
    assert h.dispatch(sp.event(dm, event_id="EvDmCarol"), "application/json").status == 200
    h.idle()
    assert h.store.runs.recent() == []
    assert fake.wait_for(lambda: any("nothing was started" in t for t in dm_texts(fake, "DUCAROL")))
    (refused,) = refusals(h, "close_start_refused")
    assert refused["actor"] == COLLEAGUE
    run = h.start("2026-11")  # the starter's /close in the finance channel is not blocked
    assert (run.period, run.started_by, run.channel) == ("2026-11", "UALICE", "CFIN")


def test_the_which_period_form_answered_in_the_dm_runs_the_close_where_approvers_act(
    h: Harness, fake: FakeSlack
) -> None:
    values = {
        PERIOD_PICK: {
            PERIOD_PICK: {"type": "radio_buttons", "selected_option": {"value": "2026-11"}}
        }
    }
    url = fake.response_url(channel="DUCAROL", user=COLLEAGUE)
    body = sp.block_action(
        PERIOD_ACTION, "close", user=COLLEAGUE, channel="DUCAROL", values=values, response_url=url
    )
    assert h.dispatch(body, FORM).status == 200
    h.idle()
    assert h.store.runs.recent() == []  # a colleague's pick starts nothing
    assert len(refusals(h, "close_start_refused")) == 1
    url = fake.response_url(channel="DUALICE", user="UALICE")
    body = sp.block_action(
        PERIOD_ACTION, "close", channel="DUALICE", values=values, response_url=url
    )
    assert h.dispatch(body, FORM).status == 200
    h.idle()
    (run,) = h.store.runs.recent()
    assert (run.started_by, run.channel) == ("UALICE", "CFIN")  # never the DM

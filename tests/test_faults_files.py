"""A dropped file fetched from Slack only (issue 31): the bot token never leaves Slack's file
host, no other scheme or host is read, a redirect off the host is not followed with the token,
and a slow download neither hangs for ever nor holds the pool a form's read-only update uses."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.close.data import SAMPLE_DIR
from bot.close.imports.intake import Imports
from bot.sandbox.http import LoopbackServer, Request, Response
from bot.sandbox.slack_api import FakeSlack
from bot.slack import files as slack_files
from bot.slack.downloads import allowed_origins
from tests import slack_payloads as sp
from tests.slack_harness import Harness

DM = "DALICE"
CSV = b"SecretAccessKey,salary,shell\nAKIAEXAMPLE,120000,/bin/bash\n"


class Attacker:
    """A server on another host (port) that records who called it and with what token."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []
        self.lock = threading.Lock()

    def route(self, request: Request) -> Response:
        with self.lock:
            self.seen.append(
                {"path": request.path, "auth": str(request.headers.get("authorization") or "")}
            )
        return Response(200, CSV, {"Content-Type": "text/csv"})


@pytest.fixture
def attacker() -> Iterator[tuple[Attacker, LoopbackServer]]:
    evil = Attacker()
    with LoopbackServer([evil.route]) as server:
        yield evil, server


@pytest.fixture
def h(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    harness = Harness(fake, db_path)
    yield harness
    fake.drips_stopped.set()
    harness.close()


def share(
    h: Harness,
    name: str,
    data: bytes,
    *,
    channel: str = DM,
    thread_ts: str | None = None,
    url: str | None = None,
    n: int = 1,
) -> str:
    """A person drops a file whose files.info names `url` as its download (a remote file's
    URL can be anything), and Slack sends `file_shared`."""
    message, f = h.fake.share_file(
        user="UALICE", channel=channel, thread_ts=thread_ts, name=name, data=data
    )
    if url is not None:
        with h.fake.lock:
            h.fake.files[f["id"]]["url_private_download"] = url
    shared = {
        "type": "file_shared",
        "channel_id": channel,
        "file_id": f["id"],
        "user_id": "UALICE",
        "file": {"id": f["id"]},
        "event_ts": message["ts"],
    }
    assert (
        h.dispatch(sp.event(shared, event_id=f"EvF{n}{f['id']}"), "application/json").status == 200
    )
    return str(f["id"])


def bot_said(fake: FakeSlack, channel: str) -> list[str]:
    with fake.lock:
        return [
            str(m.get("text") or "")
            for m in fake.sorted_messages()
            if m["channel"] == channel and m.get("user") == "UBOT"
        ]


def test_a_download_url_on_another_host_never_gets_the_token_and_is_not_read(
    h: Harness, fake: FakeSlack, attacker: tuple[Attacker, LoopbackServer]
) -> None:
    evil, server = attacker
    share(h, "revenue.csv", CSV, url=f"{server.url}/files/F1/revenue.csv")
    h.idle()
    assert evil.seen == []  # not even asked, let alone with the token
    (said,) = bot_said(fake, DM)
    assert "revenue.csv" in said and "not on Slack's file host" in said
    assert Imports(h.store).history("2026-10") == []
    (event,) = h.store.query(
        "select actor, detail from audit_events where kind = 'file_download_refused'"
    )
    assert event["actor"] == "UALICE" and "revenue.csv" in event["detail"]


def test_a_slack_download_redirecting_to_another_host_is_not_followed_with_the_token(
    h: Harness,
    fake: FakeSlack,
    attacker: tuple[Attacker, LoopbackServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    evil, server = attacker
    monkeypatch.setattr(
        fake,
        "download",
        lambda path, authed: (302, b"", {"Location": f"{server.url}/steal{path}"}),
    )
    share(h, "revenue.csv", CSV)
    h.idle()
    assert all("xoxb" not in seen["auth"] for seen in evil.seen)
    assert evil.seen == []  # a redirect off Slack's host is refused, not followed
    assert fake.to("url_private_download")[0]["token"] == "xoxb-test-token"  # Slack had it
    assert "not on Slack's file host" in bot_said(fake, DM)[-1]
    assert Imports(h.store).history("2026-10") == []


@pytest.mark.parametrize(
    "url",
    [
        "file:///{tmp}/secret.csv",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/role",
        "http://127.0.0.1:{other}/latest/meta-data/",
        "ftp://files.slack.com/files-pri/T1-F1/revenue.csv",
        "http://files.slack.com/files-pri/T1-F1/revenue.csv",
    ],
)
def test_no_other_scheme_or_host_is_read_and_the_column_menu_shows_nothing_of_it(
    h: Harness,
    fake: FakeSlack,
    attacker: tuple[Attacker, LoopbackServer],
    tmp_path: Path,
    url: str,
) -> None:
    evil, server = attacker
    (tmp_path / "secret.csv").write_bytes(CSV)
    url = url.format(tmp=str(tmp_path).lstrip("/"), other=server.port)
    share(h, "Permian JIB.csv", CSV, url=url)
    h.idle()
    assert evil.seen == []
    assert Imports(h.store).history("2026-10") == []
    Imports(h.store)  # the close's tables
    rows = h.store.query("select count(*) as n from imported_files")
    assert rows[0]["n"] == 0  # nothing of it was stored, so no form can offer its first line
    assert all("SecretAccessKey" not in t for t in bot_said(fake, DM))


def test_only_slacks_file_host_and_the_configured_api_host_are_allowed() -> None:
    assert allowed_origins("https://slack.com/api/") == {
        ("https", "files.slack.com", 443),
        ("https", "slack.com", 443),
    }
    # plain http only for a loopback test host, and only on its own port
    assert ("http", "127.0.0.1", 4000) in allowed_origins("http://127.0.0.1:4000/api/")
    assert allowed_origins("http://slack.example.com/api/") == {("https", "files.slack.com", 443)}


def test_a_download_that_drips_is_cut_off_at_its_budget_and_the_dropper_told(
    h: Harness, fake: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slack_files, "DOWNLOAD_SECONDS", 1.0)
    _, f = fake.share_file(user="UALICE", channel=DM, thread_ts=None, name="x.csv", data=b"")
    fake.drip_file(str(f["id"]), 0.05)  # 20 bytes a second: the CSV takes ~3 s
    with fake.lock:
        fake.uploads[f["id"]] = CSV
    shared = {
        "type": "file_shared",
        "channel_id": DM,
        "file_id": f["id"],
        "user_id": "UALICE",
        "file": {"id": f["id"]},
        "event_ts": "1.0",
    }
    assert h.dispatch(sp.event(shared, event_id="EvDrip"), "application/json").status == 200
    assert fake.wait_for(lambda: any("stopped downloading" in t for t in bot_said(fake, DM)))
    said = bot_said(fake, DM)[-1]
    assert "x.csv" in said and "nothing was read" in said
    assert Imports(h.store).history("2026-10") == []


def test_four_slow_downloads_do_not_delay_a_submitted_form_turning_read_only(
    h: Harness, fake: FakeSlack
) -> None:
    run = h.start("2026-10")
    question = h.pending(run.id)
    for n in range(4):  # one byte a second, for minutes: each holds a worker that long
        _, f = fake.share_file(
            user="UALICE", channel=DM, thread_ts=None, name=f"slow{n}.csv", data=CSV * 4
        )
        fake.drip_file(str(f["id"]), 1.0)
        shared: dict[str, Any] = {
            "type": "file_shared",
            "channel_id": DM,
            "file_id": f["id"],
            "user_id": "UALICE",
            "file": {"id": f["id"]},
            "event_ts": f"2.{n}",
        }
        assert h.dispatch(sp.event(shared, event_id=f"EvSlow{n}"), "application/json").status == 200
    assert fake.wait_for(lambda: len(fake.to("url_private_download")) == 4)
    h.submit(question, h.recommended_picks(question))
    form = h.form_of(question)
    assert fake.wait_for(
        lambda: not [b for b in fake.messages[form["ts"]]["blocks"] if b["type"] == "input"],
        timeout=15,
    ), "the answered form did not turn read-only while four downloads dripped"
    fake.drips_stopped.set()
    h.idle()


def test_a_file_dropped_after_posting_is_not_promised_to_a_next_close(
    h: Harness, fake: FakeSlack
) -> None:
    run = h.start("2026-10")
    h.finish(run.id)
    assert h.store.runs.get(run.id).status == "done"
    share(
        h,
        "revenue.csv",
        (SAMPLE_DIR / "2026-10" / "revenue.csv").read_bytes(),
        channel=run.channel or "",
        thread_ts=run.thread_ts,
    )
    h.idle()
    said = [t for t in bot_said(fake, run.channel or "") if "revenue.csv" in t]
    assert said and "is posted" in said[-1] and "next /close" not in said[-1], said

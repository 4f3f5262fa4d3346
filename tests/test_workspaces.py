"""Many workspaces, sealed from each other (issue 32): installed through the OAuth flow
against a fake Slack playing two workspaces, each closing the same period on its own."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from bot.close import Ledger
from bot.core.tenancy import Tenant
from bot.sandbox.slack_api.oauth import FakeSlackHost, fake_slack_host
from bot.slack.installations import INSTALL_SCOPES, installations_path
from tests.workspaces_kit import (
    PEOPLE,
    Hosted,
    add_workspace,
    everything_shown,
    get,
    install,
    served_workspaces,
)


@pytest.fixture
def host() -> Iterator[FakeSlackHost]:
    with fake_slack_host() as h:
        add_workspace(h, "TAAAA")
        add_workspace(h, "TBBBB")
        yield h


@pytest.fixture
def hosted(host: FakeSlackHost, db_path: Path) -> Iterator[Hosted]:
    with served_workspaces(host, db_path) as h:
        yield h


def test_installed_through_oauth_each_workspace_gets_its_own_token(
    host: FakeSlackHost, db_path: Path
) -> None:
    with served_workspaces(host, db_path, installed=False) as h:
        installations = h.service.installations
        assert installations is not None
        # before any install, a workspace's request finds no installation: nothing starts
        h.a.command("2026-10", user="UALICE", channel="CAFIN")
        h.a.idle()
        assert h.store.runs.recent() == [] and not host.workspaces["TAAAA"].messages
        status, body = install(host, h.base, "TAAAA")
        assert status == 200, body
        # the exchange Bolt made: the one-time code Slack sent the browser back with
        assert host.exchanges[-1]["code"].startswith("code-TAAAA-")
        bot = installations.bot(Tenant("TAAAA"))
        assert bot is not None and bot.bot_token in host.workspaces["TAAAA"].issued_tokens
        assert set(bot.bot_scopes) == set(INSTALL_SCOPES)
        assert installations.bot(Tenant("TBBBB")) is None
        assert installations_path(db_path).exists()
        # the redirect without the state cookie the install page set: refused, nothing kept
        _, page, _ = get(f"{h.base}/slack/install")
        link = unescape(re.search(r'href="([^"]+authorize[^"]+)"', page)[1])  # type: ignore[index]
        status, _, _ = get(host.approve(link, team_id="TBBBB"))
        assert status == 400 and installations.bot(Tenant("TBBBB")) is None
        # a code is good once, and only with the app's own secret (oauth.v2.access)
        code = host.exchanges[-1].get("code") or "none"
        assert host.access({"code": code}, (host.client_id, host.client_secret))["error"] == (
            "invalid_code"
        )
        status, body = install(host, h.base, "TBBBB")
        assert status == 200, body
        other = installations.bot(Tenant("TBBBB"))
        assert other is not None and other.bot_token != bot.bot_token
        assert other.bot_token not in host.workspaces["TAAAA"].issued_tokens


def test_two_workspaces_close_the_same_period_independently(hosted: Hosted) -> None:
    a = hosted.a.start("2026-10", user="UALICE", channel="CAFIN")
    b = hosted.b.start("2026-10", user="UBEA", channel="CBFIN")
    assert a.id != b.id
    runs = {r.id: r for r in (hosted.store.runs.get(a.id), hosted.store.runs.get(b.id))}
    assert runs[a.id].team_id == "TAAAA" and runs[b.id].team_id == "TBBBB"
    assert {r.status for r in runs.values()} <= {"running", "waiting"}
    fa, fb = hosted.host.workspaces["TAAAA"], hosted.host.workspaces["TBBBB"]
    # each thread opened in its own workspace, in its own finance channel
    assert {m["channel"] for m in fa.messages.values()} == {"CAFIN"}
    assert {m["channel"] for m in fb.messages.values()} == {"CBFIN"}


def test_done_when_two_workspaces_close_october_each_on_its_own(hosted: Hosted) -> None:
    """Issue 32's done-when: two workspaces installed through the OAuth flow close the same
    period independently — each close done and posted by its own approver, in its own
    channel, with its own token — and neither sees the other's."""
    a = hosted.a.start("2026-10", user="UALICE", channel="CAFIN")
    b = hosted.b.start("2026-10", user="UBEA", channel="CBFIN")
    hosted.a.finish(a.id, user="UALICE", approvers=("UAPPROVER", "UAPPROVER2"))
    hosted.b.finish(b.id, user="UBEA", approvers=("UBAPPROVER", "UBAPPROVER2"))
    ledger = Ledger(hosted.store)
    batches = {run.id: ledger.current_batch(run.id) for run in (a, b)}
    assert hosted.store.runs.get(a.id).status == hosted.store.runs.get(b.id).status == "done"
    assert batches[a.id]["posted_by"] == "UAPPROVER"  # type: ignore[index]
    assert batches[b.id]["posted_by"] == "UBAPPROVER"  # type: ignore[index]
    # the same books from the same month's files, kept apart: two batches, equal lines
    assert batches[a.id]["id"] != batches[b.id]["id"]  # type: ignore[index]
    assert _lines(ledger, a.id) == _lines(ledger, b.id) and _lines(ledger, a.id)
    fa, fb = hosted.host.workspaces["TAAAA"], hosted.host.workspaces["TBBBB"]
    for fake, own, other in ((fa, a, b), (fb, b, a)):
        shown = everything_shown(fake)
        assert own.id in shown or (own.thread_ts or "") in shown
        for secret in (other.id, "CBFIN" if fake is fa else "CAFIN"):
            assert secret not in shown
        for person in PEOPLE["TBBBB" if fake is fa else "TAAAA"]:
            assert person not in shown  # nobody of the other workspace is named
        # every call the bot made in this workspace carried a token it issued (the host
        # routes a call by its token: a call with the other's token would land there)
        assert fake.calls and not [c for c in fake.calls if c.method == "invalid_auth"]


def _lines(ledger: Ledger, run_id: str) -> list[tuple[str, str, str]]:
    batch = ledger.current_batch(run_id)
    assert batch is not None
    return [
        (line["account"], str(line["debit"]), str(line["credit"]))
        for line in ledger.lines(batch["id"])
    ]

"""Many workspaces, sealed from each other (issue 32): installed through the OAuth flow
against a fake Slack playing two workspaces, each closing the same period on its own."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from bot.core.tenancy import Tenant
from bot.sandbox.slack_api.oauth import FakeSlackHost, fake_slack_host
from bot.slack.installations import INSTALL_SCOPES, installations_path
from tests.workspaces_kit import Hosted, add_workspace, get, install, served_workspaces


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

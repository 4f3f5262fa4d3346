"""Many workspaces, sealed from each other (issue 32): installed through the OAuth flow
against a fake Slack playing two workspaces, each closing the same period on its own."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from html import unescape
from pathlib import Path

import pytest
import yaml

from bot.close import Ledger
from bot.core.tenancy import Tenant
from bot.sandbox.slack_api.oauth import FakeSlackHost, fake_slack_host
from bot.sandbox.slack_api.scopes import MANIFEST
from bot.slack.installations import INSTALL_SCOPES, installations_path
from tests import slack_payloads as sp
from tests.slack_harness import FORM
from tests.workspaces_kit import (
    PEOPLE,
    Hosted,
    add_workspace,
    everything_shown,
    get,
    install,
    served_workspaces,
)

JSON = "application/json"
DAY = timedelta(days=1)


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
        # nor told, nor looked up but to find they are not this workspace's (the approvers
        # the environment names for every workspace are each workspace's own only)
        others = set(PEOPLE["TBBBB" if fake is fa else "TAAAA"])
        reached = [
            c.method
            for c in fake.calls
            if c.method != "users.info" and {c.params.get("user"), c.params.get("users")} & others
        ]
        assert reached == []
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


def test_one_workspace_uninstalling_pauses_only_its_own_and_keeps_its_books(
    hosted: Hosted,
) -> None:
    a = hosted.a.start("2026-10", user="UALICE", channel="CAFIN")
    b = hosted.b.start("2026-10", user="UBEA", channel="CBFIN")
    question_b = hosted.b.pending(b.id)
    hosted.host.revoke("TBBBB")  # Slack takes B's tokens back, and tells the app
    uninstalled = {"type": "app_uninstalled"}
    assert hosted.b.dispatch(sp.event(uninstalled, event_id="EvGone"), JSON).status == 200
    hosted.b.idle()
    installations = hosted.service.installations
    assert installations is not None
    assert installations.bot(Tenant("TBBBB")) is None  # its tokens deleted
    assert installations.bot(Tenant("TAAAA")) is not None
    # /healthz stays healthy: a replica must not drain for everyone because one left
    status, body, _ = get(f"{hosted.base}/healthz")
    assert status == 200 and json.loads(body)["slack"] == "ok"
    # A closes on; B's close waits where it was, its books kept and its pause audited
    hosted.a.finish(a.id, user="UALICE", approvers=("UAPPROVER", "UAPPROVER2"))
    assert hosted.store.runs.get(a.id).status == "done"
    kept = hosted.store.runs.get(b.id)
    assert kept.status == "waiting" and hosted.store.questions.get(question_b).status == "pending"
    paused = hosted.store.audit.events(b.id, kind="paused")
    assert [e.detail["reason"] for e in paused] == ["app_uninstalled"]
    assert hosted.store.audit.events(a.id, kind="paused") == []
    # installed again, B's close is B's again
    status, _ = install(hosted.host, hosted.base, "TBBBB")
    assert status == 200 and installations.bot(Tenant("TBBBB")) is not None


def test_a_rotating_token_is_refreshed_before_it_expires_and_the_close_goes_on(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Token rotation (docs.slack.dev/authentication/using-token-rotation): the token lives
    12 hours; within Bolt's two hours of its end it is refreshed at oauth.v2.access with the
    refresh token, and the expired one is never sent."""
    from slack_sdk.oauth.token_rotation import rotator

    with fake_slack_host(rotation=True) as host:
        fa = add_workspace(host, "TAAAA")
        add_workspace(host, "TBBBB")
        with served_workspaces(host, db_path) as h:
            run = h.a.start("2026-10", user="UALICE", channel="CAFIN")
            (first,) = list(fa.issued_tokens)
            assert not [x for x in host.exchanges if x.get("grant_type") == "refresh_token"]
            # eleven hours and a half later (the rotation check reads slack_sdk's clock;
            # Slack's reads the fake's): the token is near its end, then past it
            later = rotator.time() + 11.5 * 3600
            monkeypatch.setattr(rotator, "time", lambda: later)
            fa.advance(12 * 3600 + 1)
            assert fa.token_expired(first)
            h.a.submit(h.a.pending(run.id), h.a.recommended_picks(h.a.pending(run.id)))
            h.a.idle()
            refreshes = [x for x in host.exchanges if x.get("grant_type") == "refresh_token"]
            assert refreshes and refreshes[0]["refresh_token"].startswith("xoxe-1-")
            assert len(h.store.questions.of_run(run.id)) >= 2  # the close went on
            answered = [q for q in h.store.questions.of_run(run.id) if q.status == "answered"]
            assert answered and h.store.runs.get(run.id).status in ("running", "waiting")
            bot = h.service.installations.bot(Tenant("TAAAA"))  # type: ignore[union-attr]
            assert (
                bot is not None
                and bot.bot_token != first
                and not fa.token_expired(str(bot.bot_token))
            )


def test_serve_over_http_installs_through_oauth_without_a_bot_token(
    host: FakeSlackHost, db_path: Path
) -> None:
    """The measured failure: SLACK_CLIENT_ID/SLACK_CLIENT_SECRET and no bot token made
    `serve --http` exit 2 ("SLACK_BOT_TOKEN is not set"). Now it serves the install."""
    env = {
        **os.environ,
        "SLACK_API_URL": host.api_url,
        "SLACK_CLIENT_ID": host.client_id,
        "SLACK_CLIENT_SECRET": host.client_secret,
        "SLACK_SIGNING_SECRET": sp.SECRET,
        "CLOSEBOT_DB": str(db_path),
    }
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"):
        env.pop(name, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "serve", "--http", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)/slack/events", first)
        assert found, first + (proc.stderr.read() if proc.poll() is not None else "")  # type: ignore[union-attr]
        base = found.group(1)
        host.redirect_url = f"{base}/slack/oauth_redirect"
        status, body = install(host, base, "TAAAA")
        assert status == 200, body
        assert get(f"{base}/healthz")[0] == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err, err
    # Socket Mode serves one workspace: OAuth without a bot token there says what to do
    env["SLACK_APP_TOKEN"] = "xapp-1"
    refused = subprocess.run(
        [sys.executable, "-m", "bot", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert refused.returncode == 2 and "needs HTTP (closebot serve --http" in refused.stderr


def test_the_install_asks_for_the_manifests_bot_scopes() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert sorted(INSTALL_SCOPES) == sorted(manifest["oauth_config"]["scopes"]["bot"])
    assert manifest["settings"]["org_deploy_enabled"] is True
    assert manifest["oauth_config"]["redirect_urls"][0].endswith("/slack/oauth_redirect")


def test_an_org_wide_install_serves_the_orgs_workspaces_by_enterprise_id(
    db_path: Path,
) -> None:
    """Enterprise Grid: one install for the org (oauth.v2.access answers
    is_enterprise_install with the enterprise and no team); a workspace of the org is
    authorized by its enterprise_id, and its runs keep both ids."""
    with fake_slack_host() as host:
        org = add_workspace(host, "TAAAA", enterprise_id="E0ORG")
        add_workspace(host, "TBBBB")
        with served_workspaces(host, db_path, installed=False) as h:
            status, body = install(host, h.base, "TAAAA", org_wide=True)
            assert status == 200, body
            installations = h.service.installations
            assert installations is not None
            org_bot = installations.bot(Tenant(None, "E0ORG"))
            assert org_bot is not None and org_bot.is_enterprise_install
            through_org = installations.bot(Tenant("TAAAA", "E0ORG"))  # found through its org
            assert through_org is not None and through_org.bot_token == org_bot.bot_token
            assert installations.bot(Tenant("TBBBB")) is None  # not in the org: not installed
            command = sp.slash_command("2026-10", channel="CAFIN", user="UALICE")
            body = command + "&enterprise_id=E0ORG&is_enterprise_install=true"
            assert h.a.dispatch(body, FORM).status == 200
            h.a.idle()
            (run,) = h.store.runs.recent()
            assert (run.team_id, run.enterprise_id) == ("TAAAA", "E0ORG")
            assert {m["channel"] for m in org.messages.values()} == {"CAFIN"}


def test_the_watchdogs_reminders_go_out_with_each_runs_own_token(hosted: Hosted) -> None:
    """Upkeep acts outside any request: each reminder is sent for its run's workspace."""
    a = hosted.a.start("2026-10", user="UALICE", channel="CAFIN")
    b = hosted.b.start("2026-10", user="UBEA", channel="CBFIN")
    store = hosted.store
    before = {}
    for team, run in (("TAAAA", a), ("TBBBB", b)):
        store.questions.set_remind_at(hosted.a.pending(run.id), store.now(after=-DAY))
        before[team] = len(hosted.host.workspaces[team].to("chat.postMessage"))
    reminded = hosted.service.work.remind_due()
    assert sorted(reminded) == sorted(hosted.a.pending(r.id) for r in (a, b))
    for team, run in (("TAAAA", a), ("TBBBB", b)):
        posted = hosted.host.workspaces[team].to("chat.postMessage")[before[team] :]
        assert [p["thread_ts"] for p in posted] == [run.thread_ts]
        assert f"<@{run.started_by}>" in json.dumps(posted)  # the reminder pings who may answer

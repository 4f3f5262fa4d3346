"""Workspaces sealed from each other, tried as an attacker would (issue 32): every workspace's
requests are signed with the app's one signing secret, so a payload may name another
workspace's form, run, thread or file, or another workspace altogether. Each is refused and
nothing of the other workspace is shown; each test fails on a closebot that serves every
workspace as one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.blocks import SUBMIT_ACTION
from bot.close import Ledger
from bot.sandbox.slack_api import TEAM_ID, FakeSlack
from bot.sandbox.slack_api.oauth import fake_slack_host
from bot.slack.blocks.actions import STOP_ACTION
from tests import slack_payloads as sp
from tests.slack_harness import FORM
from tests.workspaces_kit import (
    PEOPLE,
    Hosted,
    WorkspaceHarness,
    add_workspace,
    everything_shown,
    served_workspaces,
)

JSON = "application/json"


@pytest.fixture
def hosted(db_path: Path) -> Iterator[Hosted]:
    with fake_slack_host() as host:
        add_workspace(host, "TAAAA")
        add_workspace(host, "TBBBB")
        with served_workspaces(host, db_path) as h:
            yield h


def _b_waiting(hosted: Hosted) -> tuple[Any, str, dict[str, Any]]:
    """Workspace B's close of October, waiting on its first form: (run, question, form)."""
    run = hosted.b.start("2026-10", user="UBEA", channel="CBFIN")
    question = hosted.b.pending(run.id)
    return run, question, hosted.b.form_of(question)


def _nothing_of_b_in_a(hosted: Hosted, run: Any) -> None:
    shown = everything_shown(hosted.host.workspaces["TAAAA"])
    # (a message ts is unique in its channel only: B's channel is the secret, not its ts)
    for secret in (run.id, "CBFIN", *PEOPLE["TBBBB"], "Workspace TBBBB"):
        assert secret not in shown, f"{secret} of workspace B shown in A"


def _as(harness: WorkspaceHarness, team: str) -> WorkspaceHarness:
    """The same harness, its payloads naming `team` instead of its own (a forged team)."""
    forged = WorkspaceHarness(harness.fake, harness.service, harness.store)
    forged.dispatch = lambda body, content_type, **h: WorkspaceHarness.dispatch(  # type: ignore[method-assign]
        harness, body.replace(TEAM_ID, team), content_type, **h
    )
    return forged


def test_a_payload_from_a_carrying_bs_form_answers_nothing_and_shows_nothing(
    hosted: Hosted,
) -> None:
    run, question, form = _b_waiting(hosted)
    fb = hosted.host.workspaces["TBBBB"]
    before = everything_shown(fb)
    values = sp.form_values(form["blocks"], hosted.b.recommended_picks(question))
    for user in ("UAPPROVER", "UALICE"):  # A's approver, A's finance lead
        body = sp.block_action(
            SUBMIT_ACTION,
            question,
            user=user,
            channel="CBFIN",
            message=form,
            values=values,
            response_url=hosted.host.workspaces["TAAAA"].response_url(channel="CAFIN", user=user),
        )
        assert hosted.a.dispatch(body, FORM).status == 200
        hosted.a.press(STOP_ACTION, run.id, user=user)  # B's Stop, pressed from A
    hosted.a.idle()
    assert hosted.store.questions.get(question).status == "pending"
    assert hosted.store.runs.get(run.id).stop_requested_by is None
    assert everything_shown(fb) == before  # B's workspace: nothing changed, nothing said
    _nothing_of_b_in_a(hosted, run)


def test_a_forged_team_id_naming_b_for_a_person_of_a_is_refused(hosted: Hosted) -> None:
    run, question, form = _b_waiting(hosted)
    fb = hosted.host.workspaces["TBBBB"]
    before = everything_shown(fb)
    forged = _as(hosted.a, "TBBBB")  # A's approver, the payload claiming workspace B
    values = sp.form_values(form["blocks"], hosted.b.recommended_picks(question))
    body = sp.block_action(
        SUBMIT_ACTION, question, user="UAPPROVER", channel="CBFIN", message=form, values=values
    )
    assert forged.dispatch(body, FORM).status == 200
    forged.command("2026-11", user="UAPPROVER", channel="CBFIN")  # a close of B started by A
    hosted.a.idle()
    assert hosted.store.questions.get(question).status == "pending"
    assert [r.id for r in hosted.store.runs.recent()] == [run.id]
    assert everything_shown(fb) == before
    _nothing_of_b_in_a(hosted, run)


def test_a_person_of_a_following_a_link_to_bs_thread_sees_nothing_of_it(
    hosted: Hosted,
) -> None:
    run, question, _ = _b_waiting(hosted)
    a_run = hosted.a.start("2026-10", user="UALICE", channel="CAFIN")
    fb = hosted.host.workspaces["TBBBB"]
    before = everything_shown(fb)
    # in B's thread (from A: its link opened there), asking the bot what it waits on
    mention = {
        "type": "app_mention",
        "channel": "CBFIN",
        "user": "UAPPROVER",
        "text": "<@UBOT> what's the status?",
        "ts": "1761909999.000777",
        "thread_ts": run.thread_ts,
    }
    assert hosted.a.dispatch(sp.event(mention, event_id="EvLink1"), JSON).status == 200
    # and in A, what waits on A's approver (an approver may answer any close's form)
    for user in ("UAPPROVER", "UALICE"):
        dm = {
            "type": "message",
            "channel": f"D{user}",
            "channel_type": "im",
            "user": user,
            "text": "what's waiting on me?",
            "ts": f"1761909999.00088{len(user)}",
        }
        assert hosted.a.dispatch(sp.event(dm, event_id=f"EvLink{user}"), JSON).status == 200
        home = {"type": "app_home_opened", "user": user, "channel": f"D{user}", "tab": "home"}
        assert hosted.a.dispatch(sp.event(home, event_id=f"EvHome{user}"), JSON).status == 200
    hosted.a.idle()
    fa = hosted.host.workspaces["TAAAA"]
    replies = [p["text"] for p in fa.to("chat.postMessage") if p["channel"] == "DUALICE"]
    assert replies and "October 2026" in replies[-1]  # A's own close is there
    assert f"/thread/{a_run.thread_ts}" in everything_shown(fa)
    assert everything_shown(fb) == before
    _nothing_of_b_in_a(hosted, run)
    assert hosted.store.questions.get(question).status == "pending"


def _drop(
    harness: WorkspaceHarness,
    owner: FakeSlack,
    *,
    user: str,
    channel: str,
    thread: str | None,
    n: int,
) -> str:
    """A file shared in `owner`'s workspace, and Slack's two events for it sent as from
    `harness`'s workspace, naming `channel`/`thread` (the file's id is Slack-wide)."""
    message, f = owner.share_file(
        user=PEOPLE[owner.team_id][0],
        channel=channel if channel in owner.channels else next(iter(owner.channels)),
        thread_ts=None,
        name="jib.csv",
        data=b"well_id,amount\nW1,1\n",
    )
    inner: dict[str, Any] = {
        "type": "message",
        "subtype": "file_share",
        "channel": channel,
        "user": user,
        "text": "",
        "ts": message["ts"],
        "files": [{"id": f["id"], "name": "jib.csv"}],
        "upload": True,
        "channel_type": "channel",
        **({"thread_ts": thread} if thread else {}),
    }
    shared = {
        "type": "file_shared",
        "channel_id": channel,
        "file_id": f["id"],
        "user_id": user,
        "file": {"id": f["id"]},
        "event_ts": message["ts"],
    }
    for body in (
        sp.event(inner, event_id=f"EvDropX{n}"),
        sp.event(shared, event_id=f"EvSharedX{n}"),
    ):
        assert harness.dispatch(body, JSON).status == 200
    harness.idle()
    return str(f["id"])


def test_a_file_from_a_dropped_in_b_is_not_read_into_bs_close(hosted: Hosted) -> None:
    run, question, _ = _b_waiting(hosted)
    fa, fb = hosted.host.workspaces["TAAAA"], hosted.host.workspaces["TBBBB"]
    before = everything_shown(fb)
    ledger = Ledger(hosted.store)
    files_before = hosted.store.query("select count(*) as n from imported_files")[0]["n"]
    # A's file, the event sent from B naming it (B's token cannot read A's files) ...
    _drop(hosted.b, fa, user="UBEA", channel="CBFIN", thread=run.thread_ts, n=1)
    # ... and from A, naming B's thread
    _drop(hosted.a, fa, user="UALICE", channel="CBFIN", thread=run.thread_ts, n=2)
    assert hosted.store.query("select count(*) as n from imported_files")[0]["n"] == files_before
    assert not [c for c in fb.calls if c.method == "url_private_download"]
    assert "jib.csv" not in everything_shown(fb).replace(before, "")
    assert (
        ledger.current_batch(run.id) is None
        and hosted.store.questions.get(question).status == "pending"
    )
    _nothing_of_b_in_a(hosted, run)

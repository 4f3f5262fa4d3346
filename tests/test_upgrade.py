"""Upgrading in place: a database written by each earlier release (tests/fixtures/upgrade, made
by that release's own code, see its README) opens with today's code, never posts its posted
period again, finishes its paused and mid-turn runs, and every audit chain verifies."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from bot.close.ledger import AlreadyPostedError, Ledger
from bot.core.decision_log import decision_rows
from bot.core.questions import Question, Response
from bot.sandbox.slack_api import FakeSlack
from bot.store import Store
from tests.cli_run import LOGIN, closebot
from tests.close_helpers import close_run, recommended
from tests.slack_harness import Harness

FIXTURES = Path(__file__).parent / "fixtures" / "upgrade"
# every release whose schema differs; oldest first
RELEASES = ("68fe5b6", "4db486f", "0fd23f4", "5db3991")


@dataclass(frozen=True)
class Old:
    """A release's database, loaded into a real SQLite file, and what is in it."""

    posted: str  # the run that posted October
    paused: str  # the console run waiting on a question
    midturn: str  # the run killed inside a tool call
    slack: str  # the Slack run waiting on its first form
    form: dict[str, Any]  # that form's message, as the release posted it
    posted_batch: str


def load(release: str, path: Path) -> Old:
    key = FIXTURES / f"{release}.auditkey"  # a keyed chain's key lives beside its database
    if key.exists():
        path.with_name(path.name + ".auditkey").write_bytes(key.read_bytes())
        path.with_name(path.name + ".auditkey").chmod(0o600)
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / f"{release}.sql").read_text())
    runs = conn.execute("select id, mode, status from runs").fetchall()
    (batch,) = conn.execute("select id from journal_batches where status = 'posted'").fetchall()
    conn.close()

    def one(mode: str, status: str) -> str:
        (found,) = [r[0] for r in runs if r[1] == mode and r[2] == status]
        return str(found)

    form = json.loads((FIXTURES / f"{release}.form.json").read_text())
    return Old(
        posted=one("console", "done"),
        paused=one("console", "waiting"),
        midturn=one("auto", "running"),
        slack=one("slack", "waiting"),
        form=form,
        posted_batch=str(batch[0]),
    )


def posted_batches(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "select id, period from journal_batches where status = 'posted' order by id"
        ).fetchall()
    finally:
        conn.close()


def assert_chain_intact(run_id: str) -> None:
    verified = closebot("audit", run_id, "--verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "every link intact" in verified.stdout


def assert_transcript_valid(store: Store, run_id: str) -> None:
    """What the Messages API would accept: roles alternate, every tool_use answered once."""
    messages = store.transcript.messages(run_id)
    roles = [m.role for m in messages]
    assert all(a != b for a, b in pairwise(roles)), roles
    for m, after in pairwise(messages):
        uses = [b["id"] for b in m.content if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for b in after.content if b.get("type") == "tool_result"]
        assert sorted(uses) == sorted(results), (m.seq, uses, results)


@pytest.mark.parametrize("release", RELEASES)
def test_every_audit_chain_of_an_earlier_release_verifies(release: str, db_path: Path) -> None:
    old = load(release, db_path)
    for run_id in (old.posted, old.paused, old.midturn, old.slack):
        assert_chain_intact(run_id)


def approve_posting(q: Question) -> Response | None:
    """A person who approves posting whatever the form recommends."""
    if q.header in ("Posting", "Second approval"):
        return Response(selected=(1,))  # "Approve and post"
    return recommended(q)


@pytest.mark.parametrize("release", RELEASES)
def test_a_period_posted_by_an_earlier_release_is_never_posted_again(
    release: str, db_path: Path
) -> None:
    old = load(release, db_path)
    assert posted_batches(db_path) == [(old.posted_batch, "2026-10")]
    store = Store(db_path)
    ledger = Ledger(store)
    assert ledger.posted_batch("2026-10")["id"] == old.posted_batch  # type: ignore[index]

    again = close_run(None, db_path, choose=approve_posting, store=store)
    assert posted_batches(db_path) == [(old.posted_batch, "2026-10")]
    draft = again.batch()
    assert draft["status"] == "draft"
    with pytest.raises(AlreadyPostedError) as refused:
        ledger.post(draft["id"], posted_by="bob", approval_question_id="q")
    assert refused.value.batch_id == old.posted_batch
    assert posted_batches(db_path) == [(old.posted_batch, "2026-10")]
    store.close()
    assert_chain_intact(again.run_id)


@pytest.mark.parametrize("release", RELEASES)
def test_closebot_run_of_a_period_an_earlier_release_posted_says_so(
    release: str, db_path: Path
) -> None:
    old = load(release, db_path)
    ran = closebot("run", "2026-10", "--auto")
    # one close per period (issue 17): said, and exit 2, before any question is asked
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert f"October 2026 is already posted (batch {old.posted_batch}, approved by " in ran.stderr
    assert posted_batches(db_path) == [(old.posted_batch, "2026-10")]


def _typed_recommendations(store: Store, run_id: str) -> str:
    """What a person types at the console to take the pending form's recommendations."""
    record = store.questions.pending(run_id)
    assert record is not None
    lines = []
    for q in record.questions:
        if q.get("type") == "free_text":
            lines.append("Explained in the close file.")
        else:
            lines.append(str(q.get("recommended") or 1))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("release", RELEASES)
def test_a_console_run_paused_by_an_earlier_release_is_answered_and_finishes(
    release: str, db_path: Path
) -> None:
    old = load(release, db_path)
    store = Store(db_path)
    question = store.questions.pending(old.paused)
    assert question is not None
    typed = _typed_recommendations(store, old.paused)
    store.close()

    answered = closebot("resume", old.paused, stdin=typed)  # then input ends at the next form
    assert answered.returncode in (0, 3), answered.stdout + answered.stderr
    store = Store(db_path)
    record = store.questions.get(question.id)
    # recorded under the OS login that answered (console identities are never typed)
    assert (record.status, record.answered_by, record.source) == ("answered", LOGIN, "console")
    store.close()

    finished = closebot("resume", old.paused, "--auto")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    store = Store(db_path)
    assert store.runs.get(old.paused).status == "done"
    assert_transcript_valid(store, old.paused)
    upgraded = {e.detail["id"] for e in store.audit.events(old.paused, kind="exception_upgraded")}
    for e in Ledger(store).exceptions(old.paused):  # every one in today's shape, decided
        assert e["details"]["ref"] == e["id"].removeprefix(f"{old.paused}:")
        assert e["details"]["step"] and e["status"] == "resolved"
        if "legacy" in e["details"]:  # release 68fe5b6's: found again by today's step
            assert "facts" in e["details"] and e["id"] in upgraded
    assert bool(upgraded) == (release == "68fe5b6")
    store.close()
    assert posted_batches(db_path) == [(old.posted_batch, "2026-10")]
    assert_chain_intact(old.paused)


@pytest.mark.parametrize("release", RELEASES)
def test_a_run_an_earlier_release_left_mid_turn_resumes_and_finishes(
    release: str, db_path: Path
) -> None:
    old = load(release, db_path)
    store = Store(db_path)
    last = store.transcript.messages(old.midturn)[-1]
    assert last.role == "assistant" and any(b.get("type") == "tool_use" for b in last.content)
    store.close()

    resumed = closebot("resume", old.midturn, "--auto")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    store = Store(db_path)
    assert store.runs.get(old.midturn).status == "done"
    assert_transcript_valid(store, old.midturn)
    store.close()
    assert posted_batches(db_path) == [(old.posted_batch, "2026-10")]
    assert_chain_intact(old.midturn)


def _restore_thread(fake: FakeSlack, store: Store, old: Old) -> None:
    """Slack still shows the thread the release posted: its root, status message and form."""
    run = store.runs.get(old.slack)
    message = old.form["message"]
    for ts in {run.thread_ts, run.status_ts} - {None}:
        fake.messages[str(ts)] = {
            "type": "message",
            "ts": ts,
            "channel": run.channel,
            "thread_ts": None if ts == run.thread_ts else run.thread_ts,
            "text": "closebot",
            "blocks": [],
            "reactions": [],
            "files": [],
        }
    fake.messages[message["ts"]] = {"reactions": [], "files": [], **message}


@pytest.mark.parametrize("release", RELEASES)
def test_a_slack_run_paused_by_an_earlier_release_is_answered_on_its_old_form(
    release: str, db_path: Path, fake: FakeSlack
) -> None:
    old = load(release, db_path)
    h = Harness(fake, db_path)
    try:
        _restore_thread(fake, h.store, old)
        question_id = old.form["question_id"]
        assert h.store.questions.pending(old.slack).id == question_id  # type: ignore[union-attr]
        form = old.form["message"]
        has_why = any(":w:" in (b.get("block_id") or "") for b in form["blocks"])
        picks = h.recommended_picks(question_id)
        overriding = {**picks, 1: 2 if picks[1] != 2 else 1}  # not what question 1 recommends
        if has_why:  # an override without a reason is refused on a form that asks for one
            h.submit(question_id, overriding, form=form, why=None)
            h.idle()
            assert h.store.questions.get(question_id).status == "pending"
            assert any("Not submitted" in t for t in h.ephemerals_to("UALICE"))
            h.submit(question_id, picks, form=form, why=None)
        else:  # release 68fe5b6's form has no Why box: taken without one, recorded as such
            h.submit(question_id, overriding, form=form, why=None)
        h.idle()
        record = h.store.questions.get(question_id)
        assert (record.status, record.answered_by) == ("answered", "UALICE")
        assert (record.rationale, record.overridden) == (None, 0 if has_why else 1)
        if not has_why:
            (row,) = [
                r
                for r in decision_rows(h.store, old.slack)
                if r["question_id"] == question_id and r["number"] == 1
            ]
            assert row["overridden"] == "yes"
            assert (
                row["rationale"]
                == "(none: answered on a form from an earlier release, which had no Why box)"
            )
        h.finish(old.slack)
        assert h.store.runs.get(old.slack).status == "done"
        assert_transcript_valid(h.store, old.slack)
    finally:
        h.close()
    assert posted_batches(db_path) == [(old.posted_batch, "2026-10")]
    assert_chain_intact(old.slack)


@pytest.mark.parametrize("release", RELEASES)
def test_slash_close_of_a_period_an_earlier_release_posted_never_posts_it_again(
    release: str, db_path: Path, fake: FakeSlack
) -> None:
    old = load(release, db_path)
    h = Harness(fake, db_path)
    try:
        before = {r.id for r in h.store.runs.recent(limit=100)}
        assert h.command("2026-10").status == 200
        h.idle()
        # one close per period (issue 17): the release's runs of October are still live, so
        # the /close points to one of them; none is started, nothing is drafted or posted
        assert fake.wait_for(
            lambda: any("already under way" in (r.get("text") or "") for r in fake.responses),
            timeout=10,
        )
        assert {r.id for r in h.store.runs.recent(limit=100)} == before
        for run_id in (old.paused, old.midturn, old.slack):  # not live any more: posted
            h.store.runs.set_status(run_id, "cancelled")
        assert h.command("2026-10").status == 200
        h.idle()
        assert fake.wait_for(
            lambda: any(
                f"already posted: batch `{old.posted_batch}`" in (r.get("text") or "")
                for r in fake.responses
            ),
            timeout=10,
        )
        assert {r.id for r in h.store.runs.recent(limit=100)} == before
    finally:
        h.close()
    assert posted_batches(db_path) == [(old.posted_batch, "2026-10")]

"""Issue 16 item 6: approvals that hold at the console and in Slack alike — identities compared
canonically, the starter never approves when approvers are set, a console approval is the OS
login's own (a second one comes from another login running `closebot approve RUN`), every
refused attempt is audited, and each overriding answer carries its own "Why"."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.agent_loop import Failed
from bot.close.controls import may_approve
from bot.close.ledger import Ledger
from bot.core.answers import may_steer
from bot.sandbox.slack_api import FakeSlack
from bot.store import Run, Store
from tests.cli_run import LOGIN, ONE, TIMEOUT, closebot, run_id_of
from tests.close_helpers import close_run
from tests.slack_harness import Harness

REPO = Path(__file__).resolve().parent.parent
OTHER_LOGIN = "nobody"
KEY = "a-key-every-login-of-this-test-shares"  # a second OS login, present on Debian and in CI's image
# every recommendation at the console, the flux item of the draft explained, through the first
# approval and the second approval
TO_SECOND = "5\n3\n1\n1\n1\n3\n2\n1\n3\n1\n1\n1\n"
# ... through the first approval only (to its Posting form's answer)
TO_FIRST = "5\n3\n1\n1\n1\n3\n2\n1\n3\n1\n1\n"
AFTER_POSTING = "1\n\n"  # the sign-off, its owners and due dates as shown


def _run(started_by: str) -> Run:
    return Run(
        id="r",
        period="2026-10",
        mode="console",
        status="waiting",
        started_by=started_by,
        channel=None,
        thread_ts=None,
        model=None,
        steps={},
        error=None,
        created_at="",
        updated_at="",
    )


def test_identities_are_compared_case_folded() -> None:
    run = _run("alice")
    approvers = frozenset({"ALICE", "Bob"})
    # the starter under another case is still the starter, for either approval
    assert "segregation of duties" in (may_approve("ALICE", run, approvers) or "")
    assert "segregation of duties" in (may_approve(" Alice ", run, approvers, first="bob") or "")
    # 'BOB' is the approver Bob, and the same person as a first approval by 'bob'
    assert may_approve("BOB", run, approvers) is None
    assert "different approver than the first" in (
        may_approve("BOB", run, approvers, first="bob") or ""
    )
    assert may_steer(run, "ALICE", frozenset()) and may_steer(run, "bob", approvers)
    assert not may_steer(run, "", approvers) and not may_steer(run, "carol", approvers)
    # without approvers the starter self-approves, under any case; a second approver differs
    assert may_approve("Alice", run, frozenset()) is None
    assert "only alice" in (may_approve("carol", run, frozenset()) or "")
    assert "different approver" in (may_approve("ALICE", run, frozenset(), first="alice") or "")


def test_the_posting_tool_refuses_a_case_variant_of_the_starter_or_of_the_first_approver(
    db_path: Path,
) -> None:
    env = {"CLOSEBOT_CONSOLE_APPROVERS": "alice,bob,carol"}
    starter = close_run(None, db_path, user="alice", first_approver="ALICE", env=env)
    assert isinstance(starter.outcome, Failed) and "segregation of duties" in starter.outcome.error
    assert starter.batch()["status"] == "draft"
    twice = close_run(
        None, db_path.with_name("twice.db"), first_approver="bob", second_approver="BOB", env=env
    )
    assert isinstance(twice.outcome, Failed)
    assert "different approver than the first (bob)" in twice.outcome.error
    assert twice.batch()["status"] == "draft"
    both = close_run(
        None, db_path.with_name("both.db"), first_approver="Bob", second_approver="carol", env=env
    )
    assert both.batch()["status"] == "posted" and both.batch()["posted_by"] == "Bob"
    refusals = starter.store.audit.events(starter.run_id, kind="posting_refused")
    assert refusals and refusals[0].actor == "ALICE"


def test_in_slack_the_starter_gives_neither_approval_even_as_an_approver(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path, CLOSEBOT_APPROVERS="UAPPROVER,UAPPROVER2,UAPPROVER3")
    try:
        run = bot.start(user="UAPPROVER")
        approval = bot.answer_until(run.id, "Posting", user="UAPPROVER")
        bot.submit(approval, {1: 1}, user="UAPPROVER")  # the starter, although an approver
        bot.idle()
        assert bot.store.questions.get(approval).status == "pending"
        bot.submit(approval, {1: 1}, user="UAPPROVER2")
        bot.idle()
        second = bot.pending(run.id)
        assert bot.store.questions.get(second).questions[0]["header"] == "Second approval"
        bot.submit(second, {1: 1}, user="UAPPROVER")  # the starter again, for the second one
        bot.idle()
        assert bot.store.questions.get(second).status == "pending"
        notices = [n for n in bot.ephemerals_to("UAPPROVER") if "you started this close" in n]
        assert len(notices) == 2 and "give the second approval" in notices[1]
        refused = bot.store.audit.events(run.id, kind="answer_refused")
        assert [(e.actor, e.detail["question_id"]) for e in refused] == [
            ("UAPPROVER", approval),
            ("UAPPROVER", second),
        ]
        bot.submit(second, {1: 1}, user="UAPPROVER3")
        bot.idle()
        bot.finish(run.id, user="UAPPROVER")
        batch = Ledger(bot.store).current_batch(run.id)
        assert batch is not None and batch["status"] == "posted"
        posted = bot.store.audit.events(run.id, kind="journal_posted")[0]
        assert (posted.actor, posted.detail["second_approver"]) == ("UAPPROVER2", "UAPPROVER3")
    finally:
        bot.close()


def test_a_console_second_approval_from_the_same_login_is_refused_and_audited(
    db_path: Path,
) -> None:
    # what used to be typed as the second approver's name is now just a bad choice, re-asked
    stdin = TO_FIRST + "Workover: Carter rod pump (2026-09)\n1\n\n"
    done = closebot("run", "2026-10", stdin=stdin)
    assert done.returncode == 3, done.stdout[-2000:]
    run_id = run_id_of(done.stdout)
    assert (
        f"Not approved: The second approval must come from a different approver than the first ({LOGIN})"
        in done.stdout
    )
    assert f"closebot approve {run_id}" in done.stdout
    store = Store(db_path)
    second = store.questions.pending(run_id)
    assert second is not None and second.questions[0]["header"] == "Second approval"
    refused = store.audit.events(run_id, kind="answer_refused")
    assert [(e.actor, e.detail["question_id"], e.detail["channel"]) for e in refused] == [
        (LOGIN, second.id, "console")
    ]
    # the same login through the documented command: refused before any form, and audited
    again = closebot("approve", run_id, stdin="1\n")
    assert again.returncode == 1 and f"{LOGIN} may not give this approval" in again.stderr
    assert [e.actor for e in store.audit.events(run_id, kind="approve_refused")] == [LOGIN]
    assert store.questions.get(second.id).status == "pending"
    assert Ledger(store).current_batch(run_id)["status"] == "draft"
    assert not any("Workover" in (q.answered_by or "") for q in store.questions.of_run(run_id))


@pytest.fixture
def shared_db(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A database in a folder another OS login can write (pytest's own tmp is the owner's),
    its audit key in the environment of every process of the test (a key file is 0600)."""
    monkeypatch.setenv("CLOSEBOT_AUDIT_KEY", KEY)
    if os.geteuid() != 0:
        pytest.skip("running closebot as a second OS login needs root (CI runs as root)")
    folder = Path(tempfile.mkdtemp(prefix="closebot-shared-"))
    folder.chmod(0o777)
    try:
        yield folder / "closebot.db"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# The interpreter may live where only root can read it (pyenv under /root), so the process
# starts as root, loads closebot, then drops to the other login for good before doing anything:
# from then on it is that user to the kernel, and to closebot's os_login().
AS_LOGIN = (
    "import os, pwd, sys, encodings.utf_8_sig; import bot.console.cli as cli; u = pwd.getpwnam(sys.argv[1]); "
    "os.setgroups([]); os.setgid(u.pw_gid); os.setuid(u.pw_uid); sys.exit(cli.main(sys.argv[2:]))"
)


def as_other_login(db: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> Any:
    """`closebot ARGS` run by the OS login OTHER_LOGIN on the same database."""
    for f in db.parent.iterdir():
        if not f.name.endswith(".auditkey"):  # the key stays its owner's
            f.chmod(0o666)
    return subprocess.run(
        [sys.executable, "-c", AS_LOGIN, OTHER_LOGIN, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        env={**os.environ, "CLOSEBOT_DB": str(db), **(env or {})},
    )


def test_a_second_login_gives_the_second_approval_with_closebot_approve(shared_db: Path) -> None:
    env = {"CLOSEBOT_DB": str(shared_db), "CLOSEBOT_AUDIT_KEY": KEY}
    first = closebot("run", "2026-10", stdin=TO_FIRST, env=env)
    assert first.returncode == 3  # input ended at the second approval, which waits
    run_id = run_id_of(first.stdout)
    # without the key the other login is told, and changes nothing
    unkeyed = as_other_login(
        shared_db, "approve", run_id, stdin="1\n", env={"CLOSEBOT_AUDIT_KEY": ""}
    )
    assert unkeyed.returncode == 2 and "keyed with another key" in unkeyed.stderr
    approved = as_other_login(shared_db, "approve", run_id, stdin="1\n", env=env)
    assert approved.returncode == 0, approved.stdout[-2000:] + approved.stderr
    assert f"approving as {OTHER_LOGIN}" in approved.stdout
    assert "The run now waits on" in approved.stdout and f"closebot resume {run_id}" in (
        approved.stdout
    )
    store = Store(shared_db)
    posted = store.audit.events(run_id, kind="journal_posted")[0]
    assert (posted.actor, posted.detail["second_approver"]) == (LOGIN, OTHER_LOGIN)
    second = next(
        q for q in store.questions.of_run(run_id) if q.questions[0]["header"] == "Second approval"
    )
    evidence = next(
        e
        for e in store.audit.events(run_id, kind="question_answered")
        if e.detail["question_id"] == second.id
    )
    assert evidence.detail["os_login"] == OTHER_LOGIN and second.answered_by == OTHER_LOGIN
    rest = closebot("resume", run_id, stdin=AFTER_POSTING, env=env)
    assert rest.returncode == 0, rest.stdout[-2000:]
    assert store.runs.get(run_id).status == "done"


def test_with_approvers_set_the_console_posts_through_an_approvers_login(shared_db: Path) -> None:
    env = {
        "CLOSEBOT_DB": str(shared_db),
        "CLOSEBOT_CONSOLE_APPROVERS": OTHER_LOGIN,
        "CLOSEBOT_AUDIT_KEY": KEY,
        **ONE,
    }
    first = closebot("run", "2026-10", stdin=TO_FIRST, env=env)
    assert first.returncode == 3
    assert "Not approved: Segregation of duties: you started this close" in first.stdout
    run_id = run_id_of(first.stdout)
    store = Store(shared_db)
    assert [e.actor for e in store.audit.events(run_id, kind="answer_refused")] == [LOGIN]
    approved = as_other_login(shared_db, "approve", run_id, stdin="1\n", env=env)
    assert approved.returncode == 0, approved.stdout[-2000:] + approved.stderr
    batch = Ledger(store).current_batch(run_id)
    assert batch is not None and (batch["status"], batch["posted_by"]) == ("posted", OTHER_LOGIN)
    rest = closebot("resume", run_id, stdin=AFTER_POSTING, env=env)
    assert rest.returncode == 0 and store.runs.get(run_id).status == "done"


def _two_recommended() -> Any:
    from bot.core.questions import parse_ask

    return parse_ask(
        {
            "context": "Two decisions",
            "questions": [
                {"question": "AFE?", "options": ["Protest", "Pay"], "recommended": 1},
                {"question": "Overhead?", "options": ["Dispute", "Pay"], "recommended": 1},
            ],
        }
    )


def test_each_override_needs_a_why_and_keeps_it() -> None:
    from bot import blocks
    from bot.core.errors import AnswerError
    from bot.core.questions import Response, question_whys, rationale_text

    ask = _two_recommended()
    both = {1: Response(selected=(2,)), 2: Response(selected=(2,))}
    # issue 30: a card has one "Why" box, so its text answers for every override on it
    assert question_whys(ask, both, "one reason for two decisions") == {
        1: "one reason for two decisions",
        2: "one reason for two decisions",
    }
    with pytest.raises(AnswerError, match="question 2: Pay over the recommended Dispute"):
        question_whys(ask, both, {1: "AFE approved late"})
    with pytest.raises(AnswerError, match="say why in 'Why'"):
        question_whys(ask, both, None)
    whys = question_whys(ask, both, {1: "AFE approved late", 2: "JOA amended"})
    assert whys == {1: "AFE approved late", 2: "JOA amended"}
    assert rationale_text(ask, whys) == "Question 1: AFE approved late\nQuestion 2: JOA amended"
    # one override: the form's own box answers for it, and only for it
    one = {1: Response(selected=(1,)), 2: Response(selected=(2,))}
    assert question_whys(ask, one, "JOA amended") == {2: "JOA amended"}
    # the Slack card gives the form one "Why", required only for an override (shown once an
    # override is chosen: blocks/boxes.py)
    form = blocks.question_form(
        ask, question_id="q", who_may_answer="x", nonce="n", picks={1: "2", 2: "2"}
    )
    ids = [blocks.parse_block_id(b.get("block_id", "")) for b in form]
    assert ids.count(("w", 0)) == 1 and ("w", 1) not in ids and ("w", 2) not in ids
    (why,) = [b for b in form if blocks.parse_block_id(b.get("block_id", "")) == ("w", 0)]
    assert "required" in why["label"]["text"]


def test_at_the_console_each_overriding_answer_is_logged_with_its_own_why(db_path: Path) -> None:
    # the first four forms as recommended (Intake, WI/NRI, effective date, Smith underpaid); then
    # the AFE and overhead form with both overridden, a reason for each
    done = closebot(
        "run",
        "2026-10",
        stdin="5\n3\n1\n1\n1\n1\n1\nAFE approved after the fact\nCaprock JOA amendment\n"
        + "1\nok\n" * 12,
    )
    run_id = run_id_of(done.stdout)
    assert "Why, for question 1?" in done.stdout and "Why, for question 2?" in done.stdout
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(closebot("audit", run_id, "--csv").stdout)))
    afe = next(r for r in rows if r["header"].startswith("AFE overrun"))
    overhead = next(r for r in rows if r["header"].startswith("Overhead vs JOA"))
    assert (afe["overridden"], afe["rationale"]) == ("yes", "AFE approved after the fact")
    assert (overhead["overridden"], overhead["rationale"]) == ("yes", "Caprock JOA amendment")
    store = Store(db_path)
    record = next(q for q in store.questions.of_run(run_id) if q.id == afe["question_id"])
    assert record.answer is not None
    assert [record.answer[n].get("why") for n in ("1", "2")] == [
        "AFE approved after the fact",
        "Caprock JOA amendment",
    ]
    answered = next(
        e
        for e in store.audit.events(run_id, kind="question_answered")
        if e.detail["question_id"] == record.id
    )
    assert answered.detail["answer"]["2"]["why"] == "Caprock JOA amendment"

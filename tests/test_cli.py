"""The closebot command as a user runs it: real subprocesses, real stdin, a real SQLite file."""

from __future__ import annotations

import csv
import io
import os
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bot.console.presenter import EXIT_FAILED, AutoAnswerer, drive
from bot.store import Store
from tests.cli_run import LOGIN, ONE, ONE_APPROVAL, TIMEOUT, closebot, run_id_of
from tests.conftest import ScriptedModel, ask_input, scripted_loop, tool_use


def test_yes_1_piped_finishes_a_close_with_a_summary_and_balanced_posted_entries() -> None:
    done = subprocess.run(
        f"yes 1 | {sys.executable} -m bot run 2026-10",
        shell=True,
        env={**os.environ, ONE_APPROVAL: "5000000"},  # one approval posts (self-approved)
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Month-end close · October 2026 · run" in out and "offline playbook" in out
    assert (
        "Smith 14-2H (TX, Permian Ridge Operating LLC), DOI WI 0.25000000 / NRI 0.20000000" in out
    )
    assert "bills WI 0.27500000" in out and "pays NRI 0.22000000" in out
    assert "1. Accept operator's decimal, update DOI  ★ recommended" in out
    for step in (
        "Intake",
        "WI/NRI validation",
        "Revenue accrual",
        "Severance check",
        "Flux review",
        "Sign-off",
    ):
        assert f"✓ {step}: done" in out
    assert "Why recommended: Both operator documents agree" in out
    assert "Month-end close · October 2026 — finished" in out
    m = re.search(
        rf"Journal batch (JE-2026-10-[\w-]+) \(posted by {LOGIN}\): debits (\$[\d,.]+) = credits (\$[\d,.]+)",
        out,
    )
    assert m and m.group(2) == m.group(3)
    assert "Traceback" not in done.stderr


def test_auto_mode_finishes_and_logs_every_answer_as_auto_default(db_path: Path) -> None:
    done = closebot("run", "2026-10", "--auto")
    assert done.returncode == 0, done.stderr
    assert (
        "auto: question 2 → Accept operator's decimal, update DOI (the recommendation, applied by default)"
        in done.stdout
    )
    assert "Not posted: the approval was applied by default" in done.stdout
    assert "draft, not posted" in done.stdout
    audit = closebot("audit", run_id_of(done.stdout), "--csv")
    rows = list(csv.DictReader(io.StringIO(audit.stdout)))
    answers = [r["answer"] for r in rows]
    assert "Accept operator's decimal, update DOI" in answers and "Approve and post" in answers
    assert "Book at DOI, short-pay and dispute" in answers and "Claim a refund" in answers
    assert {r["source"] for r in rows} == {"auto_default"} and {r["answered_by"] for r in rows} == {
        "auto"
    }


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ("run", "2026-13"),
            {},
            "closebot: error: '2026-13' is not an accounting period; write it as YYYY-MM, e.g. 2026-10",
        ),
        (("run", "2026-09"), {}, "closebot: error: no close data for 2026-09"),
        (
            ("run",),
            {"CLOSEBOT_DB": "/no/such/dir/closebot.db"},
            "closebot: error: CLOSEBOT_DB=/no/such/dir/closebot.db: the directory /no/such/dir does not exist",
        ),
        (
            ("run",),
            {"CLOSEBOT_APPROVERS": "U123,bob"},
            "closebot: error: CLOSEBOT_APPROVERS: 'bob' is not a Slack user id",
        ),
        (
            ("run",),
            {"CLOSEBOT_MAX_STEPS": "lots"},
            "closebot: error: CLOSEBOT_MAX_STEPS='lots' must be a whole number",
        ),
        (("audit", "nope"), {}, "closebot: error: no run with id 'nope'"),
        (("run", "--bogus"), {}, "closebot: error: unrecognized arguments: --bogus"),
    ],
)
def test_bad_input_gets_one_clear_line_and_changes_nothing(
    db_path: Path, args: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    done = closebot(*args, env=env)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("closebot: error")]
    assert len(errors) == 1 and errors[0].startswith(message), done.stderr
    if db_path.exists():
        assert Store(db_path).runs.recent() == []


@pytest.mark.sqlite_only("a file that is not an SQLite database")
def test_a_file_that_is_not_a_database_is_refused_clearly(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("this is not sqlite " * 100)
    done = closebot("runs", env={"CLOSEBOT_DB": str(bogus)})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"closebot: error: cannot use {bogus} as closebot's database" in done.stderr


def test_malformed_answers_are_re_asked_with_the_reason() -> None:
    done = closebot("run", "2026-10", stdin="9\nabc\n1,2\n5\nother:\n2\n")
    assert done.returncode == 3, done.stdout[-2000:]
    assert "9 is not an option (1–5)" in done.stdout
    assert (
        "✗ 'abc' is not an option; type one number from 1 to 5 or 'other: your answer'"
        in done.stdout
    )
    assert "takes one choice, got 2" in done.stdout
    assert "✗ type your answer after 'other:'" in done.stdout
    assert "Continue with: closebot resume" in done.stdout


def test_cancel_puts_the_form_off_the_run_waits_and_resume_brings_it_back(db_path: Path) -> None:
    first = closebot("run", "2026-10", stdin="cancel\n" + "1\n" * 60, env=ONE)
    assert first.returncode == 3, first.stdout  # waiting, not finished, not failed
    run_id = run_id_of(first.stdout)
    assert "Put off (not now): the close goes on without it" in first.stdout
    assert "the close waits on 1 question you put off (Intake" in first.stdout
    assert f"Bring them back with: closebot resume {run_id}" in first.stdout
    store = Store(db_path)
    run = store.runs.get(run_id)
    assert run.status == "waiting" and run.steps.get("Journal entries", "pending") == "pending"
    # the close went on: the JIB step after the put-off form ran and asked its questions
    assert run.steps["JIB reconciliation & LOE accrual"] == "done"
    store.close()
    second = closebot("resume", run_id, stdin="1\n" * 60, env=ONE)
    assert second.returncode == 0, second.stdout
    assert "Bringing back a question you put off." in second.stdout
    store = Store(db_path)
    assert store.runs.get(run_id).status == "done"
    assert [q.status for q in store.questions.of_run(run_id)].count("deferred") == 0
    store.close()


def test_input_ending_mid_question_pauses_and_resume_finishes(db_path: Path) -> None:
    first = closebot("run", "2026-10", stdin="1\n")
    assert first.returncode == 3
    run_id = run_id_of(first.stdout)
    assert f"Continue with: closebot resume {run_id}" in first.stdout
    assert Store(db_path).runs.get(run_id).status == "waiting"
    second = closebot("resume", run_id, stdin="5\n3\n1\n" + "1\n" * 30, env=ONE)
    assert second.returncode == 0, second.stdout
    assert f"Book at DOI, short-pay and dispute — decided by {LOGIN}" in second.stdout
    assert Store(db_path).runs.get(run_id).status == "done"


def _read_until(
    proc: subprocess.Popen[str], lines: queue.Queue[str], pattern: str, deadline: float
) -> str:
    seen = ""
    while time.monotonic() < deadline:
        try:
            seen += lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if seen.endswith(pattern):
            return seen
    raise AssertionError(f"{pattern!r} never appeared; got: {seen[-1500:]}")


@pytest.mark.sqlite_only("reads the file with sqlite3 after the processes")
def test_resume_after_the_process_was_killed_with_a_question_pending(db_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "2026-10"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None

    def pump() -> None:
        assert proc.stdout is not None
        while chunk := proc.stdout.read(1):
            lines.put(chunk)

    threading.Thread(target=pump, daemon=True).start()
    seen = _read_until(proc, lines, "Choice [1-5] ('other: …'): ", time.monotonic() + TIMEOUT)
    run_id = run_id_of(seen)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=TIMEOUT)
    assert Store(db_path).questions.pending(run_id) is not None

    resumed = closebot("resume", run_id, stdin="5\n2\n3\n" + "1\n" * 30, env=ONE)
    assert resumed.returncode == 0, resumed.stdout
    assert f"Book at DOI, short-pay and dispute — decided by {LOGIN}" in resumed.stdout
    with sqlite3.connect(db_path) as conn:
        loads = conn.execute(
            "select count(*) from tool_calls where run_id = ? and name = 'load_period'", (run_id,)
        ).fetchone()[0]
        asked = conn.execute(
            "select count(*) from questions where run_id = ?", (run_id,)
        ).fetchone()[0]
    assert loads == 1 and asked >= 2  # nothing ran twice
    with sqlite3.connect(db_path) as conn:
        forms = conn.execute(
            "select questions from questions where run_id = ? order by rowid", (run_id,)
        ).fetchall()
    assert len(forms) == len({f[0] for f in forms})  # and no form was asked twice


def test_audit_prints_question_answer_who_when_and_how(db_path: Path) -> None:
    done = closebot("run", "2026-10", stdin="5\n" + "1\n" * 30, env=ONE)
    run_id = run_id_of(done.stdout)
    audit = closebot("audit", run_id)
    assert audit.returncode == 0
    assert "→ Accept operator's decimal, update DOI" in audit.stdout
    assert "→ Approve and post" in audit.stdout
    assert re.search(rf"by {LOGIN} at 20\d\d-\d\d-\d\dT[\d:.]+\+00:00 via console", audit.stdout)
    entries = closebot("entries", run_id, "--csv")
    rows = list(csv.DictReader(io.StringIO(entries.stdout)))
    assert sum(float(r["debit"]) for r in rows) == pytest.approx(
        sum(float(r["credit"]) for r in rows)
    )
    assert {r["account"] for r in rows} >= {"1050", "2110", "6210", "4010"}


def test_auto_mode_ends_the_run_naming_a_required_question_with_no_default(store: Store) -> None:
    model = ScriptedModel()
    model.enqueue(
        tool_use(
            "q",
            "ask_user_question",
            **ask_input({"question": "Which bank account?", "options": ["Main", "Payroll"]}),
        )
    )
    loop, _ = scripted_loop(store, model)
    run = store.runs.create(period="2026-10", mode="auto", started_by="alice", model="scripted")
    out = io.StringIO()
    code = drive(
        loop,
        store,
        run.id,
        loop.start(run.id, "go"),
        answerer=AutoAnswerer(out),
        user="auto",
        out=out,
    )
    assert code == EXIT_FAILED
    assert (
        "auto mode cannot answer: question 1 ('Which bank account?') is required and has no recommended answer"
        in out.getvalue()
    )
    assert (
        store.runs.get(run.id).status == "failed" and store.questions.get("q").status == "cancelled"
    )


def test_console_takes_multi_select_skips_optional_and_free_text(store: Store) -> None:
    from bot.console.presenter import ConsoleAnswerer

    model = ScriptedModel()
    questions = [
        {
            "question": "Which checks?",
            "type": "multiple_choice",
            "options": ["Line math", "Duplicates", "AFE overruns"],
        },
        {"question": "Which reviewer?", "options": ["Dana", "Eli"], "required": False},
        {"question": "Anything for the log?", "type": "free_text"},
    ]
    model.enqueue(tool_use("q", "ask_user_question", **ask_input(*questions)))
    model.enqueue({"type": "text", "text": "ok"})
    loop, _ = scripted_loop(store, model)
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="scripted")
    out = io.StringIO()
    answerer = ConsoleAnswerer(stdin=io.StringIO("1,4\n1,3\n\n\nsee memo 14\n"), out=out)
    code = drive(
        loop, store, run.id, loop.start(run.id, "go"), answerer=answerer, user="alice", out=out
    )
    assert code == 0
    assert "✗ question 1 (Which checks?): 4 is not an option (1–3)" in out.getvalue()
    assert "✗ question 3 (Anything for the log?) is required" in out.getvalue()
    assert store.questions.get("q").answer == {
        "1": {
            "question": "Which checks?",
            "selected": [1, 3],
            "labels": ["Line math", "AFE overruns"],
        },
        "2": {"question": "Which reviewer?", "skipped": True},
        "3": {"question": "Anything for the log?", "text": "see memo 14"},
    }
    assert "Question 2/3 [optional]" in out.getvalue()
    assert "Choice [1-2] (Enter to skip)" in out.getvalue()


def test_change_lists_the_decisions_and_a_change_redrafts_for_a_new_approval(
    db_path: Path,
) -> None:
    env = {"CLOSEBOT_CONSOLE_APPROVERS": "nobody", **ONE}
    # every recommendation, through the posting form, which this login may not approve
    first = closebot("run", "2026-10", stdin="5\n3\n1\n1\n1\n3\n2\n1\n3\n1\n", env=env)
    assert first.returncode == 3, first.stdout[-2000:]
    run_id = run_id_of(first.stdout)
    store = Store(db_path)
    from bot.close.ledger import Ledger

    old = Ledger(store).current_batch(run_id)
    assert old is not None
    listed = closebot("change", run_id, env=env)
    assert listed.returncode == 0
    assert (
        "Decisions of run" in listed.stdout
        and "  2. Baker 3-1H: Book at DOI, short-pay" in listed.stdout
    )
    bad = closebot("change", run_id, "99", env=env)
    assert bad.returncode == 2 and "not a decision's number" in bad.stderr
    # Baker: the recommended short-pay becomes suspense (option 4), with its reason
    changed = closebot(
        "change", run_id, "2", stdin="4\nthe operator confirmed the interest\n1\n", env=env
    )
    assert changed.returncode == 3, changed.stdout[-2000:]  # the new approval waits on an approver
    assert "The pending posting approval is withdrawn" in changed.stdout
    new = Ledger(store).current_batch(run_id)
    assert new is not None and new["id"] != old["id"] and new["status"] == "draft"
    assert Ledger(store).batch(old["id"])["status"] == "superseded"
    (event,) = store.audit.events(run_id, kind="decision_changed")
    assert (event.actor, event.detail["was"]["option"], event.detail["option"]) == (
        LOGIN,
        "short_pay",
        "suspense",
    )
    pending = store.questions.pending(run_id)
    assert pending is not None and new["id"] in pending.questions[0]["question"]
    store.close()


def test_console_keeps_or_sets_owners_and_due_dates_item_by_item(store: Store) -> None:
    """At the console an owner is a Slack id or an OS login (an assignment, not an identity: a
    typed name is refused), Enter keeps the recommended one; '1' keeps them all."""
    from bot.console.presenter import ConsoleAnswerer

    rows = [
        {"question": "1. dispute $28.13 · owner", "type": "user", "initial": "alice"},
        {"question": "1. due date", "type": "date", "initial": "2026-11-15"},
        {"question": "2. claim $718.13 · owner", "type": "user", "initial": "alice"},
        {"question": "2. due date", "type": "date", "initial": "2026-11-15"},
    ]
    decision = {"question": "Sign off?", "options": ["Carry forward", "Block"], "recommended": 1}
    cases = (
        # item by item: a typed name refused, then a login; a bad date refused; Enter keeps
        (
            "1\n2\nBen Ortiz\nbob\n2026-11-31\n2026-11-30\nUDANA\n\n",
            {"2": "bob", "3": "2026-11-30", "4": "UDANA", "5": "2026-11-15"},
        ),
        ("1\n1\n", {"2": "alice", "3": "2026-11-15", "4": "alice", "5": "2026-11-15"}),
    )
    for n, (typed, expected) in enumerate(cases):
        model = ScriptedModel()
        model.enqueue(tool_use(f"q{n}", "ask_user_question", **ask_input(decision, *rows)))
        model.enqueue({"type": "text", "text": "ok"})
        loop, _ = scripted_loop(store, model)
        run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="s")
        out = io.StringIO()
        answerer = ConsoleAnswerer(stdin=io.StringIO(typed), out=out)
        code = drive(
            loop, store, run.id, loop.start(run.id, "go"), answerer=answerer, user="alice", out=out
        )
        assert code == 0, out.getvalue()
        answer = store.questions.get(f"q{n}").answer or {}
        got = {k: v.get("user") or v.get("date") for k, v in answer.items() if k != "1"}
        assert got == expected
        shown = out.getvalue()
        assert "Please answer 1 question, then 2 owners with due dates" in shown
        if typed.startswith("1\n2\n"):
            assert "'Ben Ortiz' is not a Slack user id (U…) or a login" in shown
            assert "'2026-11-31' is not a date" in shown

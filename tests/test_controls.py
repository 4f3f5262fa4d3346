"""Issue 8: controls an auditor accepts — approvals bound to what was approved, separated
duties, a second approver over the limit, decisions bound to answers, defaults that never
judge, and evidence that shows tampering."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from bot.agent_loop import AgentLoop, Failed
from bot.close.ledger import Ledger
from bot.close.prompts import SYSTEM_PROMPT
from bot.close.steps import books_steps
from bot.close.toolset import CloseTools
from bot.core.decision_log import DECISION_COLUMNS
from bot.core.questions import Question, Response, answer_payload
from bot.sandbox.slack_api import FakeSlack
from bot.slack.blocks import period as period_blocks
from bot.store import Store
from tests.cli_run import LOGIN, ONE, closebot, run_id_of
from tests.close_helpers import Recorder, choose_label, close_run, recommended
from tests.conftest import ScriptedModel, tool_use
from tests.slack_harness import Harness

# every recommendation at the console, one approval (no entry over the limit), the flux explained
ONE_POSTER = "5\n3\n1\n1\n1\n3\n2\n1\n3\n1\n1\n1\n\n"


def blocks_text(message: dict[str, Any]) -> str:
    return json.dumps(message["blocks"], ensure_ascii=False)


def scripted(store: Store, model: ScriptedModel, **kw: Any) -> AgentLoop:
    tools = CloseTools(**kw)
    return AgentLoop(
        store=store,
        model=model,
        tools=tools.registry(),
        presenter=Recorder(),
        system_prompt=SYSTEM_PROMPT,
    )


def answer(
    store: Store,
    question_id: str,
    picks: dict[int, int],
    *,
    by: str = "alice",
    source: str = "console",
) -> None:
    from bot.agent_loop import ask_of

    ask = ask_of(store.questions.get(question_id))
    responses = {n: Response(selected=(choice,)) for n, choice in picks.items()}
    store.questions.claim(
        question_id, answer=answer_payload(ask, responses), answered_by=by, source=source
    )


def test_a_decision_that_contradicts_the_persons_answer_is_refused_and_nothing_recorded(
    store: Store,
) -> None:
    """The person chose short-pay for Baker; the model tries to record 'accept' — and a decision
    for Smith on a question that never named Smith."""
    model = ScriptedModel()
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="scripted")
    model.enqueue(tool_use("t1", "validate_interests", period="2026-10"))
    loop = scripted(store, model)
    details_call = tool_use("t2", "exception_details", exception_id="wi_nri:W-OK-001")
    model.enqueue(details_call)
    model.enqueue({"type": "text", "text": "asking"})
    loop.start(run.id, "go")
    question = json.loads(store.transcript.tool_result("t2").content)["question"]  # type: ignore[union-attr]
    model.enqueue(tool_use("q1", "ask_user_question", context="Baker", questions=[question]))
    model.enqueue(
        tool_use(
            "r1",
            "resolve_exception",
            exception_id="wi_nri:W-OK-001",
            option="accept",
            question_id="q1",
        ),
        tool_use(
            "r2",
            "resolve_exception",
            exception_id="wi_nri:W-TX-001",
            option="accept",
            question_id="q1",
        ),
    )
    model.enqueue({"type": "text", "text": "done"})
    loop.say(run.id, "ask")
    answer(store, "q1", {1: 3})  # Book at DOI, short-pay and dispute
    loop.advance(run.id)
    r1, r2 = store.transcript.tool_result("r1"), store.transcript.tool_result("r2")
    assert (
        r1 is not None
        and r1.is_error
        and "alice chose Book at DOI, short-pay and dispute" in r1.content
    )
    assert r2 is not None and r2.is_error and "did not ask about wi_nri:W-TX-001" in r2.content
    ledger = Ledger(store)
    assert ledger.exception(f"{run.id}:wi_nri:W-OK-001")["status"] == "open"
    assert ledger.exception(f"{run.id}:wi_nri:W-TX-001")["status"] == "open"
    assert not store.audit.events(run.id, kind="exception_resolved")


def test_a_redraft_after_approval_is_refused_at_posting(db_path: Path) -> None:
    run = close_run(None, db_path)
    ledger = run.ledger
    approved = ledger.current_batch(run.run_id)
    store = run.store
    # a second run of the same close drafts again: a new id, and the old approval does not carry
    posted = ledger.batch(approved["id"])
    assert posted["status"] == "posted"
    from bot.core.tools import ToolContext, ToolError

    tools = CloseTools()
    ctx = ToolContext(run_id=run.run_id, store=store)
    store.db.execute("update journal_batches set status = 'draft' where id = ?", (posted["id"],))
    store.db.execute("delete from period_posts")
    redraft = tools.tool("build_journal_entries")(ctx, "2026-10")
    assert redraft["batch_id"] != approved["id"]
    approval = next(
        q for q in store.questions.of_run(run.run_id) if q.questions[0].get("header") == "Posting"
    )
    second = next(
        q
        for q in store.questions.of_run(run.run_id)
        if q.questions[0].get("header") == "Second approval"
    )
    with pytest.raises(ToolError, match="does not ask about batch"):
        tools.tool("post_journal_entries")(ctx, redraft["batch_id"], approval.id, second.id)
    with pytest.raises(ToolError, match="a later draft replaced it"):
        tools.tool("post_journal_entries")(ctx, approved["id"], approval.id, second.id)
    # and a line changed under an approved batch is caught by its content hash
    store.db.execute(
        "update journal_batches set status = 'draft' where id = ?", (redraft["batch_id"],)
    )
    store.db.execute(
        "update journal_lines set debit = '1.00' where batch_id = ? and line_no = 1 and entry_no = 1",
        (redraft["batch_id"],),
    )
    with pytest.raises(ToolError, match="lines changed after it was drafted"):
        tools.tool("post_journal_entries")(ctx, redraft["batch_id"], approval.id, second.id)


def test_posting_refuses_a_draft_older_than_a_decision_that_books(db_path: Path) -> None:
    """A decision recorded after the batch was drafted (a flux adjustment, say) books an entry
    the draft does not hold: its approval cannot cover it, so posting refuses until a redraft."""
    from bot.core.tools import ToolContext, ToolError

    def keep_draft(q: Question) -> Response | None:
        return Response(selected=(2,)) if q.header == "Posting" else recommended(q)

    limit = {"CLOSEBOT_APPROVAL_LIMIT": "5000000"}
    run = close_run(None, db_path, choose=keep_draft, env=limit)
    store, ledger = run.store, run.ledger
    draft = ledger.current_batch(run.run_id)
    assert draft is not None and draft["status"] == "draft"
    approval = next(
        q for q in store.questions.of_run(run.run_id) if q.questions[0].get("header") == "Posting"
    )
    approved = {"1": {"labels": ["Approve and post"]}}  # as if bob had approved this draft
    store.db.execute(
        "update questions set answer = ?, answered_by = 'bob' where id = ?",
        (json.dumps(approved), approval.id),
    )
    exc = f"{run.run_id}:afe_overrun:AFE-ABO-2025-014"
    ledger.decide(  # decided again after the draft: short-pay books Dr 2110 / Cr cost
        exc,
        option="short_pay",
        status="resolved",
        extra={},
        question_id=approval.id,
        decided_by="alice",
        source="console",
    )
    tools = CloseTools(approval_limit=Decimal("5000000"))
    ctx = ToolContext(run_id=run.run_id, store=store)
    with pytest.raises(ToolError, match=r"decided after batch .* was drafted"):
        tools.tool("post_journal_entries")(ctx, draft["id"], approval.id)
    assert ledger.batch(draft["id"])["status"] == "draft"
    refused = store.audit.events(run.run_id, kind="posting_refused")
    assert refused and "afe_overrun:AFE-ABO-2025-014" in refused[-1].detail["reason"]
    # and until a redraft holds it, it is an open item that blocks the lock
    summary = tools.close_summary(ctx, "2026-10")
    assert any(
        f"afe_overrun:AFE-ABO-2025-014 decided after batch {draft['id']} was drafted" in i["text"]
        for i in summary["open_items"]
    ), summary["open_items"]


def test_an_entry_over_the_limit_needs_two_different_approvers(db_path: Path) -> None:
    same = close_run(None, db_path, second_approver="alice")
    assert same.batch()["status"] == "draft"
    assert isinstance(same.outcome, Failed)
    assert "different approver than the first (alice)" in same.outcome.error
    two = close_run(None, db_path.with_name("two.db"), second_approver="bob")
    assert two.batch()["status"] == "posted"
    posted = two.store.audit.events(two.run_id, kind="journal_posted")[0].detail
    assert posted["second_approver"] == "bob" and posted["self_approved"] is True
    assert "self-approved" in (two.presenter.finished_text or "")
    # a second close of the period is refused naming both approvers, at the console and in Slack
    ledger = Ledger(two.store)
    batch = ledger.posted_batch("2026-10")
    assert batch is not None and ledger.approvers(batch) == ["alice", "bob"]
    said = period_blocks.posted_text(
        "2026-10", batch=batch, approvers=ledger.approvers(batch), url=None
    )
    assert "approved by alice and bob on " in said
    again = closebot("run", "2026-10", env={"CLOSEBOT_DB": str(db_path.with_name("two.db"))})
    assert (
        again.returncode == 2
        and f"(batch {batch['id']}, approved by alice and bob)" in again.stderr
    )
    # under a higher limit no second approval is asked
    high = closebot(
        "run",
        "2026-10",
        env={
            "CLOSEBOT_APPROVAL_LIMIT": "5000000",
            "CLOSEBOT_DB": str(db_path.with_name("high.db")),
        },
        stdin="5\n3\n1\n1\n1\n3\n2\n1\n3\n1\n1\n1\n\n",
    )
    assert (
        high.returncode == 0
        and "Second approval" not in high.stdout
        and f"(posted by {LOGIN})" in high.stdout
    )
    bad = closebot("run", "2026-10", env={"CLOSEBOT_APPROVAL_LIMIT": "lots"})
    assert bad.returncode == 2 and "CLOSEBOT_APPROVAL_LIMIT='lots' must be an amount" in bad.stderr


def test_the_starter_cannot_approve_when_approvers_are_set(fake: FakeSlack, db_path: Path) -> None:
    bot = Harness(fake, db_path)
    try:
        run = bot.start()
        approval = bot.answer_until(run.id, "Posting")
        bot.submit(approval, {1: 1})
        bot.idle()
        assert bot.store.questions.get(approval).status == "pending"
        (notice,) = [n for n in bot.ephemerals_to("UALICE") if "egregation" in n]
        assert (
            "Segregation of duties: you started this close" in notice and "<@UAPPROVER>" in notice
        )
        assert bot.store.audit.events(run.id, kind="answer_refused")
        bot.submit(approval, {1: 1}, user="UAPPROVER")
        bot.idle()
        second = bot.pending(run.id)
        assert bot.store.questions.get(second).questions[0]["header"] == "Second approval"
        bot.submit(second, {1: 1}, user="UAPPROVER")  # the same approver twice
        bot.idle()
        assert bot.store.questions.get(second).status == "pending"
        assert any("different approver than the first" in n for n in bot.ephemerals_to("UAPPROVER"))
        bot.submit(second, {1: 1}, user="UAPPROVER2")
        bot.idle()
        assert bot.store.questions.get(second).answered_by == "UAPPROVER2"
        bot.finish(run.id)
        batch = Ledger(bot.store).current_batch(run.id)
        assert (
            batch is not None and batch["status"] == "posted" and batch["posted_by"] == "UAPPROVER"
        )
    finally:
        bot.close()


def test_the_decision_log_csv_has_every_evidence_column(db_path: Path) -> None:
    done = closebot(
        "run",
        "2026-10",
        stdin="5\n1\n1\nAssignment from Red Fork, letter of 2026-09-30\n" + "1\nok\n" * 20,
    )
    run_id = run_id_of(done.stdout)
    exported = closebot("audit", run_id, "--csv")
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert tuple(rows[0]) == DECISION_COLUMNS
    baker = next(r for r in rows if r["header"] == "WI/NRI · Baker 3-1H")
    assert baker["options"].startswith("Accept operator's decimal, update DOI | Pay under protest")
    assert baker["recommended"] == "Book at DOI, short-pay and dispute" and baker[
        "reasoning"
    ].startswith("Only the JIB differs")
    assert (
        baker["answer"] == "Accept operator's decimal, update DOI" and baker["overridden"] == "yes"
    )
    assert baker["rationale"] == "Assignment from Red Fork, letter of 2026-09-30"
    assert baker["os_login"] == LOGIN and baker["answered_by"] == LOGIN
    assert baker["source"] == "console"
    assert baker["asked_at"] <= baker["answered_at"]
    files = dict(part.split("=") for part in baker["input_files"].split("; "))
    assert set(files) == {
        "doi.csv",
        "jib.csv",
        "revenue.csv",
        "jib_history.csv",
        "revenue_history.csv",
        "production.csv",
        "prices.csv",
        "afe.csv",
        "joa.csv",
        "accruals.csv",
        "tb_activity.csv",
    }
    import hashlib

    from bot.close.data import SAMPLE_DIR

    assert (
        files["jib.csv"]
        == hashlib.sha256((SAMPLE_DIR / "2026-10" / "jib.csv").read_bytes()).hexdigest()
    )


def test_tampering_one_audit_row_is_found_by_verify(db_path: Path) -> None:
    done = closebot("run", "2026-10", "--auto")
    run_id = run_id_of(done.stdout)
    ok = closebot("audit", run_id, "--verify")
    assert ok.returncode == 0 and "every link intact" in ok.stdout
    with sqlite3.connect(db_path) as conn:
        target = conn.execute(
            "select id from audit_events where run_id = ? and kind = 'question_answered' order by id limit 1",
            (run_id,),
        ).fetchone()[0]
        conn.execute("update audit_events set actor = 'mallory' where id = ?", (target,))
    broken = closebot("audit", run_id, "--verify")
    assert broken.returncode == 1
    assert (
        f"BROKEN at event {target} (question_answered" in broken.stdout
        and "edited" in broken.stdout
    )
    with sqlite3.connect(db_path) as conn:
        conn.execute("update audit_events set actor = 'auto' where id = ?", (target,))
        conn.execute("delete from audit_events where id = ?", (target + 1,))
    removed = closebot("audit", run_id, "--verify")
    assert removed.returncode == 1 and "removed or reordered" in removed.stdout


def test_auto_mode_never_posts_nor_changes_the_doi(db_path: Path) -> None:
    done = closebot("run", "2026-10", "--auto")
    assert done.returncode == 0
    store = Store(db_path)
    run_id = run_id_of(done.stdout)
    ledger = Ledger(store)
    assert ledger.current_batch(run_id)["status"] == "draft"
    assert [r["status"] for r in ledger.all_doi_rows("W-TX-001")] == ["proposed"]
    approval = next(
        q for q in store.questions.of_run(run_id) if q.questions[0].get("header") == "Posting"
    )
    assert (
        "Decisions applied by default (not a person's): unknown_property:jib:6, wi_nri:W-OK-001"
        in " ".join(approval.questions[0]["question"].split())
    )
    books = [s.name for s in books_steps()]  # every step up to the draft
    assert [store.runs.get(run_id).steps.get(s) for s in books] == ["done"] * len(books)
    assert Decimal(ledger.current_batch(run_id)["total_debit"]) > 0


def race_to_post(db: Path, batches: list[str]) -> dict[str, str]:
    """Each batch approved on its own connection at the same moment; what happened to each."""
    import threading

    from bot.close.ledger import AlreadyPostedError

    barrier = threading.Barrier(len(batches))
    outcomes: dict[str, str] = {}

    def approve(batch_id: str) -> None:
        store = Store(db)
        barrier.wait(timeout=10)
        try:
            Ledger(store).post(batch_id, posted_by="UAPPROVER", approval_question_id="q")
            outcomes[batch_id] = "posted"
        except AlreadyPostedError as e:
            outcomes[batch_id] = f"refused: {e.batch_id}"
        finally:
            store.close()

    threads = [threading.Thread(target=approve, args=(b,)) for b in batches]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    return outcomes


def test_concurrent_approvals_of_one_period_post_once(tmp_path: Path) -> None:
    """Three runs of the same period approved at the same moment: the post and the claim on
    the period are one transaction, so exactly one posts and the others are told which."""
    line = {
        "entry_no": 1,
        "line_no": 1,
        "entry": "e",
        "account": "1050",
        "account_name": "Cash",
        "debit": Decimal("1.00"),
        "credit": Decimal("0.00"),
        "well_id": "",
        "memo": "",
        "source": "document",
        "ref": "",
    }
    other = {
        **line,
        "line_no": 2,
        "account": "4010",
        "debit": Decimal("0.00"),
        "credit": Decimal("1.00"),
    }
    for trial in range(12):
        db = tmp_path / f"race{trial}.db"
        setup = Store(db)
        ledger = Ledger(setup)
        batches = []
        for n in range(3):
            run = setup.runs.create(period="2026-10", mode="slack", started_by=f"U{n}", model="m")
            batches.append(ledger.save_batch(run.id, period="2026-10", lines=[line, other])["id"])
        setup.close()
        outcomes = race_to_post(db, batches)
        posted = [b for b, o in outcomes.items() if o == "posted"]
        assert len(posted) == 1, outcomes
        assert all(o == f"refused: {posted[0]}" for b, o in outcomes.items() if b != posted[0])
        check = Store(db)
        assert [
            b["id"] for b in check.query("select id from journal_batches where status = 'posted'")
        ] == posted
        check.close()


def test_verify_finds_an_answer_or_a_posted_line_changed_in_the_records(db_path: Path) -> None:
    done = closebot("run", "2026-10", stdin=ONE_POSTER, env=ONE)
    run_id = run_id_of(done.stdout)
    assert closebot("audit", run_id, "--verify").returncode == 0
    with sqlite3.connect(db_path) as conn:
        qid = conn.execute(
            "select id from questions where run_id = ? order by rowid limit 1", (run_id,)
        ).fetchone()[0]
        conn.execute("update questions set answered_by = 'jdoe' where id = ?", (qid,))
    edited = closebot("audit", run_id, "--verify")
    assert edited.returncode == 1 and f"BROKEN: questions:{qid} (a form:" in edited.stdout
    assert "is not what event" in edited.stdout and "changed after it was written" in edited.stdout
    with sqlite3.connect(db_path) as conn:
        conn.execute("update questions set answered_by = ? where id = ?", (LOGIN, qid))
        conn.execute(
            "update journal_lines set debit = '99999.99' where id = (select min(id) from journal_lines "
            "where batch_id in (select id from journal_batches where run_id = ? and status = 'posted'))",
            (run_id,),
        )
    changed = closebot("audit", run_id, "--verify")
    assert changed.returncode == 1 and "BROKEN: journal_lines row" in changed.stdout
    assert "was edited after it was drafted" in changed.stdout


def test_the_override_and_its_reason_are_on_the_question_that_was_overridden(db_path: Path) -> None:
    # AFE as recommended (protest), overhead overridden to pay as billed, with a reason
    done = closebot(
        "run", "2026-10", stdin="5\n3\n1\n1\n1\n3\n1\nCaprock JOA amendment\n" + "1\nok\n" * 12
    )
    rows = list(
        csv.DictReader(io.StringIO(closebot("audit", run_id_of(done.stdout), "--csv").stdout))
    )
    afe = next(r for r in rows if r["header"].startswith("AFE overrun"))
    overhead = next(r for r in rows if r["header"].startswith("Overhead vs JOA"))
    assert (afe["overridden"], afe["rationale"]) == ("no", "")
    assert (overhead["overridden"], overhead["rationale"]) == ("yes", "Caprock JOA amendment")


def test_a_typed_effective_date_is_used(db_path: Path) -> None:
    run = close_run(
        None,
        db_path,
        choose=choose_label(**{"doi_effective:W-TX-001": "other:2026-08-01 per the assignment"}),
    )
    exc = run.exception("doi_effective:W-TX-001")
    assert exc["status"] == "resolved" and exc["resolution"] == "2026-08-01"
    cost = sum(
        (
            x["debit"]
            for x in run.entries("decision")
            if "catch-up" in x["memo"] and x["account"] == "6210"
        ),
        Decimal(0),
    )
    assert cost == Decimal("1157.50")  # August only: 46,300.00 × 0.025


def test_november_carries_octobers_open_items_and_blocks_the_lock_when_nothing_posted(
    tmp_path: Path,
) -> None:
    db = tmp_path / "closebot.db"
    store = Store(db)
    october = close_run(None, db, store=store)
    carried = october.ledger.open_items(october.run_id)
    assert carried and all(i["owner"] == "alice" for i in carried)
    november = close_run(None, db, period="2026-11", store=store)
    signoff = november.exception("signoff:2026-11")
    assert (
        "from 2026-10: dispute $591.87 short-paid with Red Fork" in signoff["details"]["question"]
    )

    def keep_draft(q: Question) -> Response | None:
        return Response(selected=(2,)) if q.header == "Posting" else recommended(q)

    draft = close_run(None, tmp_path / "draft.db", choose=keep_draft)
    lock = draft.exception("signoff:2026-10")
    assert (
        lock["details"]["recommended"] == "block_lock"
        and "is a draft, not posted" in lock["details"]["reasoning"]
    )

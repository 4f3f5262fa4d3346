"""The close domain: sample data, WI/NRI checks, entries to the cent, posting rules, the playbook."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from bot.agent_loop import AgentLoop, Finished, Paused, ask_of
from bot.close import data as close_data
from bot.close.interests import RESOLUTION_CODES, find_mismatches
from bot.close.journal import build_entries, totals_by_account
from bot.close.playbook import PlaybookModel
from bot.close.prompts import SYSTEM_PROMPT, start_prompt
from bot.close.tools import CloseTools
from bot.errors import DataError
from bot.questions import Response, answer_payload
from bot.store import Store
from bot.tools import ToolContext
from tests.conftest import RecordingPresenter


def test_the_sample_period_loads_with_its_shape() -> None:
    d = close_data.load("2026-10")
    assert close_data.available_periods() == ["2026-10"] and close_data.latest_period() == "2026-10"
    assert len(d.wells) == 12 and {w.state for w in d.wells.values()} == {"TX", "OK", "ND"}
    assert all(isinstance(j.gross_amount, Decimal) for j in d.jib)
    smith = d.wells["W-TX-001"]
    assert (smith.well_name, smith.wi, smith.nri) == (
        "Smith 14-2H",
        Decimal("0.25000000"),
        Decimal("0.20000000"),
    )
    debits = sum(t.debit for t in d.prior_tb)
    assert debits == sum(t.credit for t in d.prior_tb)  # the prior trial balance balances


@pytest.mark.parametrize(
    ("period", "message"),
    [
        ("2026-13", "is not an accounting period"),
        ("Oct", "write it as YYYY-MM"),
        ("2026-09", "no close data for 2026-09; periods with data: 2026-10"),
    ],
)
def test_bad_periods_are_refused_clearly(period: str, message: str) -> None:
    with pytest.raises(DataError, match=message):
        close_data.load(period)


def test_malformed_csv_names_file_line_and_column(tmp_path: Path) -> None:
    folder = tmp_path / "2026-10"
    shutil.copytree(close_data.SAMPLE_DIR / "2026-10", folder)
    jib = folder / "jib.csv"
    lines = jib.read_text().splitlines()
    lines[3] = lines[3].replace("0.12500000", "0.12x")
    jib.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"jib.csv line 4: owner_decimal '0.12x' is not a number"):
        close_data.load("2026-10", tmp_path)
    (folder / "doi.csv").unlink()
    with pytest.raises(DataError, match=r"missing doi\.csv"):
        close_data.load("2026-10", tmp_path)


def test_the_smith_and_baker_mismatches_are_found_with_the_worked_numbers() -> None:
    mismatches = {m.well.well_name: m for m in find_mismatches(close_data.load("2026-10"))}
    assert set(mismatches) == {"Smith 14-2H", "Baker 3-1H"}
    smith = mismatches["Smith 14-2H"]
    assert (smith.jib_billed, smith.jib_expected) == (Decimal("13200.00"), Decimal("12000.00"))
    assert smith.stub_decimal == Decimal("0.22000000")
    assert smith.pattern == "both_consistent" and smith.recommended == "accept_operator"
    assert "Both operator documents agree" in smith.reasoning and "0.27500000" in smith.reasoning
    baker = mismatches["Baker 3-1H"]
    assert baker.pattern == "jib_only" and baker.recommended == "short_pay_dispute"
    assert baker.jib_billed - baker.jib_expected == Decimal("591.87")


@pytest.mark.parametrize("code", RESOLUTION_CODES)
def test_entries_balance_to_the_cent_under_every_resolution(code: str) -> None:
    d = close_data.load("2026-10")
    entries = build_entries(d, {"W-TX-001": code, "W-OK-001": code})
    for e in entries:
        assert sum(line["debit"] for line in e.lines) == sum(line["credit"] for line in e.lines)
        assert all(
            isinstance(line["debit"], Decimal)
            and line["debit"] == line["debit"].quantize(Decimal("0.01"))
            for line in e.lines
        )


def _account(lines: list[dict], account: str) -> tuple[Decimal, Decimal]:  # type: ignore[type-arg]
    row = next((t for t in totals_by_account(lines) if t["account"] == account), None)
    return (row["debit"], row["credit"]) if row else (Decimal("0.00"), Decimal("0.00"))


def test_resolutions_move_the_right_amounts() -> None:
    d = close_data.load("2026-10")

    def lines(res: dict[str, str]) -> list[dict]:  # type: ignore[type-arg]
        return [line for e in build_entries(d, res) for line in e.lines]

    accepted = lines({"W-TX-001": "accept_operator", "W-OK-001": "accept_operator"})
    short_paid = lines({"W-TX-001": "accept_operator", "W-OK-001": "short_pay_dispute"})
    undecided = lines({})
    # Short-paying Baker pays $591.87 less on AP-JIB and books that much less LOE + overhead.
    assert _account(accepted, "2110")[1] - _account(short_paid, "2110")[1] == Decimal("591.87")
    # Undecided: Smith's JIB is booked at DOI with the $1,200 held in JIB suspense (plus Baker's 591.87),
    # and Smith's extra revenue (NRI 0.22 vs 0.20) is held in revenue suspense.
    assert _account(undecided, "1395")[0] == Decimal("1200.00") + Decimal("591.87")
    assert _account(undecided, "2310")[1] == Decimal("9335.77")
    assert _account(accepted, "2310") == (Decimal("0.00"), Decimal("0.00"))
    # Cash is what the checks paid, whatever is decided.
    assert (
        _account(accepted, "1050")
        == _account(undecided, "1050")
        == (Decimal("765667.42"), Decimal("0.00"))
    )


def _playbook_loop(
    store: Store, tools: CloseTools | None = None
) -> tuple[AgentLoop, RecordingPresenter]:
    presenter = RecordingPresenter()
    loop = AgentLoop(
        store=store,
        model=PlaybookModel(),
        tools=(tools or CloseTools()).registry(),
        presenter=presenter,
        system_prompt=SYSTEM_PROMPT,
    )
    return loop, presenter


def _answer(
    store: Store,
    question_id: str,
    picks: dict[int, int],
    *,
    by: str = "alice",
    source: str = "console",
) -> None:
    record = store.question(question_id)
    responses = {n: Response(selected=(o,)) for n, o in picks.items()}
    store.claim_answer(
        question_id, answer=answer_payload(ask_of(record), responses), answered_by=by, source=source
    )


def test_the_playbook_asks_the_wi_question_with_numbers_recommendation_and_reasoning(
    store: Store,
) -> None:
    loop, _ = _playbook_loop(store)
    run = store.create_run(
        period="2026-10", mode="console", started_by="alice", model="offline-playbook"
    )
    outcome = loop.start(run.id, start_prompt("2026-10"))
    assert isinstance(outcome, Paused)
    ask = ask_of(store.question(outcome.question_id))
    smith, baker = ask.questions
    assert "$13,200.00 billed vs $12,000.00 expected (+$1,200.00)" in smith.question
    assert "0.27500000" in smith.question and "0.25000000" in smith.question
    assert smith.label(smith.recommended or 0) == "Accept operator's decimal, update DOI"
    assert smith.reasoning and "Both operator documents agree" in smith.reasoning
    assert baker.label(baker.recommended or 0) == "Book at DOI, short-pay and dispute"
    assert [e["status"] for e in store.exceptions(run.id)] == ["open", "open"]
    assert store.run(run.id).steps == {"Intake": "done", "WI/NRI validation": "waiting"}


def _close(
    store: Store,
    *,
    approval: int,
    by: str = "alice",
    source: str = "console",
    recommended: str = "Approve and post",
) -> tuple[str, Finished]:
    """A whole playbook close: Smith accepted, Baker short-paid, then the approval answer given."""
    loop, _ = _playbook_loop(store)
    run = store.create_run(
        period="2026-10",
        mode="auto" if source == "auto_default" else "console",
        started_by="alice",
        model="offline-playbook",
    )
    wi = loop.start(run.id, start_prompt("2026-10"))
    assert isinstance(wi, Paused)
    _answer(store, wi.question_id, {1: 1, 2: 2}, by=by, source=source)
    asked = loop.advance(run.id)
    assert isinstance(asked, Paused)
    posting = ask_of(store.question(asked.question_id)).questions[0]
    assert posting.label(posting.recommended or 0) == recommended
    _answer(store, asked.question_id, {1: approval}, by=by, source=source)
    done = loop.advance(run.id)
    assert isinstance(done, Finished)
    return run.id, done


def test_a_whole_playbook_close_decides_drafts_approves_and_posts(store: Store) -> None:
    run_id, done = _close(store, approval=1)
    run = store.run(run_id)
    assert (
        "Smith 14-2H: Accept operator's decimal, update DOI — decided by alice (console)"
        in done.text
    )
    assert (
        "Baker 3-1H: Book at DOI, short-pay and dispute — decided by alice (console)" in done.text
    )
    (batch,) = store.journal_batches(run.id)
    assert (
        batch["status"] == "posted"
        and batch["posted_by"] == "alice"
        and batch["total_debit"] == batch["total_credit"]
    )
    assert f"*Journal batch {batch['id']}* (posted by alice)" in done.text
    assert "Open items*: none" in done.text
    kinds = [e.kind for e in store.audit_events(run.id)]
    assert (
        kinds.count("question_answered") == 2
        and "journal_posted" in kinds
        and "doi_update" in kinds
    )
    assert store.run(run.id).status == "done" and set(store.run(run.id).steps.values()) == {"done"}


def test_posting_refuses_an_automatic_approval_and_says_so(store: Store) -> None:
    run_id, done = _close(store, approval=1, by="auto", source="auto_default")
    run = store.run(run_id)
    (batch,) = store.journal_batches(run.id)
    assert batch["status"] == "draft"
    assert (
        "Posting refused*: Not posted: the approval was an automatic default (auto_default)"
        in done.text
    )
    assert store.audit_events(run.id, kind="posting_refused")


def _post(
    store: Store, tools: CloseTools, run_id: str, batch_id: str, question_id: str
) -> tuple[str, bool]:
    return tools.registry().call(
        "post_journal_entries",
        ToolContext(run_id, store),
        {"batch_id": batch_id, "approval_question_id": question_id},
    )


def test_posting_needs_an_authorized_person_and_is_idempotent(store: Store) -> None:
    tools = CloseTools(approvers=frozenset({"U_APPROVER"}))
    run = store.create_run(period="2026-10", mode="slack", started_by="U_STARTER", model="m")
    ctx = ToolContext(run.id, store)
    registry = tools.registry()
    built, is_error = registry.call("build_journal_entries", ctx, {"period": "2026-10"})
    assert not is_error
    batch_id = json.loads(built)["batch_id"]
    question = {
        "question": f"Post {batch_id}?",
        "options": [{"label": "Approve and post"}, {"label": "Keep as draft"}],
    }
    for qid, by, pick in (
        ("q_stranger", "U_STRANGER", 1),
        ("q_keep", "U_STARTER", 2),
        ("q_ok", "U_APPROVER", 1),
    ):
        store.create_question(run.id, question_id=qid, context="approval", questions=[question])
        _answer(store, qid, {1: pick}, by=by, source="user")
    content, is_error = _post(store, tools, run.id, batch_id, "q_stranger")
    assert is_error and "U_STRANGER is neither the run's starter nor an approver" in content
    content, is_error = _post(store, tools, run.id, batch_id, "q_keep")
    assert is_error and "the answer did not approve posting" in content
    assert store.journal_batch(batch_id)["status"] == "draft"
    content, is_error = _post(store, tools, run.id, batch_id, "q_ok")
    assert not is_error and json.loads(content)["posted_by"] == "U_APPROVER"
    content, is_error = _post(store, tools, run.id, batch_id, "q_ok")
    assert not is_error and "already posted" in content
    assert len(store.audit_events(run.id, kind="journal_posted")) == 1
    rebuilt, is_error = registry.call("build_journal_entries", ctx, {"period": "2026-10"})
    assert is_error and "already posted" in rebuilt


def test_tools_refuse_another_period_and_unknown_exceptions(store: Store) -> None:
    run = store.create_run(period="2026-10", mode="console", started_by="alice", model="m")
    registry = CloseTools().registry()
    ctx = ToolContext(run.id, store)
    content, is_error = registry.call("load_period", ctx, {"period": "2026-09"})
    assert is_error and "this run closes 2026-10, not 2026-09" in content
    content, is_error = registry.call(
        "resolve_exception",
        ctx,
        {"exception_id": "nope", "resolution": "defer", "question_id": "q"},
    )
    assert is_error and "no exception with id 'nope'" in content
    content, is_error = registry.call(
        "resolve_exception", ctx, {"exception_id": "x", "resolution": "ignore", "question_id": "q"}
    )
    assert (
        is_error
        and "`resolution` must be one of accept_operator, short_pay_dispute, suspense, defer"
        in content
    )


def test_a_cancelled_wi_question_books_nothing_and_says_what_is_open(store: Store) -> None:
    loop, _ = _playbook_loop(store)
    run = store.create_run(
        period="2026-10", mode="console", started_by="alice", model="offline-playbook"
    )
    wi = loop.start(run.id, start_prompt("2026-10"))
    assert isinstance(wi, Paused)
    store.cancel_question(wi.question_id, cancelled_by="alice", source="console")
    done = loop.advance(run.id)
    assert isinstance(done, Finished)
    assert "stopped: the WI/NRI question was cancelled" in done.text
    assert (
        "Smith 14-2H: WI/NRI mismatch undecided" in done.text
        and "no journal entries were drafted" in done.text
    )
    assert store.journal_batches(run.id) == []
    assert [e["status"] for e in store.exceptions(run.id)] == ["open", "open"]


def test_the_summary_lists_the_follow_ups_each_decision_creates(store: Store) -> None:
    _, done = _close(store, approval=2)
    assert (
        "update the DOI master for Smith 14-2H (WI 0.25000000 → 0.27500000, NRI 0.20000000 → 0.22000000)"
        in done.text
    )
    assert "dispute $591.87 with Red Fork Resources Inc. (Baker 3-1H)" in done.text
    assert "is a draft, not posted" in done.text


def test_a_second_close_of_the_same_period_cannot_post_twice(store: Store) -> None:
    first_run, _ = _close(store, approval=1)
    second_run, done = _close(store, approval=1, recommended="Keep as draft")
    (first,) = store.journal_batches(first_run)
    (second,) = store.journal_batches(second_run)
    assert first["status"] == "posted" and second["status"] == "draft"
    assert (
        "already posted 2026-10 (by alice" in done.text
        and "would book the period twice" in done.text
    )

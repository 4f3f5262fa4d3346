"""Issue 17.8: many alike, decided once. One check firing on many lines of one operator is one
question for the group (its count, total and lines in the detail), whose decision applies to
every line and books exactly what the per-line decisions book (checked by the calculator of
test_close_books, from the CSV files); "Decide line by line" asks each; the questions of a
generated month do not grow with its lines."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.genmonth import generate
from bot.agent_loop import ask_of
from bot.close import groups
from bot.close.toolset import CloseTools
from bot.core.questions import Question, Response, answer_payload
from bot.core.tools import ToolContext, ToolError
from bot.store import Store
from tests.cli_run import closebot, run_id_of
from tests.close_helpers import CloseRun, close_run, recommended
from tests.test_close_books import booked, check_every_booking

PROTEST = "Pay under protest (receivable)"
ALIKE = 5


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated month where five wells of one operator each bill a line already billed and
    withhold severance above the state rate (bench/genmonth.py --alike 5), beside the five
    planted exceptions of other operators."""
    root = tmp_path_factory.mktemp("alike")
    generate(root, 1200, seed=5, alike=ALIKE)
    return root


def planted(month: Path) -> list[str]:
    return [p["ref"] for p in json.loads((month / "planted.json").read_text())["planted"]]


def choosing(duplicates: str, *, each: str | None = None) -> Any:
    """Pick `duplicates` on the group of duplicate lines and `each` on a single duplicate line
    (once the group is split); the recommendation elsewhere."""

    def chooser(q: Question) -> Response | None:
        labels = [o.label for o in q.options]
        if "[ref alike:duplicate:" in q.question:
            return Response(selected=(labels.index(duplicates) + 1,))
        if each and "[ref duplicate:" in q.question and each in labels:
            return Response(selected=(labels.index(each) + 1,))
        return recommended(q)

    return chooser


def naming(run: CloseRun, ref: str) -> list[Any]:
    """The questions (records) whose text names `ref`."""
    return [
        record
        for record in run.store.questions.of_run(run.run_id)
        for item in record.questions
        if f"[ref {ref}]" in item["question"]
    ]


def duplicates_of_the_group(run: CloseRun) -> list[dict[str, Any]]:
    found = [
        e
        for e in run.exceptions()
        if e["kind"] == "duplicate" and str(e["details"].get("group", "")).startswith("alike:")
    ]
    assert len({e["details"]["group"] for e in found}) == 1
    return found


def decision_nets(run: CloseRun, excs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per exception ref, what its decision's entry booked per account."""
    return {e["details"]["ref"]: booked(run, e) for e in excs}


def test_alike_lines_are_one_question_whose_decision_books_each_line_as_decided_alone(
    month: Path, tmp_path: Path
) -> None:
    run = close_run(month, tmp_path / "group.db", choose=choosing(PROTEST), rationale="per JOA")
    alike = duplicates_of_the_group(run)
    assert len(alike) == ALIKE
    ref = alike[0]["details"]["group"]
    (asked,) = naming(run, ref)  # one form, one question, for the five lines
    assert [e["details"]["ref"] for e in alike if naming(run, e["details"]["ref"])] == []
    q = next(q for q in ask_of(asked).questions if f"[ref {ref}]" in q.question)
    assert f"The same check found {ALIKE} alike duplicate exceptions" in q.question
    assert [o.label for o in q.options][-1] == groups.LINE_BY_LINE
    assert q.options[q.recommended - 1].label == "Short-pay and dispute"  # type: ignore[operator]
    # the decision applies to every line of the group, each bound to the question that named it
    for e in alike:
        assert (e["status"], e["resolution"], e["question_id"]) == ("resolved", "protest", asked.id)
    # a group of one (the planted duplicate of another operator) is asked on its own
    single = [r for r in planted(month) if r.startswith("duplicate:")]
    single = [r for r in single if r not in {e["details"]["ref"] for e in alike}]
    assert len(single) == 1 and len(naming(run, single[0])) == 1
    # what each line books is what CLOSE.md says for it, worked from the CSV files
    assert check_every_booking(run, month / "2026-10") >= ALIKE
    assert all(booked(run, e) for e in alike)

    # the same decision taken line by line books the same, line for line
    one_by_one = close_run(
        month,
        tmp_path / "lines.db",
        choose=choosing(groups.LINE_BY_LINE, each=PROTEST),
        rationale="per JOA",
    )
    split = duplicates_of_the_group(one_by_one)
    assert len(naming(one_by_one, ref)) == 1
    for e in split:
        (own,) = naming(one_by_one, e["details"]["ref"])  # asked each, on its own
        assert (e["resolution"], e["question_id"]) == ("protest", own.id)
    check_every_booking(one_by_one, month / "2026-10")
    assert decision_nets(one_by_one, split) == decision_nets(run, alike)
    forms = Counter(len(a.questions) for a in one_by_one.asks)
    assert len(one_by_one.asks) > len(run.asks)  # the lines asked five to a form
    assert sum(n * c for n, c in forms.items()) == sum(len(a.questions) for a in run.asks) + ALIKE


def test_the_detail_lists_every_line_with_what_each_option_books(
    month: Path, db_path: Path
) -> None:
    run = close_run(month, db_path)
    alike = duplicates_of_the_group(run)
    columns, rows = groups.detail_rows(alike)
    assert [r["ref"] for r in rows] == [e["details"]["ref"] for e in alike]
    assert "if Pay under protest (receivable)" in columns
    for e, row in zip(alike, rows, strict=True):
        stake = e["details"]["amount"]
        assert row["amount_at_stake"] == stake
        assert f"Dr 1390 JIB Receivable - Disputed ${float(stake):,.2f}" in row[f"if {PROTEST}"]
    listing = groups.console_listing(run.store, naming(run, alike[0]["details"]["group"])[0])
    assert sum(line.startswith("  • ") for line in listing) >= ALIKE


def test_a_decision_for_the_group_must_be_what_was_chosen_on_the_question_that_named_it(
    month: Path, store: Store
) -> None:
    tools = CloseTools(data_dir=month)
    run = store.runs.create(period="2026-10", mode="console", started_by="alice", model="test")
    ctx = ToolContext(run_id=run.id, store=store)
    tools.tool("load_period")(ctx, "2026-10")
    step = tools.tool("reconcile_jibs")(ctx, "2026-10")
    (entry,) = [e for e in step["exceptions"] if e["ref"].startswith("alike:duplicate:")]
    assert entry["exceptions"] == ALIKE and entry["status"] == "open"
    details = tools.exception_details(ctx, entry["ref"])
    assert len(json.dumps(details)) < 4096
    question = details["question"]
    single = next(e["ref"] for e in step["exceptions"] if e["ref"].startswith("duplicate:"))
    other = tools.exception_details(ctx, single)["question"]
    for qid, items in (("q-group", [question]), ("q-other", [other])):
        store.questions.create(run.id, question_id=qid, context="JIBs", questions=items)
        ask = ask_of(store.questions.get(qid))
        protest = [o.label for o in ask.questions[0].options].index(PROTEST) + 1
        store.questions.claim(
            qid,
            answer=answer_payload(ask, {1: Response(selected=(protest,))}),
            answered_by="alice",
            source="console",
            rationale="per JOA",
        )
    with pytest.raises(ToolError, match="alice chose Pay under protest"):
        tools.resolve_exception(ctx, entry["ref"], "Pay as billed", "q-group")
    with pytest.raises(ToolError, match="did not ask about alike:duplicate:"):
        tools.resolve_exception(ctx, entry["ref"], PROTEST, "q-other")
    member = tools.exception_details(ctx, entry["ref"])["first"][0]
    with pytest.raises(ToolError, match=f"did not ask about {member}"):
        tools.resolve_exception(ctx, member, PROTEST, "q-other")
    assert not store.audit.events(run.id, kind="exception_resolved")
    done = tools.resolve_exception(ctx, entry["ref"], PROTEST, "q-group")
    assert (done["status"], done["exceptions"]) == ("resolved", ALIKE)
    assert len(store.audit.events(run.id, kind="exception_resolved")) == ALIKE


def asked_questions(db: Path, run_id: str) -> tuple[int, int]:
    """(question items asked, exceptions raised) of a run."""
    store = Store(db)
    items = sum(len(q.questions) for q in store.questions.of_run(run_id))
    rows = store.query("select count(*) as n from exceptions where run_id = ?", (run_id,))
    return items, int(rows[0]["n"])


def test_the_questions_of_a_month_do_not_grow_with_its_lines(tmp_path: Path) -> None:
    sizes = []
    for lines, alike in ((1200, 2), (4000, 8)):
        data = tmp_path / f"m{lines}"
        generate(data, lines, seed=7, alike=alike)
        db = data / "closebot.db"
        ran = closebot("run", "2026-10", "--auto", "--data", str(data), "--db", str(db))
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
        asked, raised = asked_questions(db, run_id_of(ran.stdout))
        sizes.append((asked, raised, len(planted(data))))
    (small_asked, small_raised, small_planted), (big_asked, big_raised, big_planted) = sizes
    assert big_planted - small_planted == 2 * (8 - 2)  # six more lines alike, of two kinds
    assert big_raised - small_raised >= 2 * (8 - 2)
    assert small_asked == big_asked

"""Issue 7: the steps on the shipped sample reproduce the hand-worked figures to the
cent, every option of every exception books a balanced batch, and November reverses October
and reads the DOI change October made."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from bot.agent_loop import Finished
from bot.close.kinds import option_label
from bot.close.steps import names as step_names
from bot.core.questions import Question, Response
from bot.store import Store
from tests.close_helpers import CloseRun, choose_label, close_run, recommended

D = Decimal


@pytest.fixture(scope="module")
def october(tmp_path_factory: pytest.TempPathFactory) -> CloseRun:
    """October closed by a person taking every recommendation, then approving the batch."""
    db = tmp_path_factory.mktemp("october") / "closebot.db"
    return close_run(None, db)


def decision_lines(run: CloseRun, text: str) -> list[dict[str, object]]:
    return [x for x in run.entries("decision") if text in str(x["entry"])]


def test_october_runs_all_eight_steps_and_posts_one_balanced_batch(october: CloseRun) -> None:
    assert isinstance(october.outcome, Finished)
    steps = october.store.runs.get(october.run_id).steps
    assert [steps.get(s) for s in step_names()] == ["done"] * len(step_names())
    summary = october.presenter.finished_text or ""
    assert "— finished\n" in summary and "Sign-off: done" in summary and "not run" not in summary
    batch = october.batch()
    assert batch["status"] == "posted" and batch["total_debit"] == batch["total_credit"]
    refs = {e["details"]["ref"] for e in october.exceptions()}
    assert {
        "unknown_property:jib:6",
        "wi_nri:W-TX-001",
        "wi_nri:W-OK-001",
        "doi_effective:W-TX-001",
        "afe_overrun:AFE-ABO-2025-014",
        "overhead_rate:CEP-0926-044",
        "revenue_accrual:W-TX-005:2026-09",
        "severance:W-OK-002",
        "flux_item:6220",
    } <= refs


def test_smith_accept_from_july_catches_up_2335_cost_and_8620_revenue(october: CloseRun) -> None:
    catch_up = decision_lines(october, "Smith 14-2H — Effective 2026-07-01")
    # the revenue side is one question for every month paid at the old NRI: July's check, here
    catch_up += decision_lines(october, "Smith 14-2H — Book the catch-up receivable")
    cost = sum((x["debit"] for x in catch_up if x["account"] == "6210"), D(0))  # type: ignore[misc]
    revenue = sum((x["credit"] for x in catch_up if x["account"] == "4090"), D(0))  # type: ignore[misc]
    receivable = sum((x["debit"] for x in catch_up if x["account"] == "1210"), D(0))  # type: ignore[misc]
    assert (cost, revenue, receivable) == (D("2335.00"), D("8620.00"), D("8620.00"))
    assert sum((x["credit"] for x in catch_up if x["account"] == "2110"), D(0)) == D("2335.00")  # type: ignore[misc]


def test_baker_short_pay_disputes_591_87_line_by_line(october: CloseRun) -> None:
    lines = decision_lines(october, "Baker 3-1H")
    assert {(x["account"], x["debit"], x["credit"]) for x in lines} == {
        ("2110", D("560.00"), D("0.00")),
        ("6210", D("0.00"), D("560.00")),
        ("2110", D("31.87"), D("0.00")),
        ("6250", D("0.00"), D("31.87")),
    }
    question = october.exception("wi_nri:W-OK-001")["details"]["question"]
    assert "$22,400.00 gross × 0.15000000 = $3,360.00 (at DOI $2,800.00)" in question
    assert "$1,275.00 gross × 0.15000000 = $191.25 (at DOI $159.38)" in question
    assert "+$591.87" in question


def test_afe_overrun_share_is_6887_05(october: CloseRun) -> None:
    exc = october.exception("afe_overrun:AFE-ABO-2025-014")
    assert "$68,870.50 over (+15.30 %" in exc["details"]["question"]
    assert exc["details"]["facts"]["share"] == "6887.05"
    protest = decision_lines(october, "AFE-ABO-2025-014")
    assert sum((x["debit"] for x in protest if x["account"] == "1390"), D(0)) == D("6887.05")  # type: ignore[misc]


def test_caprock_overhead_over_the_joa_rate_disputes_28_13(october: CloseRun) -> None:
    exc = october.exception("overhead_rate:CEP-0926-044")
    assert exc["details"]["facts"]["difference"] == "28.13"
    assert "$725.00 vs JOA $1,400.00 × 0.50000000 = $700.00" in exc["details"]["question"]
    assert "$90.63 vs JOA $1,400.00 × 0.06250000 = $87.50" in exc["details"]["question"]


def test_loe_accrual_is_the_trailing_average_and_last_months_2115_is_reversed(
    october: CloseRun,
) -> None:
    accrual = {
        (x["well_id"], x["account"]): x["debit"]
        for x in october.entries("accrual")
        if x["account"] == "6210"
    }
    assert accrual[("W-TX-003", "6210")] == D("31552.81")
    assert accrual[("W-TX-002", "6210")] == D("2660.33")
    reversed_2115 = sum(
        (x["debit"] for x in october.entries("reversal") if x["account"] == "2115"), D(0)
    )
    assert reversed_2115 == D("52300.00")


def test_revenue_accrual_for_smith_september_oil(october: CloseRun) -> None:
    well = [x for x in october.entries("accrual") if x["well_id"] == "W-TX-001"]
    oil = [x for x in well if "oil" in x["memo"]]
    assert {(x["account"], x["debit"], x["credit"]) for x in oil} == {
        ("6110", D("4408.90"), D("0.00")),
        ("4010", D("0.00"), D("95845.64")),
    }
    # the receivable is one line per well: this oil's 95,845.64 − 4,408.90 = 91,436.74 and
    # the well's other products' revenue net of their severance
    others = [x for x in well if "oil" not in x["memo"] and x["account"] != "1210"]
    net_others = sum((x["credit"] - x["debit"] for x in others), D(0))
    assert net_others > 0
    receivable = [(x["debit"], x["credit"]) for x in well if x["account"] == "1210"]
    assert receivable == [(D("91436.74") + net_others, D("0.00"))]
    reversed_1210 = sum(
        (x["credit"] for x in october.entries("reversal") if x["account"] == "1210"), D(0)
    )
    assert reversed_1210 == D("184220.60")


def test_whitfield_severance_at_5_percent_in_month_27_is_a_718_13_refund(october: CloseRun) -> None:
    exc = october.exception("severance:W-OK-002")
    shares = [i["owner_share"] for i in exc["details"]["facts"]["items"]]
    assert shares == ["223.97", "327.41", "166.75"] and exc["details"]["facts"]["total"] == "718.13"
    assert "month 27 of production" in exc["details"]["question"]
    refs = {e["details"]["ref"] for e in october.exceptions()}
    assert not any(r.startswith("severance:W-ND") for r in refs)  # ND gas at $0.0905/Mcf is right


def test_flux_splits_smith_oil_and_flags_only_workover(october: CloseRun) -> None:
    from bot.close.checks import Close
    from bot.close.data import load
    from bot.close.doi_master import Master
    from bot.close.steps.flux import revenue_split

    data = load("2026-10")
    added = october.ledger.doi_rows(run_id=october.run_id)
    from bot.close.toolbase import _doi_row

    split = revenue_split(Close(data, Master.of(data, [_doi_row(r["row"]) for r in added])))
    smith = next(s for s in split if s["well_id"] == "W-TX-001" and s["product"] == "oil")
    assert (smith["prior"], smith["current"], smith["change"]) == (
        D("105963.00"),
        D("98045.38"),
        D("-7917.62"),
    )
    assert (smith["volume_part"], smith["price_part"]) == (D("-4238.52"), D("-3679.10"))
    assert f"{smith['percent'] * 100:.2f}" == "-7.47" and smith["flagged"] is False
    items = [e for e in october.exceptions() if e["kind"] == "flux_item"]
    assert [e["details"]["ref"] for e in items] == ["flux_item:6220"]  # the only flagged item
    i = items[0]["details"]["facts"]["item"]
    assert (i["account"], i["prior"], i["current"]) == ("6220", "5200.00", "24996.25")
    # asked on its own, explained by the draft from the documents
    assert items[0]["details"]["options"] == ["explain", "adjust", "escalate"]
    assert "Rod pump replacement" in items[0]["extra"]["explanation"]


def test_november_reverses_october_from_the_store_and_asks_nothing_of_the_data(
    tmp_path: Path,
) -> None:
    db = tmp_path / "closebot.db"
    store = Store(db)
    october = close_run(None, db, store=store)
    november = close_run(None, db, period="2026-11", store=store)
    assert isinstance(november.outcome, Finished)
    # nothing about the data: October's open items one by one before anything else, then flux
    # of the draft against the posted October, the approvals, then the sign-off (with its
    # owners and due dates)
    headers = [q.header or "" for a in november.asks for q in a.questions if not q.kind.assigns]
    carried = [e for e in november.exceptions() if e["kind"] == "carried_item"]
    assert len(carried) == len(october.ledger.open_items(october.run_id)) > 0
    assert all(h.startswith("Open item") for h in headers[: len(carried)])
    posting = headers.index("Posting")
    assert posting > len(carried)
    assert all(h.startswith("Flux") for h in headers[len(carried) : posting])
    assert headers[posting + 1] == "Second approval" and headers[-1].startswith("Sign-off")
    kinds = {e["kind"] for e in november.exceptions()}
    assert kinds <= {"flux_basis", "flux_item", "flux_escalate", "carried_item", "signoff"}
    october_accruals = october.entries("accrual")
    reversal = november.entries("reversal")
    assert sorted((x["account"], x["credit"], x["debit"]) for x in october_accruals) == sorted(
        (x["account"], x["debit"], x["credit"]) for x in reversal
    )
    assert all(str(x["ref"]).startswith(f"batch {october.batch()['id']}") for x in reversal)
    assert november.batch()["status"] == "posted"


def test_the_doi_change_is_read_by_the_next_period_only_once_posted(tmp_path: Path) -> None:
    db = tmp_path / "closebot.db"
    store = Store(db)

    def keep_draft(q: Question) -> Response | None:
        if q.header == "Posting":
            return Response(selected=(2,))
        return recommended(q)

    october = close_run(None, db, store=store, choose=keep_draft)
    assert october.batch()["status"] == "draft"
    assert [r["status"] for r in october.ledger.all_doi_rows("W-TX-001")] == ["proposed"]
    november = close_run(None, db, period="2026-11", store=store, choose=keep_draft)
    refs = {e["details"]["ref"] for e in november.exceptions()}
    assert "wi_nri:W-TX-001" in refs  # not approved, so not in force: November asks again
    assert any("accruals.csv" in str(x["ref"]) for x in november.entries("reversal"))


def all_choices() -> list[tuple[str, str]]:
    """(ref, option label) for every option of every planted October exception."""
    db = Path(__import__("tempfile").mkdtemp()) / "closebot.db"
    run = close_run(None, db)
    out = []
    for e in run.exceptions():
        if e["kind"] in ("flux_item", "flux_select", "signoff"):
            continue
        for code in e["details"]["options"]:
            out.append((e["details"]["ref"], option_label(e["kind"], code, e["details"]["facts"])))
    return out


@pytest.mark.parametrize(("ref", "label"), all_choices())
def test_every_option_of_every_exception_books_a_balanced_batch(
    ref: str, label: str, db_path: Path
) -> None:
    run = close_run(None, db_path, choose=choose_label(**{ref: label}))
    assert run.exception(ref)["status"] == "resolved"
    batch = run.batch()
    assert batch["total_debit"] == batch["total_credit"]
    for entry in {x["entry_no"] for x in run.lines()}:
        lines = [x for x in run.lines() if x["entry_no"] == entry]
        assert sum(x["debit"] for x in lines) == sum(x["credit"] for x in lines)


def test_no_two_wi_options_book_the_same(tmp_path: Path) -> None:
    booked = {}
    for n, label in enumerate(
        [
            "Accept operator's decimal, update DOI",
            "Pay under protest (receivable)",
            "Book at DOI, short-pay and dispute",
            "Book billed, difference in suspense",
            "Defer, request ownership support",
        ]
    ):
        for well in ("W-OK-001", "W-TX-001"):
            run = close_run(
                None, tmp_path / f"{n}{well}.db", choose=choose_label(**{f"wi_nri:{well}": label})
            )
            lines = sorted(
                (x["account"], x["debit"], x["credit"])
                for x in run.entries("decision")
                if x["well_id"] == well
            )
            booked.setdefault(well, {})[label] = tuple(lines)
    smith = booked["W-TX-001"]  # both documents differ: every option books its own way
    assert len(set(smith.values())) == len(smith), "Smith: two options book the same"
    # Baker: only the JIB differs, so Defer books like suspense (CLOSE.md v2.1) and differs in
    # what it leaves open; every other pair differs
    baker = booked["W-OK-001"]
    assert baker["Defer, request ownership support"] == baker["Book billed, difference in suspense"]
    assert len(set(baker.values())) == len(baker) - 1


def test_accepting_a_wi_only_change_claims_this_months_check_shortfall(db_path: Path) -> None:
    """Baker 3-1H: the JIB bills 0.15 while the stub pays the DOI's 0.10. Accepting 0.15 moves the
    NRI to 0.15 × (1 − 0.1875 − 0.0125) = 0.12, so August's check paid 0.02 too little."""
    run = close_run(
        None,
        db_path,
        choose=choose_label(**{"wi_nri:W-OK-001": "Accept operator's decimal, update DOI"}),
    )
    exc = run.exception("stub_underpaid:W-OK-001")
    # one question for every month paid at the old NRI: July (revenue_history.csv) and August
    # (this month's check), each worked here from the CSV files at NRI 0.12
    import csv

    from bot.close.data import SAMPLE_DIR

    def shortfall(name: str) -> D:
        with open(SAMPLE_DIR / "2026-10" / name, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["well_id"] == "W-OK-001"]
        due = (
            (D(r["gross_value"]) - D(r["gross_taxes"]) - D(r["gross_deductions"])) * D("0.12")
            for r in rows
        )
        return sum(
            (
                d.quantize(D("0.01"), "ROUND_HALF_UP") - D(r["owner_net_value"])
                for d, r in zip(due, rows, strict=True)
            ),
            D(0),
        )

    july, august = shortfall("revenue_history.csv"), shortfall("revenue.csv")
    assert (july, august) == (
        D("4979.04"),
        D("4675.63"),
    )  # August: oil 1,753.50 + gas 1,886.22 + NGL 1,035.91
    assert exc["details"]["facts"]["total"] == str(july + august)
    assert "2026-07" in exc["details"]["question"] and "2026-08" in exc["details"]["question"]
    assert exc["resolution"] == "claim"  # August still pays the old decimal: claim every month
    claim = [
        x
        for x in run.entries("decision")
        if x["account"] in ("1215", "4090")
        and "new NRI" in x["memo"]
        and x["well_id"] == "W-OK-001"
    ]
    assert (
        sum((x["debit"] for x in claim), D(0))
        == sum((x["credit"] for x in claim), D(0))
        == july + august
    )
    assert not any(
        x["account"].startswith("2") and x["debit"] and "new NRI" in x["memo"] for x in claim
    )

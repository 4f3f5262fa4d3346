"""Issue 30.5: a flux review that reconciles. Each flagged movement is attributed first to this
close's own entries (the reversal of last month's accruals, its accruals, its decisions), then
to last month's one-offs, then to volume and price; the explained and unexplained parts are
shown, and a draft that leaves a part beyond the thresholds (±10 % and ±$5,000, CLOSE.md)
unexplained is never the ⭐. Figures are worked here from the sample CSVs, not by flux."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from bot.close.data import SAMPLE_DIR
from bot.close.doi_master import money
from bot.close.steps.flux import flux_item
from bot.close.steps.flux_parts import Part, Reconciled
from bot.store import Store
from tests.close_helpers import CloseRun, choose_label, close_run

D = Decimal
CENT = D("0.01")


def rows(period: str, name: str) -> Iterator[dict[str, str]]:
    with open(SAMPLE_DIR / period / name, newline="") as f:
        yield from csv.DictReader(f)


def flux_items(run: CloseRun) -> dict[str, dict[str, Any]]:
    return {
        e["details"]["ref"].split(":", 1)[1]: e["details"]
        for e in run.exceptions()
        if e["kind"] == "flux_item"
    }


def part(details: dict[str, Any], words: str) -> Decimal:
    found = [D(amount) for what, amount, _ in details["facts"]["parts"] if words in what]
    assert len(found) == 1, (words, details["facts"]["parts"])
    return found[0]


def beyond_thresholds(amount: Decimal, prior: Decimal) -> bool:
    return abs(amount) > 5000 and (not prior or abs(amount) / abs(prior) > D("0.10"))


@pytest.fixture(scope="module")
def closes(tmp_path_factory: pytest.TempPathFactory) -> tuple[CloseRun, CloseRun]:
    db = tmp_path_factory.mktemp("flux") / "c.db"
    store = Store(db)
    october = close_run(None, db, store=store)
    november = close_run(None, db, period="2026-11", store=store)
    assert october.batch()["status"] == "posted"
    return october, november


def test_novembers_oil_revenue_is_mostly_the_reversal_of_octobers_accrual(
    closes: tuple[CloseRun, CloseRun],
) -> None:
    october, november = closes
    # October's oil accrual from its CSVs: September's volumes × (benchmark − differential) ×
    # NRI (Smith's the operator's 0.22, accepted in October), a line each, to the cent
    folder = "2026-10"
    nri = {r["well_id"]: D(r["nri"]) for r in rows(folder, "doi.csv")}
    nri["W-TX-001"] = next(
        D(r["owner_decimal"]) for r in rows(folder, "revenue.csv") if r["well_id"] == "W-TX-001"
    )
    net_price = {
        r["month"]: D(r["benchmark_price"]) - D(r["differential"])
        for r in rows(folder, "prices.csv")
        if r["product"] == "oil"
    }
    accrued = sum(
        (
            (D(r["volume"]) * net_price[r["month"]] * nri[r["well_id"]]).quantize(
                CENT, ROUND_HALF_UP
            )
            for r in rows(folder, "production.csv")
            if r["product"] == "oil" and r["month"] == "2026-09"
        ),
        D(0),
    )
    # what October itself reversed: September's oil accruals (accruals.csv)
    september = sum(
        (
            D(r["amount"])
            for r in rows(folder, "accruals.csv")
            if r["kind"] == "revenue" and r["product_or_category"] == "oil"
        ),
        D(0),
    )
    reversal = -(accrued - september)
    assert reversal == D("-606907.08")  # the figure, worked from the CSVs
    # the movement itself, from the two batches' lines on 4010 (revenue as credits)
    change = sum(
        (x["credit"] - x["debit"] for x in november.lines() if x["account"] == "4010"), D(0)
    )
    change -= sum(
        (x["credit"] - x["debit"] for x in october.lines() if x["account"] == "4010"), D(0)
    )
    assert change == D("-619912.26")

    oil = flux_items(november)["4010"]
    assert part(oil, "reversing October 2026's accruals") == reversal
    facts = oil["facts"]
    assert D(facts["explained"]) + D(facts["unexplained"]) == change
    assert sum((D(a) for _, a, _ in facts["parts"]), D(0)) == change  # the parts add up
    # the question shows the reversal, and what is left unexplained
    assert money(abs(reversal)) in oil["question"] and "unexplained" in oil["question"]


def test_novembers_workover_drop_is_octobers_one_off_workovers(
    closes: tuple[CloseRun, CloseRun],
) -> None:
    _, november = closes
    workovers = sum(
        (
            D(r["owner_net_amount"])
            for r in rows("2026-10", "jib.csv")
            if r["cost_category"] == "Workover"
        ),
        D(0),
    )
    item = flux_items(november)["6220"]
    assert part(item, "one-off workovers posted by closebot") == -workovers
    assert D(item["facts"]["unexplained"]) == 0
    assert (
        item["recommended"] == "explain"
    )  # today: "Nothing in the documents explains it", escalate
    assert "Rod pump replacement" in item["question"]


def test_octobers_4090_is_the_catch_up_booked_in_the_same_close(tmp_path: Path) -> None:
    october = close_run(
        None,
        tmp_path / "c.db",
        choose=choose_label(**{"doi_effective:W-TX-001": "other:2026-06-01"}),
    )
    catch_up = sum(
        (x["credit"] - x["debit"] for x in october.entries("decision") if x["account"] == "4090"),
        D(0),
    )
    assert catch_up == D("18766.47")
    september = sum(
        (
            D(r["credit"]) - D(r["debit"])
            for r in rows("2026-10", "tb_activity.csv")
            if r["month"] == "2026-09" and r["account"] == "4090"
        ),
        D(0),
    )
    item = flux_items(october)["4090"]
    assert part(item, "this close's decision Smith 14-2H") == catch_up
    assert part(item, "September 2026's one-off prior-period adjustments") == -september
    assert D(item["facts"]["unexplained"]) == 0
    assert item["recommended"] == "explain"  # today: escalate, "Nothing … explains it"


def test_no_star_on_a_draft_that_leaves_a_material_part_unexplained(
    closes: tuple[CloseRun, CloseRun],
) -> None:
    for run in closes:
        for details in flux_items(run).values():
            facts = details["facts"]
            prior = D(facts["item"]["prior"])
            left = D(facts["item"]["change"]) - sum(
                (D(a) for _, a, explained in facts["parts"] if explained), D(0)
            )
            assert D(facts["unexplained"]) == left
            if details["recommended"] == "explain":
                assert not beyond_thresholds(left, prior), details["question"]
    # a movement whose draft explains 2 % of it: shown, never recommended
    item = {"account": "4010", "name": "Oil Revenue", "prior": D("100000.00")}
    item |= {"current": D("60000.00"), "change": D("-40000.00"), "percent": D("-0.4")}
    drafted = Reconciled(D("-40000.00"), D("100000.00"), [Part("checks' volume", D("-800.00"))])
    finding = flux_item(None, item, drafted, ["alice"])
    assert finding.recommended == "escalate"
    assert "-$39,200.00 of it is unexplained" in finding.question


def test_a_well_items_movement_is_volume_price_and_the_rest_unexplained() -> None:
    from bot.close.steps.flux_parts import well_movement

    item = {"change": "-12000.00", "prior": "50000.00", "volume_part": "-4000.00"}
    item |= {"price_part": "-1500.00"}
    movement = well_movement(item)
    assert movement.explained == D("-5500.00")
    assert movement.unexplained == D("-6500.00")  # -12,000 - (-4,000 - 1,500)
    assert not movement.reconciles  # $6,500 and 13 % of $50,000: beyond both thresholds
    assert "unexplained -$6,500.00" in movement.draft()

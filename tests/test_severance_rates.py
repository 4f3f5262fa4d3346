"""Issue 29 item 3 (CLOSE.md v2.2): severance and withholding are data. The shipped table rates
the nine main producing states with a source per row, gives CLOSE.md's worked numbers (TX,
OK's first 36 months, ND per Mcf, New Mexico's 7.09 % / 7.14 % and 7.94 %), and a team extends
it without code; a well whose state or product has no row is a question — in the severance
check, in the revenue accrual and in `data check` — never a silent zero. The January month of
NM / WY / KS wells is booked here against a calculator of the statutes' rates, written out."""

from __future__ import annotations

import csv
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from bot.close.data import PriceRow
from bot.close.rates import SHIPPED, Due, NoRate, Well, rates_for, shipped
from bot.core.errors import DataError
from tests.cli_run import closebot
from tests.close_helpers import close_run
from tests.period_kit import write_period

D = Decimal
PERIOD = "2027-01"


def r2(x: Decimal) -> Decimal:
    return x.quantize(D("0.01"), ROUND_HALF_UP)


def rate(
    state: str, product: str, month: str = "2026-11", first: str = "2015-01", **kw: object
) -> Due:
    due = shipped().due(Well("W", state, first), product, month, D("100000"), D("1000"), **kw)  # type: ignore[arg-type]
    assert isinstance(due, Due), due
    return due


# -- the table ----------------------------------------------------------------------------------


def test_the_shipped_table_rates_the_main_states_each_row_with_its_source() -> None:
    with open(SHIPPED, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["state"] for r in rows} >= {"TX", "NM", "OK", "ND", "WY", "CO", "LA", "UT", "PA"}
    for r in rows:
        assert len(r["source"]) > 15, r  # the statute or the state's page, named
        assert r["basis"] in ("percent", "per_unit")
    for state in ("TX", "NM", "OK", "ND", "WY", "CO", "LA", "UT", "PA"):
        for product in ("oil", "gas"):
            assert shipped().covers(state, product), (state, product)


def test_close_md_worked_numbers() -> None:
    """CLOSE.md: TX oil 4.6 %, gas 7.5 %; OK 7 %, 5 % for the first 36 months; ND oil 10 %, ND gas
    $0.0905/Mcf; NM oil 3.75 + 3.15 + 0.19 (0.24 after a quarter WTI averaged over $70) = 7.09 or
    7.14 %; NM gas 3.75 + 4 + 0.19 = 7.94 %."""
    value = D("100000")
    assert rate("TX", "oil").amount == value * D("0.046")
    assert rate("TX", "gas").amount == value * D("0.075")
    assert rate("OK", "oil", first="2015-01").amount == value * D("0.07")
    assert rate("OK", "gas", month="2026-08", first="2024-06").amount == value * D(
        "0.05"
    )  # month 27
    assert "month 27 of production" in rate("OK", "gas", month="2026-08", first="2024-06").basis
    assert rate("OK", "oil", month="2027-07", first="2024-07").amount == value * D(
        "0.07"
    )  # month 37
    assert rate("OK", "oil", first="").amount == value * D("0.07")  # no first month: the base rate
    assert rate("ND", "oil").amount == value * D("0.10")
    assert rate("ND", "gas").amount == D("1000") * D("0.0905")
    low = [PriceRow(m, "oil", D("65"), D("0")) for m in ("2026-07", "2026-08", "2026-09")]
    high = [PriceRow(m, "oil", D("75"), D("0")) for m in ("2026-07", "2026-08", "2026-09")]
    assert rate("NM", "oil", prices=low).amount == value * D("0.0709")
    assert rate("NM", "oil", prices=high).amount == value * D("0.0714")
    assert rate("NM", "gas", prices=high).amount == value * D("0.0794")  # conservation 0.19 on gas


def test_a_condition_without_its_data_or_a_state_without_a_row_is_a_reason_never_zero() -> None:
    table = shipped()
    nm = table.due(Well("W", "NM", "2015-01"), "oil", "2026-11", D("1000"), D("10"))
    assert isinstance(nm, NoRate) and "2026-07..2026-09" in nm.reason  # WTI of Q3 unknown
    ks = table.due(Well("W", "KS", "2015-01"), "oil", "2026-11", D("1000"), D("10"))
    assert isinstance(ks, NoRate) and "no row for KS oil" in ks.reason
    la = table.due(Well("W", "LA", "2015-01"), "gas", "2026-11", D("1000"), D("10"))
    assert isinstance(la, NoRate) and "in force" in la.reason  # LA sets gas each July 1


def test_utah_rates_the_price_in_bands_and_a_stripper_status_from_the_team() -> None:
    # 1,000 bbl at $60: 3 % of $13 and 5 % of $47, plus the 0.2 % conservation fee
    due = rate("UT", "oil", first="2015-01")
    assert due.amount == D("1000") * (D("13") * D("0.03") + D("87") * D("0.05")) + D("200")
    assert due.rate is None  # not one % of value


def test_a_teams_rows_replace_the_shipped_rows_for_their_state_and_product(tmp_path: Path) -> None:
    (tmp_path / "severance_rates.csv").write_text(
        "state,product,component,basis,rate,status,source\n"
        "KS,oil,severance,percent,4.33,,K.S.A. 79-4217: 8 % less the ad valorem credit (our payors)\n"
        "WY,oil,severance,percent,6,,W.S. 39-14-204(a)\n"
        "WY,oil,severance,percent,4,stripper,W.S. 39-14-205(a)\n",
        encoding="utf-8",
    )
    (tmp_path / "well_status.csv").write_text("well_id,status\nW-S,stripper\n", encoding="utf-8")
    table = rates_for(tmp_path)
    ks = table.due(Well("W", "KS", ""), "oil", "2026-11", D("1000"), D("10"))
    assert isinstance(ks, Due) and ks.amount == D("43.3")
    strip = table.due(Well("W-S", "WY", ""), "oil", "2026-11", D("1000"), D("10"))
    assert isinstance(strip, Due) and strip.amount == D("40")
    (tmp_path / "severance_rates.csv").write_text(
        "state,product,basis,rate,source\nKS,crude,percent,x,\n", encoding="utf-8"
    )
    with pytest.raises(DataError) as bad:
        rates_for(tmp_path)
    assert "line 2, column product" in str(bad.value) and "column rate" in str(bad.value)
    assert "column source" in str(bad.value)


# -- a January of NM, WY and KS wells -------------------------------------------------------------

DOI = """\
well_id,well_name,state,operator,operator_property_no,wi,nri,royalty,orri,effective_from,first_prod_month
W-A,Alpha 1H,TX,Acme Operating,AC-1,0.50000000,0.40000000,0.20000000,0.00000000,2020-01-01,2020-01
W-N,Navajo 3H,NM,Acme Operating,AC-2,0.25000000,0.20000000,0.20000000,0.00000000,2020-01-01,2018-01
W-W,Wind River 4H,WY,Acme Operating,AC-3,0.50000000,0.40000000,0.20000000,0.00000000,2020-01-01,2017-01
W-K,Kiowa 5H,KS,Acme Operating,AC-4,0.50000000,0.40000000,0.20000000,0.00000000,2020-01-01,2016-01
"""
# NM oil withheld at a Texas rate (4.6 %); the KS check withheld 5 %
REVENUE = """\
check_no,payor,property_no,well_id,sale_month,product,gross_volume,price,gross_value,gross_taxes,gross_deductions,owner_decimal,owner_net_value
CHK-7,Acme Marketing,AC-1,W-A,2026-11,oil,1000,70.00,70000.00,3220.00,0.00,0.40000000,26712.00
CHK-7,Acme Marketing,AC-2,W-N,2026-11,oil,1000,70.00,70000.00,3220.00,0.00,0.20000000,13356.00
CHK-7,Acme Marketing,AC-3,W-W,2026-11,oil,1000,70.00,70000.00,4200.00,0.00,0.40000000,26320.00
CHK-7,Acme Marketing,AC-4,W-K,2026-11,oil,1000,70.00,70000.00,3500.00,0.00,0.40000000,26600.00
"""
HISTORY = """\
check_no,payor,property_no,well_id,sale_month,product,gross_volume,price,gross_value,gross_taxes,gross_deductions,owner_decimal,owner_net_value
CHK-6,Acme Marketing,AC-1,W-A,2026-10,oil,1000,69.00,69000.00,3174.00,0.00,0.40000000,26330.40
CHK-6,Acme Marketing,AC-2,W-N,2026-10,oil,1000,69.00,69000.00,4926.60,0.00,0.20000000,12814.68
CHK-6,Acme Marketing,AC-3,W-W,2026-10,oil,1000,69.00,69000.00,4140.00,0.00,0.40000000,25944.00
CHK-6,Acme Marketing,AC-4,W-K,2026-10,oil,1000,69.00,69000.00,3450.00,0.00,0.40000000,26220.00
"""
PRODUCTION = """\
well_id,month,product,volume
W-A,2026-11,oil,1000
W-N,2026-11,oil,1000
W-W,2026-11,oil,1000
W-K,2026-11,oil,1000
W-A,2026-12,oil,1000
W-N,2026-12,oil,900
W-N,2026-12,gas,20000
W-W,2026-12,oil,800
W-K,2026-12,oil,700
"""
# WTI averaged $72 over 2026-Q3: New Mexico's conservation tax on oil is 0.24 % in Q4
PRICES = """\
month,product,benchmark_price,differential
2026-07,oil,71.00,1.00
2026-08,oil,72.00,1.00
2026-09,oil,73.00,1.00
2026-11,oil,71.00,1.00
2026-12,oil,72.00,2.00
2026-12,gas,3.10,0.30
"""
JIB = """\
operator,invoice_no,service_month,property_no,well_id,afe_no,cost_category,description,gross_amount,owner_decimal,owner_net_amount
Acme Operating,ACME-1226,2026-12,AC-1,W-A,,LOE,Lease operating expense,10000.00,0.50000000,5000.00
"""
JIB_HISTORY = """\
operator,invoice_no,service_month,well_id,cost_category,gross_amount,owner_decimal,owner_net_amount
Acme Operating,ACME-1026,2026-10,W-A,LOE,9000.00,0.50000000,4500.00
Acme Operating,ACME-1126,2026-11,W-A,LOE,9500.00,0.50000000,4750.00
"""
JOA = """\
operator,well_id,overhead_producing,overhead_drilling,effective_from
Acme Operating,W-A,1000.00,0.00,2020-01-01
"""
ACCRUALS = "kind,well_id,product_or_category,month,amount\nloe,W-A,LOE,2026-12,4750.00\n"
TB = """\
month,account,account_name,debit,credit
2026-12,1050,Cash,92000.00,0.00
2026-12,6110,Severance Tax Expense,6200.00,0.00
2026-12,6210,Lease Operating Expense,4750.00,0.00
2026-12,4010,Oil Revenue,0.00,98000.00
"""
# the statutes, written out: NM oil 3.75 + 3.15 + 0.24 (after a quarter over $70), NM gas
# 3.75 + 4 + 0.19, WY 6 %, TX 4.6 %
STATUTE = {("NM", "oil"): D("0.0714"), ("NM", "gas"): D("0.0794"), ("WY", "oil"): D("0.06")}
STATUTE |= {("TX", "oil"): D("0.046")}


@pytest.fixture
def january(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    write_period(
        root, PERIOD, doi=DOI, revenue=REVENUE, revenue_history=HISTORY, production=PRODUCTION,
        prices=PRICES, jib=JIB, jib_history=JIB_HISTORY, joa=JOA, accruals=ACCRUALS,
        tb_activity=TB,
    )  # fmt: skip
    return root


def test_january_books_nm_and_wy_by_the_table_and_asks_for_kansas(
    january: Path, tmp_path: Path
) -> None:
    run = close_run(january, tmp_path / "c.db", PERIOD)
    kinds = {e["details"]["ref"]: e for e in run.exceptions()}
    # NM oil withheld at a Texas rate: 4.6 % where New Mexico levies 7.14 % — asked
    nm = kinds["severance:W-N"]
    owed = r2((D("3220.00") - r2(D("70000") * STATUTE[("NM", "oil")])) * D("0.2"))
    assert owed < 0 and D(nm["details"]["facts"]["total"]) == owed
    assert (
        "NM oil severance 3.75 % + emergency school 3.15 % + conservation 0.24 %"
        in nm["details"]["question"]
    )
    # WY withheld 6 % and TX 4.6 %: as the statutes say, nothing asked
    assert "severance:W-W" not in kinds and "severance:W-A" not in kinds
    # Kansas has no row: asked in the severance check and in the accrual, never zero
    assert "severance_no_rate:W-K" in kinds
    assert "no row for KS oil" in kinds["severance_no_rate:W-K"]["details"]["question"]
    ks = kinds["accrual_no_rate:W-K:2026-12"]
    assert ks["resolution"] == "last_rate"  # the recommendation: the last check's 5 %
    lines = run.lines()

    def accrued(well: str, account: str, product: str = "") -> Decimal:
        # the receivable is one line per well (its ref lists the products)
        mark = f"{well}:{product}:2026-12" if product else f"{well}:"
        return sum(
            (
                x["debit"] - x["credit"]
                for x in lines
                if mark in x["ref"] and x["account"] == account
            ),
            D(0),
        )

    nri = {"W-A": D("0.4"), "W-N": D("0.2"), "W-W": D("0.4"), "W-K": D("0.4")}
    state = {"W-A": "TX", "W-N": "NM", "W-W": "WY", "W-K": "KS"}
    volumes = {("W-A", "oil"): 1000, ("W-N", "oil"): 900, ("W-N", "gas"): 20000}
    volumes |= {("W-W", "oil"): 800, ("W-K", "oil"): 700}
    net_price = {"oil": D("70.00"), "gas": D("2.80")}
    receivable: dict[str, Decimal] = {}
    for (well, product), volume in volumes.items():
        value = D(volume) * net_price[product]
        revenue = r2(value * nri[well])
        withheld = STATUTE.get((state[well], product), D("3450") / D("69000"))  # KS: last check
        severance = r2(value * withheld * nri[well])
        assert severance > 0
        assert accrued(well, "6110", product) == severance, (well, product)
        assert -accrued(well, "4010" if product == "oil" else "4020", product) == revenue
        receivable[well] = receivable.get(well, D(0)) + revenue - severance
    for well, total in receivable.items():
        assert accrued(well, "1210") == total, well
    # an open item to add the Kansas row, from both questions
    items = " ".join(i["text"] for i in run.ledger.open_items(run.run_id))
    assert "add the severance rate for KS oil" in items


def test_data_check_names_a_state_without_a_row_and_is_not_ok(january: Path) -> None:
    checked = closebot("data", "check", str(january), PERIOD)
    assert "2027-01: ok" not in checked.stdout
    assert checked.returncode == 2, checked.stdout
    assert "no row for KS oil" in checked.stdout and "W-K" in checked.stdout
    assert "W-N" not in checked.stdout and "W-W" not in checked.stdout

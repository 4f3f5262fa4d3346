"""A small, clean, hand-made close period (two wells, one operator) that tests mutate."""

from __future__ import annotations

from pathlib import Path

PERIOD = "2026-10"

FILES: dict[str, str] = {
    "doi.csv": """\
well_id,well_name,state,operator,operator_property_no,wi,nri,royalty,orri,effective_from,first_prod_month
W-A,Alpha 1H,TX,Acme Operating,AC-1,0.50000000,0.40000000,0.20000000,0.00000000,2020-01-01,2020-01
W-B,Bravo 2H,OK,Acme Operating,AC-2,0.25000000,0.20312500,0.18750000,0.00000000,2020-01-01,2018-01
""",
    "jib.csv": """\
operator,invoice_no,service_month,property_no,well_id,afe_no,cost_category,description,gross_amount,owner_decimal,owner_net_amount
Acme Operating,ACME-0926,2026-09,AC-1,W-A,,LOE,Lease operating expense,10000.00,0.50000000,5000.00
Acme Operating,ACME-0926,2026-09,AC-1,W-A,,Overhead,Producing overhead,1000.00,0.50000000,500.00
Acme Operating,ACME-0926,2026-09,AC-2,,,LOE,Lease operating expense,8000.00,0.25000000,2000.00
Acme Operating,ACME-0926,2026-09,AC-2,,,Overhead,Producing overhead,1000.00,0.25000000,250.00
""",
    "revenue.csv": """\
check_no,payor,property_no,well_id,sale_month,product,gross_volume,price,gross_value,gross_taxes,gross_deductions,owner_decimal,owner_net_value
CHK-1,Acme Marketing,AC-1,W-A,2026-08,oil,1000,70.00,70000.00,3220.00,0.00,0.40000000,26712.00
CHK-1,Acme Marketing,AC-2,W-B,2026-08,oil,500,70.00,35000.00,2450.00,0.00,0.20312500,6611.72
""",
    "jib_history.csv": """\
operator,invoice_no,service_month,well_id,cost_category,gross_amount,owner_decimal,owner_net_amount
Acme Operating,ACME-0726,2026-07,W-A,LOE,9000.00,0.50000000,4500.00
Acme Operating,ACME-0726,2026-07,W-A,Overhead,1000.00,0.50000000,500.00
Acme Operating,ACME-0726,2026-07,W-B,LOE,7000.00,0.25000000,1750.00
Acme Operating,ACME-0826,2026-08,W-A,LOE,9500.00,0.50000000,4750.00
Acme Operating,ACME-0826,2026-08,W-A,Overhead,1000.00,0.50000000,500.00
Acme Operating,ACME-0826,2026-08,W-B,LOE,7500.00,0.25000000,1875.00
""",
    "revenue_history.csv": """\
check_no,payor,property_no,well_id,sale_month,product,gross_volume,price,gross_value,gross_taxes,gross_deductions,owner_decimal,owner_net_value
CHK-0,Acme Marketing,AC-1,W-A,2026-07,oil,1000,69.00,69000.00,3174.00,0.00,0.40000000,26330.40
CHK-0,Acme Marketing,AC-2,W-B,2026-07,oil,500,69.00,34500.00,2415.00,0.00,0.20312500,6517.27
""",
    "production.csv": """\
well_id,month,product,volume
W-A,2026-09,oil,1000
W-B,2026-09,oil,500
""",
    "prices.csv": """\
month,product,benchmark_price,differential
2026-09,oil,72.00,2.00
""",
    "afe.csv": "afe_no,well_id,description,approved_gross,billed_to_date_gross\n",
    "joa.csv": """\
operator,well_id,overhead_producing,overhead_drilling,effective_from
Acme Operating,W-A,1000.00,0.00,2020-01-01
Acme Operating,W-B,1000.00,0.00,2020-01-01
""",
    "accruals.csv": """\
kind,well_id,product_or_category,month,amount
loe,W-A,LOE,2026-09,4500.00
revenue,W-A,oil,2026-08,25000.00
""",
    "tb_activity.csv": """\
month,account,account_name,debit,credit
2026-09,1050,Cash,30200.00,0.00
2026-09,6110,Severance Tax Expense,3500.00,0.00
2026-09,6210,Lease Operating Expense,9000.00,0.00
2026-09,6250,Operator Overhead,1300.00,0.00
2026-09,4010,Oil Revenue,0.00,44000.00
""",
}


def write_period(root: Path, period: str = PERIOD, **replace: str) -> Path:
    """Write the clean period under root/period; `replace` swaps whole files (name without .csv)."""
    folder = root / period
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (folder / name).write_text(replace.get(name[:-4], text), encoding="utf-8")
    return folder


def edit(folder: Path, name: str, old: str, new: str) -> None:
    """Replace one piece of a file's text (exactly once)."""
    path = folder / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} is not once in {name}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def append(folder: Path, name: str, row: str) -> None:
    with (folder / name).open("a", encoding="utf-8") as f:
        f.write(row.rstrip("\n") + "\n")

"""Generate a month of close data at any size, in closebot's own eleven-file layout.

    python bench/genmonth.py OUT --jib-lines 20000 [--seed 7] [--clean] [--period 2026-10] [--alike N] [--distinct N]

writes `OUT/<period>/` (the eleven CSV files of CLOSE.md) and `OUT/planted.json` (the
exceptions planted in the month: the refs closebot should ask about, and nothing else).

The month is built to be clean by construction: every line's arithmetic holds to the cent,
decimals match the DOI in force, severance is at the state rate, overhead at the JOA rate,
AFEs under their approval, every operator bills and every payor pays, accruals are above
materiality, and last month's trial balance is this month's activity within a few percent.
Unless `--clean`, five exceptions are planted, one of each kind: a JIB line already billed
(jib_history), a JIB billing the wrong WI on one well, a line naming an unknown property,
a stub withholding severance above the state rate, and overhead above the JOA rate.
`--distinct N` bills N wells (the planted one among them) at a wrong WI: N exceptions, each
its own question. `--alike N` plants, besides, many alike of two kinds on N wells of one other operator: each
bills a line already billed, and withholds severance above the rate (one question each).

About 17 JIB lines and 9–10 revenue stub lines per well per month, 24 months of history
(one booked line per well × category and per well × product × month), ten operators in
TX, OK and ND. Money is computed with Decimal, so the files hold exactly what closebot's
checks recompute.

Each file is written as its rows are made (the 200,000-line month is 1.7 million rows): only
the wells, prices and volumes are held, not the rows.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import TextIO

CENT = Decimal("0.01")
D8 = Decimal("0.00000001")
HISTORY_MONTHS = 24
LINES_PER_WELL = 17.1

OPERATORS = (  # name, property code, state
    ("Permian Ridge Operating LLC", "PRO", "TX"),
    ("Caprock Energy Partners", "CEP", "TX"),
    ("Lone Star Petroleum Co.", "LSP", "TX"),
    ("Delaware Basin Operating LP", "DBO", "TX"),
    ("Red Fork Resources Inc.", "RFR", "OK"),
    ("Cimarron Operating LLC", "CIM", "OK"),
    ("Anadarko Shelf Energy", "ASE", "OK"),
    ("Bakken Prairie Oil Co.", "BPO", "ND"),
    ("Williston Hills Energy", "WHE", "ND"),
    ("Missouri Breaks Resources", "MBR", "ND"),
)
OVERHEAD = {"TX": Decimal("1450.00"), "OK": Decimal("1275.00"), "ND": Decimal("1600.00")}
LOE_ITEMS = (
    "Pumper services",
    "Chemical treating",
    "Saltwater disposal",
    "Electricity",
    "Rental equipment",
    "Compression",
    "Roustabout labor",
    "Road and location maintenance",
    "Fuel and power",
    "Well testing",
    "Supervision",
    "Insurance allocation",
    "Contract labor",
    "Trucking",
    "Tank cleaning",
    "Measurement and metering",
    "Repairs and maintenance",
    "Field office allocation",
    "Environmental compliance",
    "Gathering line repair",
)
CAPEX = (("IDC", "Drilling - intangible costs"), ("ICC", "Completion - intangible costs"))
BENCHMARK = {"oil": Decimal("72.00"), "gas": Decimal("3.10"), "ngl": Decimal("25.50")}
DIFFERENTIAL = {"oil": Decimal("1.40"), "gas": Decimal("0.35"), "ngl": Decimal("1.20")}
RATE = {  # severance, the state table of CLOSE.md
    ("TX", "oil"): Decimal("0.046"),
    ("TX", "gas"): Decimal("0.075"),
    ("TX", "ngl"): Decimal("0.075"),
    ("OK", "oil"): Decimal("0.07"),
    ("OK", "gas"): Decimal("0.07"),
    ("OK", "ngl"): Decimal("0.07"),
    ("ND", "oil"): Decimal("0.10"),
    ("ND", "ngl"): Decimal("0.10"),
}
ND_GAS_PER_UNIT = Decimal("0.0905")
REVENUE_ACCOUNT = {
    "oil": ("4010", "Oil Revenue"),
    "gas": ("4020", "Gas Revenue"),
    "ngl": ("4030", "NGL Revenue"),
}


def cents(d: Decimal) -> Decimal:
    return d.quantize(CENT, rounding=ROUND_HALF_UP)


def add_months(month: str, n: int) -> str:
    year, mon = (int(x) for x in month.split("-"))
    index = year * 12 + mon - 1 + n
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def months_between(start: str, end: str) -> int:
    y1, m1 = (int(x) for x in start.split("-"))
    y2, m2 = (int(x) for x in end.split("-"))
    return (y2 * 12 + m2) - (y1 * 12 + m1)


def severance(
    state: str, product: str, first_prod: str, month: str, value: Decimal, volume: Decimal
) -> Decimal:
    """The 8/8ths tax at the state rate (OK: 5 % for the first 36 months; ND gas per unit)."""
    if (state, product) == ("ND", "gas"):
        return cents(volume * ND_GAS_PER_UNIT)
    rate = RATE[(state, product)]
    if state == "OK" and 1 <= months_between(first_prod, month) + 1 <= 36:
        rate = Decimal("0.05")
    return cents(value * rate)


@dataclass
class Well:
    well_id: str
    name: str
    state: str
    operator: str
    code: str
    property_no: str
    wi: Decimal
    royalty: Decimal
    orri: Decimal
    first_prod: str
    products: dict[str, int]  # product → base monthly volume
    splits: dict[str, int]  # product → stub lines per month
    deduction: dict[str, Decimal]  # product → deductions as a share of value
    loe: Decimal  # base monthly LOE gross
    earlier_wi: Decimal | None = None  # a DOI row in force before `changed`
    changed: str = ""
    volumes: dict[tuple[str, str], int] = field(default_factory=dict)  # (product, month)
    loe_by_month: dict[str, Decimal] = field(default_factory=dict)

    @property
    def nri(self) -> Decimal:
        return nri_of(self.wi, self)

    def wi_in(self, month: str) -> Decimal:
        if self.earlier_wi is not None and f"{month}-01" < self.changed:
            return self.earlier_wi
        return self.wi

    def nri_in(self, month: str) -> Decimal:
        return nri_of(self.wi_in(month), self)


def nri_of(wi: Decimal, well: Well) -> Decimal:
    return (wi * (1 - well.royalty - well.orri)).quantize(D8, rounding=ROUND_HALF_UP)


class Month:
    """One generated period: the wells, prices and every file's rows."""

    def __init__(
        self, period: str, jib_lines: int, seed: int, clean: bool, alike: int = 0, distinct: int = 0
    ) -> None:
        self.period = period
        self.alike = alike
        self.distinct = distinct
        self.service = add_months(period, -1)  # the JIB service month; production accrued
        self.sale = add_months(period, -2)  # the sale month this month's checks pay
        self.rng = random.Random(seed)
        self.clean = clean
        self.n_lines = jib_lines
        self.n_wells = max(12, round(jib_lines / LINES_PER_WELL))
        self.history = [add_months(period, -k) for k in range(HISTORY_MONTHS + 1, 1, -1)]
        self.prices = self._prices()
        self.wells = [self._well(i) for i in range(self.n_wells)]
        self.planted: list[dict[str, str]] = []
        self.rows: dict[str, int] = {}  # rows written per file
        self.folder = Path()

    # -- master data --------------------------------------------------------------

    def _prices(self) -> dict[tuple[str, str], Decimal]:
        out = {}
        for product, base in BENCHMARK.items():
            price = base
            for k in range(HISTORY_MONTHS + 3, 0, -1):
                month = add_months(self.period, -k)
                drift = Decimal(self.rng.randint(-12, 12)) / 1000  # ±1.2 % a month
                price = (
                    cents(price * (1 + drift))
                    if product != "gas"
                    else (price * (1 + drift)).quantize(Decimal("0.001"))
                )
                out[(month, product)] = price
        return out

    def net_price(self, month: str, product: str) -> Decimal:
        return self.prices[(month, product)] - DIFFERENTIAL[product]

    def _well(self, i: int) -> Well:
        rng = self.rng
        name, code, state = OPERATORS[i % len(OPERATORS)]
        n = i // len(OPERATORS) + 1
        wi = Decimal(rng.randint(1500, 60000)) / 100000
        royalty = rng.choice(
            (Decimal("0.125"), Decimal("0.1875"), Decimal("0.20"), Decimal("0.25"))
        )
        orri = rng.choice((Decimal("0"), Decimal("0"), Decimal("0.01"), Decimal("0.02")))
        nri = (wi * (1 - royalty - orri)).quantize(D8, rounding=ROUND_HALF_UP)
        gas_well = rng.random() < 0.25
        products: dict[str, int] = {}
        # volumes big enough that each month accrues above the $2,500 materiality threshold
        if gas_well:
            products["gas"] = max(rng.randint(20000, 250000), int(6000 / (Decimal("2.6") * nri)))
            products["ngl"] = rng.randint(300, 3000)
        else:
            products["oil"] = max(rng.randint(400, 9000), int(6000 / (Decimal("68") * nri)))
            products["gas"] = rng.randint(2000, 30000)
            if state != "ND" or rng.random() < 0.5:
                products["ngl"] = rng.randint(100, 1500)
        well = Well(
            well_id=f"W-{state}-{n:05d}{code[0]}",
            name=f"{rng.choice(SURNAMES)} {rng.randint(1, 36)}-{rng.randint(1, 12)}H",
            state=state,
            operator=name,
            code=code,
            property_no=f"{code}-{40000 + n}",
            wi=wi,
            royalty=royalty,
            orri=orri,
            first_prod=add_months(self.period, -rng.randint(30, 140)),
            products=products,
            splits={p: rng.choice((2, 3, 3, 4, 4, 5)) for p in products},
            deduction={
                p: (
                    Decimal(rng.randint(0, 12)) / 100
                    if p != "oil"
                    else Decimal(rng.choice((0, 0, 2))) / 100
                )
                for p in products
            },
            loe=Decimal(rng.randint(6000, 70000)),
        )
        if rng.random() < 0.05:  # an assignment long ago: an earlier DOI row
            well.earlier_wi = (wi * Decimal("0.8")).quantize(Decimal("0.00001"))
            well.changed = f"{add_months(self.period, -rng.randint(30, 60))}-01"
        for product, base in products.items():
            for k in range(HISTORY_MONTHS + 2, 0, -1):
                month = add_months(self.period, -k)
                well.volumes[(product, month)] = max(
                    1, int(base * (1 + rng.uniform(-0.025, 0.025)))
                )
        for k in range(HISTORY_MONTHS + 2, 0, -1):
            month = add_months(self.period, -k)
            well.loe_by_month[month] = cents(well.loe * Decimal(1 + rng.uniform(-0.03, 0.03)))
        return well

    # -- the files ----------------------------------------------------------------

    def build(self, folder: Path) -> None:
        """Write the eleven files into `folder`, each as its rows are made."""
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        with Rows(self, "doi.csv") as rows:
            self._doi(rows)
        with Rows(self, "joa.csv") as rows:
            rows.extend(
                [
                    w.operator,
                    w.well_id,
                    str(OVERHEAD[w.state]),
                    str(OVERHEAD[w.state] * 8),
                    "2015-01-01",
                ]
                for w in self.wells
            )
        with Rows(self, "prices.csv") as rows:
            rows.extend(
                [m, p, str(price), str(DIFFERENTIAL[p])]
                for (m, p), price in sorted(self.prices.items())
            )
        with Rows(self, "production.csv") as rows:
            rows.extend(
                [w.well_id, m, p, str(w.volumes[(p, m)])]
                for w in self.wells
                for m in (add_months(self.period, -3), self.sale, self.service)
                for p in w.products
            )
        with Rows(self, "jib_history.csv") as rows:
            self._jib_history(rows)
        with Rows(self, "revenue_history.csv") as rows:
            self._revenue_history(rows)
        with Rows(self, "jib.csv") as rows, Rows(self, "afe.csv") as afes:
            self._jib(rows, afes)
        with Rows(self, "revenue.csv") as rows:
            self._revenue(rows)
        with Rows(self, "accruals.csv") as rows:
            self._accruals(rows)
        with Rows(self, "tb_activity.csv") as rows:
            self._tb(rows)

    def written(self, name: str) -> Iterator[list[str]]:
        """A file's rows as written (read back: the rows are not held)."""
        with (self.folder / name).open(newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            next(reader)
            yield from reader

    def _doi(self, rows: Rows) -> None:
        for w in self.wells:
            common = [w.well_id, w.name, w.state, w.operator, w.property_no]
            tail = [f"{w.royalty:.8f}", f"{w.orri:.8f}"]
            if w.earlier_wi is not None:
                rows.append(
                    [
                        *common,
                        f"{w.earlier_wi:.8f}",
                        f"{nri_of(w.earlier_wi, w):.8f}",
                        *tail,
                        "2014-01-01",
                        w.first_prod,
                    ]
                )
            rows.append(
                [
                    *common,
                    f"{w.wi:.8f}",
                    f"{w.nri:.8f}",
                    *tail,
                    w.changed or "2014-01-01",
                    w.first_prod,
                ]
            )

    def _jib_history(self, rows: Rows) -> None:
        # the LOE lines of the month a planted duplicate bills again: (well, month) → line
        self.history_loe: dict[tuple[str, str], tuple[int, str, Decimal]] = {}
        duplicate_month = add_months(self.period, -2)
        for month in self.history:
            yymm = month[2:4] + month[5:7]
            for w in self.wells:
                dec = w.wi_in(month)
                invoice = f"{w.code}-JIB-{yymm}-{int(w.property_no[-5:]) // 200 + 1:03d}"
                for category, gross in (
                    ("LOE", w.loe_by_month[month]),
                    ("Overhead", OVERHEAD[w.state]),
                ):
                    rows.append(
                        [
                            w.operator,
                            invoice,
                            month,
                            w.well_id,
                            category,
                            str(gross),
                            f"{dec:.8f}",
                            str(cents(gross * dec)),
                        ]
                    )
                    if category == "LOE" and month == duplicate_month:
                        self.history_loe[(w.well_id, month)] = (len(rows) + 1, invoice, gross)

    def _stub(
        self,
        w: Well,
        month: str,
        product: str,
        volume: int,
        decimal: Decimal,
        extra_tax: Decimal = Decimal(0),
    ) -> list[str]:
        price = self.net_price(month, product)
        value = cents(volume * price)
        taxes = severance(w.state, product, w.first_prod, month, value, Decimal(volume))
        taxes += cents(value * extra_tax)
        deductions = cents(value * w.deduction[product])
        net = cents((value - taxes - deductions) * decimal)
        payor = f"{w.operator.split(' ')[0]} {'Crude Purchasing' if product == 'oil' else 'Gas Marketing'}"
        check = f"CHK-{w.code}-{month[2:4]}{month[5:7]}-{'O' if product == 'oil' else 'G'}"
        return [
            check,
            payor,
            w.property_no,
            w.well_id,
            month,
            product,
            str(volume),
            str(price),
            str(value),
            str(taxes),
            str(deductions),
            f"{decimal:.8f}",
            str(net),
        ]

    def _revenue_history(self, rows: Rows) -> None:
        rows.extend(
            self._stub(w, month, p, w.volumes[(p, month)], w.nri_in(month))
            for month in [add_months(self.period, -k) for k in range(HISTORY_MONTHS + 2, 2, -1)]
            for w in self.wells
            for p in w.products
        )

    def _jib(self, rows: Rows, afes: Rows) -> None:
        rng = self.rng
        wells = self.wells
        afe_wells = rng.sample(range(len(wells)), max(1, len(wells) // 100))
        workover = set(rng.sample(range(len(wells)), max(1, len(wells) // 25)))
        fixed = len(wells) + 2 * len(afe_wells) + 2 * len(workover)  # overhead, capex, workover
        loe_lines = max(len(wells), self.n_lines - fixed - (0 if self.clean else 2))
        counts = [1] * len(wells)
        for _ in range(loe_lines - len(wells)):
            counts[rng.randrange(len(wells))] += 1
        planted = (
            {}
            if self.clean
            else dict(
                zip(
                    ("wi", "overhead", "duplicate", "unknown"),
                    rng.sample(range(len(wells)), 4),
                    strict=True,
                )
            )
        )
        # --alike N: N wells of one operator (none planted above) each bill a line again and
        # withhold severance above the state rate: many alike exceptions of one kind each
        busy = {i % len(OPERATORS) for i in planted.values()}
        op = next((k for k in range(len(OPERATORS)) if k not in busy), 0)
        self.alike_wells = [i for i in range(op, len(wells), len(OPERATORS))][: self.alike]
        # --distinct N: N wells (the planted one among them) each billed at a wrong WI: N
        # exceptions that are each their own question (wi_nri never groups)
        others = [i for i in range(len(wells)) if i not in planted.values()]
        others = [i for i in others if i not in self.alike_wells]
        wi_wells = {planted["wi"]} if "wi" in planted else set()
        wi_wells |= set(rng.sample(others, min(len(others), max(0, self.distinct - len(wi_wells)))))
        yymm = self.service[2:4] + self.service[5:7]
        for i, w in enumerate(wells):
            invoice = f"{w.code}-JIB-{yymm}-{int(w.property_no[-5:]) // 200 + 1:03d}"
            dec = w.wi_in(self.service)
            if i in wi_wells:
                dec = dec + Decimal("0.025")
                self.planted.append(
                    {
                        "ref": f"wi_nri:{w.well_id}",
                        "what": f"JIB bills WI {dec} on {w.well_id}, DOI {w.wi}",
                    }
                )
            well_id = "" if rng.random() < 0.1 else w.well_id  # mapped through the property number
            line = [w.operator, invoice, self.service, w.property_no, well_id]

            def add(
                category: str,
                description: str,
                gross: Decimal,
                afe: str = "",
                line: list[str] = line,
                dec: Decimal = dec,
            ) -> None:
                rows.append(
                    [
                        *line,
                        afe,
                        category,
                        description,
                        str(gross),
                        f"{dec:.8f}",
                        str(cents(gross * dec)),
                    ]
                )

            amounts = _split_amount(w.loe_by_month[self.service], counts[i], rng)
            for k, gross in enumerate(amounts):
                add("LOE", f"{LOE_ITEMS[k % len(LOE_ITEMS)]} - {self.service}", gross)
            overhead = OVERHEAD[w.state]
            if planted.get("overhead") == i:
                overhead += Decimal("150.00")
                self.planted.append(
                    {
                        "ref": f"overhead_rate:{invoice}",
                        "what": f"overhead {overhead} vs JOA {OVERHEAD[w.state]} on {w.well_id}",
                    }
                )
            add("Overhead", "COPAS producing well overhead", overhead)
            if i in workover:
                for item in ("Rig time", "Rod pump replacement"):
                    add(
                        "Workover",
                        item,
                        Decimal(rng.randint(2000, 9000)) + Decimal(rng.randint(0, 99)) / 100,
                    )
            if i in afe_wells:
                afe_no = f"AFE-{w.code}-{self.period[:4]}-{i:05d}"
                approved = Decimal(rng.randint(400, 900)) * 1000
                billed = cents(approved * Decimal("0.6"))
                this = [cents(approved * Decimal("0.2")), cents(approved * Decimal("0.15"))]
                for (category, description), gross in zip(CAPEX, this, strict=True):
                    add(category, description, gross, afe_no)
                afes.append(
                    [afe_no, w.well_id, f"{w.name} recompletion", str(approved), str(billed)]
                )
            if planted.get("duplicate") == i or i in self.alike_wells:
                month = add_months(self.period, -2)
                hist_line, hist_invoice, gross = self.history_loe[(w.well_id, month)]
                rows.append(
                    [
                        w.operator,
                        hist_invoice,
                        month,
                        w.property_no,
                        w.well_id,
                        "",
                        "LOE",
                        f"Lease operating expense - {month}",
                        str(gross),
                        f"{w.wi_in(month):.8f}",
                        str(cents(gross * w.wi_in(month))),
                    ]
                )
                self.planted.append(
                    {
                        "ref": f"duplicate:{len(rows) + 1}",
                        "what": f"{hist_invoice} LOE {gross} for {month} again (jib_history.csv line {hist_line})",
                    }
                )
            if planted.get("unknown") == i:
                gross = Decimal("3150.00")
                rows.append(
                    [
                        w.operator,
                        invoice,
                        self.service,
                        f"{w.code}-99999",
                        "",
                        "",
                        "LOE",
                        "Lease operating expense - new pad",
                        str(gross),
                        f"{dec:.8f}",
                        str(cents(gross * dec)),
                    ]
                )
                self.planted.append(
                    {
                        "ref": f"unknown_property:jib:{len(rows) + 1}",
                        "what": f"property {w.code}-99999 is in no DOI row",
                    }
                )

    def _revenue(self, rows: Rows) -> None:
        rng = self.rng
        planted = None if self.clean else rng.randrange(len(self.wells))
        alike_operator = {i % len(OPERATORS) for i in self.alike_wells}
        while planted is not None and planted % len(OPERATORS) in alike_operator:
            planted = (planted + 1) % len(self.wells)  # the one planted stays on its own
        for i, w in enumerate(self.wells):
            for p in w.products:
                total = w.volumes[(p, self.sale)]
                parts = _split_volume(total, w.splits[p])
                for k, volume in enumerate(parts):
                    extra = (
                        Decimal("0.015")
                        if (i == planted or i in self.alike_wells)
                        and k == 0
                        and p == next(iter(w.products))
                        else Decimal(0)
                    )
                    row = self._stub(w, self.sale, p, volume, w.nri_in(self.sale), extra)
                    if rng.random() < 0.1:
                        row[3] = ""  # mapped through the property number
                    rows.append(row)
                    if extra:
                        self.planted.append(
                            {
                                "ref": f"severance:{w.well_id}",
                                "what": f"{p} severance 1.5 points over the state rate on {w.well_id}",
                            }
                        )

    def _accruals(self, rows: Rows) -> None:
        """Last month's accruals as that close would have booked them."""
        trailing = [add_months(self.period, -k) for k in (4, 3, 2)]
        for w in self.wells:
            wi = w.wi_in(self.service)
            avg = sum((w.loe_by_month[m] for m in trailing), Decimal(0)) / 3
            rows.append(["loe", w.well_id, "LOE", self.service, str(cents(avg * wi))])
            rows.append(
                ["loe", w.well_id, "Overhead", self.service, str(cents(OVERHEAD[w.state] * wi))]
            )
            for p in w.products:
                value = cents(
                    w.volumes[(p, self.sale)] * self.net_price(self.sale, p) * w.nri_in(self.sale)
                )
                rows.append(["revenue", w.well_id, p, self.sale, str(value)])

    def _tb(self, out: Rows) -> None:
        """Last month's P&L activity: this month's as closebot will book it, within ±3 %."""
        rng = self.rng
        activity: dict[str, Decimal] = {}  # account → debit − credit

        def book(account: str, amount: Decimal) -> None:
            activity[account] = activity.get(account, Decimal(0)) + amount

        for row in self.written("revenue.csv"):
            dec = Decimal(row[11])
            taxes, deductions = Decimal(row[9]), Decimal(row[10])
            owner_taxes, owner_ded = cents(taxes * dec), cents(deductions * dec)
            book(REVENUE_ACCOUNT[row[5]][0], -(Decimal(row[12]) + owner_taxes + owner_ded))
            book("6110", owner_taxes)
            book("6130", owner_ded)
        for w in self.wells:  # this month's accrual of the service month's production
            for p in w.products:
                volume = w.volumes[(p, self.service)]
                net_price = self.net_price(self.service, p)
                book(REVENUE_ACCOUNT[p][0], -cents(volume * net_price * w.nri))
                tax = severance(
                    w.state, p, w.first_prod, self.service, volume * net_price, Decimal(volume)
                )
                book("6110", cents(tax * w.nri))
            trailing = [add_months(self.period, -k) for k in (3, 2, 1)]
            book("6210", cents(sum((w.loe_by_month[m] for m in trailing), Decimal(0)) / 3 * w.wi))
            book("6250", cents(OVERHEAD[w.state] * w.wi))
        for row in self.written("accruals.csv"):
            if row[0] == "revenue":
                book(REVENUE_ACCOUNT[row[2]][0], Decimal(row[4]))
            else:
                book("6210" if row[2] == "LOE" else "6250", -Decimal(row[4]))
        for row in self.written("jib.csv"):
            account = {"LOE": "6210", "Overhead": "6250", "Workover": "6220"}.get(row[6])
            if account:
                book(account, Decimal(row[10]))
        names = {
            "6110": "Severance Tax Expense",
            "6130": "Gathering & Transportation",
            "6210": "Lease Operating Expense",
            "6220": "Workover Expense",
            "6250": "Operator Overhead",
        }
        names |= {a: n for a, n in REVENUE_ACCOUNT.values()}
        rows = []
        total = Decimal(0)
        for account in sorted(activity):
            amount = cents(activity[account] * Decimal(1 + rng.uniform(-0.03, 0.03)))
            total += amount
            debit, credit = (amount, Decimal(0)) if amount > 0 else (Decimal(0), -amount)
            rows.append([self.service, account, names[account], f"{debit:.2f}", f"{credit:.2f}"])
        debit, credit = (Decimal(0), total) if total > 0 else (-total, Decimal(0))
        rows.insert(
            0, [self.service, "1050", "Cash / Purchaser Clearing", f"{debit:.2f}", f"{credit:.2f}"]
        )
        out.extend(rows)

    def write(self, out: Path) -> Path:
        """Write the month's files under `out/<period>/` and `out/planted.json`."""
        folder = out / self.period
        self.build(folder)
        (out / "planted.json").write_text(
            json.dumps(
                {
                    "period": self.period,
                    "jib_lines": self.rows["jib.csv"],
                    "wells": len(self.wells),
                    "clean": self.clean,
                    "planted": self.planted,
                },
                indent=1,
            )
            + "\n"
        )
        return folder


class Rows:
    """One file being written: `append` writes a row, `len` counts those written."""

    def __init__(self, month: Month, name: str) -> None:
        self.month, self.name = month, name
        self.count = 0
        self.file: TextIO | None = None

    def __enter__(self) -> Rows:
        self.file = (self.month.folder / self.name).open("w", newline="", encoding="utf-8")
        self.writer = csv.writer(self.file, lineterminator="\n")
        self.writer.writerow(HEADERS[self.name])
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.file is not None
        self.file.close()
        self.month.rows[self.name] = self.count

    def append(self, row: list[str]) -> None:
        self.writer.writerow(row)
        self.count += 1

    def extend(self, rows: Iterable[list[str]]) -> None:
        for row in rows:
            self.append(row)

    def __len__(self) -> int:
        return self.count


def _split_amount(total: Decimal, n: int, rng: random.Random) -> list[Decimal]:
    """`total` in `n` positive, distinct cent amounts that add up to it."""
    weights = [rng.uniform(0.5, 1.5) for _ in range(n)]
    scale = sum(weights)
    parts = [cents(total * Decimal(w / scale)) for w in weights]
    parts[-1] = total - sum(parts[:-1], Decimal(0))
    seen: set[Decimal] = set()
    for k, part in enumerate(parts[:-1]):
        while part in seen or part <= 0:
            part += CENT
        seen.add(part)
        parts[k] = part
    parts[-1] = total - sum(parts[:-1], Decimal(0))
    while n > 1 and (parts[-1] in seen or parts[-1] <= 0):
        parts[0] -= CENT if parts[-1] <= 0 else -CENT
        parts[-1] = total - sum(parts[:-1], Decimal(0))
    return parts


def _split_volume(total: int, n: int) -> list[int]:
    """`total` in `n` near-equal whole parts (a stub line per purchaser or interest type)."""
    base = total // n
    return [base + (1 if k < total - base * n else 0) for k in range(n)]


SURNAMES = (
    "Smith", "Jones", "Carter", "Hollis", "Reyes", "Baker", "Meyer", "Whitfield", "Lang", "Ortiz",
    "Hale", "Brennan", "Dawson", "Keller", "Moreno", "Pruitt", "Sawyer", "Tate", "Vance", "Yoder",
)  # fmt: skip
HEADERS = {
    "doi.csv": ["well_id", "well_name", "state", "operator", "operator_property_no", "wi", "nri", "royalty", "orri", "effective_from", "first_prod_month"],
    "jib.csv": ["operator", "invoice_no", "service_month", "property_no", "well_id", "afe_no", "cost_category", "description", "gross_amount", "owner_decimal", "owner_net_amount"],
    "revenue.csv": ["check_no", "payor", "property_no", "well_id", "sale_month", "product", "gross_volume", "price", "gross_value", "gross_taxes", "gross_deductions", "owner_decimal", "owner_net_value"],
    "jib_history.csv": ["operator", "invoice_no", "service_month", "well_id", "cost_category", "gross_amount", "owner_decimal", "owner_net_amount"],
    "production.csv": ["well_id", "month", "product", "volume"],
    "prices.csv": ["month", "product", "benchmark_price", "differential"],
    "afe.csv": ["afe_no", "well_id", "description", "approved_gross", "billed_to_date_gross"],
    "joa.csv": ["operator", "well_id", "overhead_producing", "overhead_drilling", "effective_from"],
    "accruals.csv": ["kind", "well_id", "product_or_category", "month", "amount"],
    "tb_activity.csv": ["month", "account", "account_name", "debit", "credit"],
}  # fmt: skip
HEADERS["revenue_history.csv"] = HEADERS["revenue.csv"]


def generate(
    out: Path,
    jib_lines: int,
    *,
    seed: int = 7,
    clean: bool = False,
    period: str = "2026-10",
    alike: int = 0,
    distinct: int = 0,
) -> Path:
    """Write one month under `out`; the period's folder."""
    return Month(period, jib_lines, seed, clean, alike, distinct).write(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "out", type=Path, help="folder to write OUT/<period>/ and OUT/planted.json into"
    )
    parser.add_argument("--jib-lines", type=int, required=True, help="JIB lines in the month")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--clean", action="store_true", help="plant no exceptions")
    parser.add_argument("--period", default="2026-10")
    parser.add_argument(
        "--alike",
        type=int,
        default=0,
        metavar="N",
        help="also plant N alike exceptions of one operator: N lines billed again, N wells' severance over the rate",
    )
    parser.add_argument(
        "--distinct",
        type=int,
        default=0,
        metavar="N",
        help="plant N wells billed at a wrong WI: N distinct exceptions, one question each",
    )
    args = parser.parse_args(argv)
    folder = generate(
        args.out,
        args.jib_lines,
        seed=args.seed,
        clean=args.clean,
        period=args.period,
        alike=args.alike,
        distinct=args.distinct,
    )
    print(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

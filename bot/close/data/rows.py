"""One typed row per line of each file (DOI, JIB, revenue, history, production, prices,
AFE, JOA, accruals, TB activity), as read: nothing derived."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(slots=True)
class DoiRow:
    well_id: str
    well_name: str
    state: str
    operator: str
    operator_property_no: str
    wi: Decimal
    nri: Decimal
    royalty: Decimal
    orri: Decimal
    effective_from: str
    first_prod_month: str
    line: int = 0
    source: str = "doi.csv"


@dataclass(slots=True)
class JibLine:
    operator: str
    invoice_no: str
    service_month: str
    property_no: str
    well_id: str
    afe_no: str
    cost_category: str
    description: str
    gross_amount: Decimal
    owner_decimal: Decimal
    owner_net_amount: Decimal
    line: int = 0

    @property
    def ref(self) -> str:
        return f"jib.csv:{self.line}"


@dataclass(slots=True)
class RevenueLine:
    check_no: str
    payor: str
    property_no: str
    well_id: str
    sale_month: str
    product: str
    gross_volume: Decimal
    price: Decimal
    gross_value: Decimal
    gross_taxes: Decimal
    gross_deductions: Decimal
    owner_decimal: Decimal
    owner_net_value: Decimal
    line: int = 0
    file: str = "revenue.csv"

    @property
    def ref(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(slots=True)
class JibHistoryLine:
    operator: str
    invoice_no: str
    service_month: str
    well_id: str
    cost_category: str
    gross_amount: Decimal
    owner_decimal: Decimal
    owner_net_amount: Decimal
    line: int = 0


@dataclass(slots=True)
class ProductionRow:
    well_id: str
    month: str
    product: str
    volume: Decimal
    line: int = 0


@dataclass(slots=True)
class PriceRow:
    month: str
    product: str
    benchmark_price: Decimal
    differential: Decimal
    line: int = 0


@dataclass(slots=True)
class AfeRow:
    afe_no: str
    well_id: str
    description: str
    approved_gross: Decimal
    billed_to_date_gross: Decimal
    line: int = 0


@dataclass(slots=True)
class JoaRow:
    operator: str
    well_id: str
    overhead_producing: Decimal
    overhead_drilling: Decimal
    effective_from: str
    line: int = 0


@dataclass(slots=True)
class AccrualRow:
    kind: str
    well_id: str
    product_or_category: str
    month: str
    amount: Decimal
    line: int = 0


@dataclass(slots=True)
class TbRow:
    month: str
    account: str
    account_name: str
    debit: Decimal
    credit: Decimal
    line: int = 0

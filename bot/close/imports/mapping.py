"""A file's mapping, as people say it and as it is kept: each closebot column read from one of
the file's columns, or one value for the whole file (a single-operator statement has no
operator column), plus the well each ambiguous well name was said to be — and the plain
words every front end shows for the eleven kinds and their columns.

A mapping is kept as one JSON object (the `mapping` of a file and of a remembered layout):
`{column: header}` for a column read from the file, `{column: "=value"}` for one value for
the whole file, and `{"@well:<name>": well_id}` for a well name a person tied to a well.
"""

from __future__ import annotations

FIXED = "="  # a mapped value that starts so is the value of every row
WELL_PREFIX = "@well:"
HEADER_KEY = "@header"  # the header row a person chose (1-based), when not the one found

KIND_NAMES = {
    "doi.csv": "DOI master",
    "jib.csv": "JIB (joint interest billing)",
    "revenue.csv": "Revenue check stubs",
    "jib_history.csv": "JIB history",
    "revenue_history.csv": "Revenue history",
    "production.csv": "Production volumes",
    "prices.csv": "Prices",
    "afe.csv": "AFEs",
    "joa.csv": "JOA overhead rates",
    "accruals.csv": "Last month's accruals",
    "tb_activity.csv": "Trial balance activity",
}

# closebot's columns in words (never the raw field name a person would have to decode)
COLUMN_LABELS = {
    "operator": "Operator",
    "invoice_no": "Invoice number",
    "service_month": "Service month",
    "property_no": "Operator's property number",
    "well_id": "Well (id or name)",
    "afe_no": "AFE number",
    "cost_category": "Cost category (LOE, overhead, IDC…)",
    "description": "Description",
    "gross_amount": "Gross amount (8/8)",
    "owner_decimal": "Your decimal interest",
    "owner_net_amount": "Your net amount",
    "check_no": "Check number",
    "payor": "Payor (purchaser)",
    "sale_month": "Sale (production) month",
    "product": "Product (oil, gas, NGL)",
    "gross_volume": "Gross volume",
    "price": "Price",
    "gross_value": "Gross value",
    "gross_taxes": "Gross taxes (severance)",
    "gross_deductions": "Gross deductions",
    "owner_net_value": "Your net value",
    "well_name": "Well name",
    "state": "State",
    "operator_property_no": "Operator's property number",
    "wi": "Working interest (WI)",
    "nri": "Net revenue interest (NRI)",
    "royalty": "Royalty burden",
    "orri": "Overriding royalty (ORRI)",
    "effective_from": "Effective from (date)",
    "first_prod_month": "First production month",
    "month": "Month",
    "volume": "Volume",
    "benchmark_price": "Benchmark price",
    "differential": "Differential",
    "approved_gross": "Approved gross",
    "billed_to_date_gross": "Billed to date (gross)",
    "overhead_producing": "Producing-well overhead rate",
    "overhead_drilling": "Drilling-well overhead rate",
    "kind": "Kind (revenue or LOE)",
    "product_or_category": "Product or category",
    "amount": "Amount",
    "account": "Account number",
    "account_name": "Account name",
    "debit": "Debit",
    "credit": "Credit",
}

# the columns a whole file may share one value for (what a statement says once, in its title)
FILE_LEVEL = (
    "operator",
    "payor",
    "invoice_no",
    "check_no",
    "service_month",
    "sale_month",
    "month",
    "product",
    "cost_category",
)


def kind_label(kind: str) -> str:
    """'JIB (joint interest billing) (jib.csv)'."""
    return f"{KIND_NAMES.get(kind, kind)} ({kind})"


def column_label(column: str) -> str:
    return COLUMN_LABELS.get(column, column.replace("_", " ").capitalize())


def fixed_value(mapped: str) -> str | None:
    """The whole file's value when `mapped` says one, else None."""
    return mapped[len(FIXED) :].strip() if mapped.startswith(FIXED) else None


def fixed(value: str) -> str:
    """`value` as the whole file's value."""
    return FIXED + value.strip()


def columns_of(mapping: dict[str, str]) -> dict[str, str]:
    """The closebot columns of a mapping (without the well names said or the header row)."""
    return {k: v for k, v in mapping.items() if not k.startswith("@")}


def header_row(mapping: dict[str, str]) -> int | None:
    value = mapping.get(HEADER_KEY, "")
    return int(value) if value.isdigit() else None


def wells_said(mapping: dict[str, str]) -> dict[str, str]:
    """The well names a person tied to wells: name → well id."""
    return {k.removeprefix(WELL_PREFIX): v for k, v in mapping.items() if k.startswith(WELL_PREFIX)}


def with_wells(mapping: dict[str, str], wells: dict[str, str]) -> dict[str, str]:
    kept = {k: v for k, v in mapping.items() if not k.startswith(WELL_PREFIX)}
    return {**kept, **{WELL_PREFIX + k: v for k, v in wells.items() if v}}


def headers_used(mapping: dict[str, str]) -> list[str]:
    """The file's headers a mapping reads (not its whole-file values)."""
    return [v for v in columns_of(mapping).values() if v and fixed_value(v) is None]


def describe(mapping: dict[str, str]) -> str:
    """'Operator = "Red Butte Operating"; Well (id or name) ← "Well Name"', for people."""
    parts = []
    for column, mapped in columns_of(mapping).items():
        if not mapped or mapped == column:
            continue
        value = fixed_value(mapped)
        if value is not None:
            parts.append(f"{column_label(column)} = {value!r} for the whole file")
        else:
            parts.append(f"{column_label(column)} ← {mapped!r}")
    for name, well in wells_said(mapping).items():
        parts.append(f"well {name!r} is {well}")
    return "; ".join(parts) or "as named"

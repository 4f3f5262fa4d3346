"""The kind × option table: every exception kind, its options, what each books and what it
leaves open — generated from `bot/close/kinds.py`, so the table is the code.

    python -m bot.close.kinds_doc > docs/kinds.md
"""

from __future__ import annotations

from bot.close.kinds import (
    KINDS,
    SETTLED,
    EffectiveDateKind,
    EscalateKind,
    FluxSelectKind,
    Option,
    UnknownPropertyKind,
)

# options a kind makes from its facts (a well to map to, a date, a person, a flagged item)
DYNAMIC = {
    UnknownPropertyKind: (
        "map:WELL",
        "Map to WELL",
        "Nothing more: the line is booked as that well's (its decimals are then checked).",
    ),
    EffectiveDateKind: (
        "YYYY-MM-DD",
        "Effective DATE",
        "The catch-up since that date: each history month's cost at the new decimal less as "
        "booked, Dr the line's cost account (6210 …) / Cr 2110; a new DOI row in force with the "
        "posting approval.",
    ),
    EscalateKind: (
        "to:PERSON",
        "Escalate to PERSON",
        "Nothing: the item stays open with that person as its owner.",
    ),
    FluxSelectKind: (
        "ACCOUNT",
        "the flagged item",
        "Nothing: each item chosen is asked on its own (runs of an earlier release).",
    ),
}


# What each booking option books, by account (the option's own words say why; the kind × option
# table of tests/test_close_books.py checks each to the cent). "cost" is the line's own account
# (6210 LOE, 6220 Workover, 6250 Overhead, 1610/1615/1620 capital); "revenue" is 4010/4020/4030,
# or 4090 for a sale month older than the accrual window.
COST, STUB = "cost", "Dr revenue / Cr 6110, 6130, 2310"
ACCOUNTS = {
    ("unknown_property", "create"): "JIB: Dr cost / Cr 1395 (the document held it in 1395); "
    "revenue: Dr 2310, 6110, 6130 / Cr revenue",
    ("unknown_property", "suspense"): "nothing more: the document sits in 1395 (JIB) or 2310 "
    "(revenue) as received",
    ("doi_sanity", "correct"): f"each JIB line's difference to the computed row Dr 1395 / Cr "
    f"{COST}; each stub's excess over the computed NRI {STUB}",
    ("doi_sanity", "hold_well"): f"each JIB line whole Dr 1395 / Cr {COST}; each stub whole {STUB}",
    ("decimal_range", "suspense"): f"JIB: the line whole Dr 1395 / Cr {COST}; stub: whole {STUB}",
    ("stub_math", "hold"): "the excess over the stub's own figures Dr revenue / Cr 2310",
    ("stub_math", "claim"): "the shortfall Dr 1215 / Cr 4090",
    ("wi_nri", "accept"): "nothing itself: its effective-date question books the catch-up",
    ("wi_nri", "protest"): f"each JIB line's difference Dr 1390 / Cr {COST}",
    ("wi_nri", "short_pay"): f"each JIB line's difference Dr 2110 / Cr {COST}",
    ("wi_nri", "suspense"): f"each JIB line's difference Dr 1395 / Cr {COST}",
    ("wi_nri", "defer"): f"each JIB line's difference Dr 1395 / Cr {COST}; each stub's excess "
    f"over the DOI NRI {STUB}",
    ("wi_nri", "hold_revenue"): f"each stub's excess over the DOI NRI {STUB}",
    ("wi_nri", "claim"): "each stub's shortfall under the DOI NRI Dr 1215 / Cr 4090",
    ("doi_effective", "YYYY-MM-DD"): "each history month's cost at the new WI less as booked: "
    "Dr cost / Cr 2110",
    ("stub_underpaid", "book"): "each month's shortfall at the new NRI Dr 1210 / Cr 4090",
    ("stub_underpaid", "claim"): "each month's shortfall at the new NRI Dr 1215 / Cr 4090",
    ("severance", "refund"): "our share of the tax over the state rate Dr 1220 / Cr 6110",
    ("revenue_accrual", "accrue"): "Dr 1210 (net), Dr 6110 (severance) / Cr revenue, at "
    "operator volumes × (benchmark − differential) × NRI",
    ("revenue_accrual", "last_actual"): "Dr 1210, Dr 6110 / Cr revenue, at the last check",
    ("missing_check", "accrue"): "Dr 1210, Dr 6110 / Cr revenue, at operator volumes",
    ("missing_check", "last_actual"): "Dr 1210, Dr 6110 / Cr revenue, at the last check",
    ("flux_adjust", "adjust"): "the entry described: Dr ACCOUNT / Cr ACCOUNT, the amount",
    ("flux_adjust", "accrue"): "the entry described (to 2115, or Dr 1210 / Cr 4010–4030), "
    "with the month's accruals",
}
for _kind in ("line_math", "duplicate", "stale_charge", "afe_overrun", "overhead_rate"):
    ACCOUNTS[(_kind, "short_pay")] = f"the amount at stake Dr 2110 / Cr {COST}"
    ACCOUNTS[(_kind, "protest")] = f"the amount at stake Dr 1390 / Cr {COST}"
    ACCOUNTS[(_kind, "book_computed")] = (
        f"the difference to the line's own math, between {COST} and 2110 (Dr {COST} / Cr 2110 "
        "when the line billed less)"
    )
    ACCOUNTS[(_kind, "reclass")] = (
        "the line's owner net whole: Dr 1620 / Cr 6210 (LOE), Dr 1615 / Cr 6220 (workover), "
        "Dr 1610 / Cr 6250 (overhead); from capital Dr 6220 / Cr 1610 or 1615 (IDC, ICC), "
        "Dr 6210 / Cr 1620 (TDC, TCC, L&WE), Dr 6250 / Cr 1610 (AFE overhead)"
    )


def books_accounts(kind: str, code: str) -> str:
    """What an option books, by account; 'nothing' for an option that books nothing."""
    if (kind, code) in ACCOUNTS:
        return ACCOUNTS[(kind, code)]
    k = KINDS[kind]
    option = k.options.get(code)
    if option is not None and option.books.__name__ != "_nothing":
        raise KeyError(f"{kind}/{code} books something: say what in kinds_doc.ACCOUNTS")
    return "nothing"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table() -> str:
    out = [
        "# Exception kinds and what each option books",
        "",
        "Generated from `bot/close/kinds.py` by `python -m bot.close.kinds_doc > docs/kinds.md`",
        "(`tests/test_close_books.py` checks that this file is current, and checks every",
        "option's booking to the cent against an independent calculator on the sample and on a",
        "generated month). Every booking is an adjusting entry on top of the documents as",
        "received. *Holds the line*: the decision settles every other exception on the same",
        "document line, which books nothing (`Settled by the decision on the same line`).",
        "",
        "| kind | option | label | books (accounts) | what it means | leaves open | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, kind in KINDS.items():
        rows: list[tuple[str, str, str, Option | None]] = [
            (o.code, o.label, o.meaning, o) for o in kind.options.values()
        ]
        for cls, (code, label, meaning) in DYNAMIC.items():
            if isinstance(kind, cls):
                rows.insert(0, (code, label, meaning, None))
        for code, label, meaning, option in rows:
            notes = []
            if option is not None and option.holds_line:
                notes.append("holds the line")
            if option is not None and option.override:
                notes.append("override: needs a reason")
            if option is not None and option.accrual:
                notes.append("an accrual: reversed next month")
            leaves = "yes" if option is not None and option.leaves else "—"
            out.append(
                f"| `{name}` | `{code}` | {_cell(label)} | {_cell(books_accounts(name, code))} | "
                f"{_cell(meaning)} | {leaves} | {', '.join(notes) or '—'} |"
            )
    out += [
        f"| any | `{SETTLED.code}` | {SETTLED.label} | nothing | {SETTLED.meaning} | — | — |",
        "",
        "Reclass capex↔LOE (JIB findings): the line's whole owner net, as billed, moves by its",
        "category — LOE 6210 → 1620 Lease & Well Equipment, Workover 6220 → 1615 ICC, Overhead",
        "6250 → 1610 IDC; from capital, IDC 1610 and ICC 1615 → 6220 Workover, TDC/TCC/L&WE",
        "1620 → 6210 LOE, overhead capitalised under an AFE (1610) → 6250.",
        "",
    ]
    return "\n".join(out)


if __name__ == "__main__":
    print(table(), end="")

"""The kind × option table: every exception kind, its options, what each books and what it
leaves open — generated from the kinds in `bot/close/kinds/`, so the table is the code.

    python -m bot.close.kinds_doc > docs/kinds.md
"""

from __future__ import annotations

from bot.close.kinds import KINDS, SETTLED, Option
from bot.close.kinds.entries import nothing


def books_accounts(kind: str, code: str) -> str:
    """What an option books, by account; 'nothing' for an option that books nothing."""
    k = KINDS[kind]
    if k.dynamic is not None and k.dynamic[0] == code:
        return k.dynamic[3] or "nothing"
    option = k.options.get(code)
    if option is not None and option.accounts:
        return option.accounts
    if option is not None and option.books is not nothing:
        raise KeyError(f"{kind}/{code} books something: say what in its Option's accounts")
    return "nothing"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table() -> str:
    out = [
        "# Exception kinds and what each option books",
        "",
        "Generated from `bot/close/kinds/` by `python -m bot.close.kinds_doc > docs/kinds.md`",
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
        if kind.dynamic is not None:
            code, label, meaning, _ = kind.dynamic
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

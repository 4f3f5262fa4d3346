"""Exception kinds as registered objects: one module per family, each owning its kinds (their
options, what each books, the question's shape and what deciding them does); this registry
collects them in order. The close asks `KINDS[name]` (a `Kind`) — never a kind's name.

Every booking is an adjusting entry on top of the documents as received, so the journal shows
the bill as billed and then the decision, each traceable. A decision that holds, maps or
replaces a document line (`holds_line`) settles every other exception on that line: they book
nothing for it (`Kind.book(..., held=...)` leaves those lines out).

Adding a kind of an existing family: a `Kind` in that family's module (its KINDS), with its
options, each with its booking function (facts, extra → balanced lines) and its follow-up (→
the open item's text, or None), and the hooks for what deciding it sets off. A new family is a
module here and its line in FAMILIES. `Kind.preview` gives what an option books by account,
for a question's option descriptions.
"""

from __future__ import annotations

from typing import Any, cast

from bot.close.kinds import accruals, flux, intake, interests, jib_lines, open_items, severance
from bot.close.kinds import signoff as signoff_kind
from bot.close.kinds.base import SETTLED, Deciding, Desk, Kind, Option
from bot.close.kinds.entries import (
    DOCUMENT_FILES,
    HOLDING_ACCOUNTS,
    Booker,
    Facts,
    Line,
    Opener,
    by_account,
    describe,
    held_balance,
    line_refs,
    without_lines,
)
from bot.close.kinds.flux import adjustment_code
from bot.close.kinds.jib_lines import (
    BOOKED_ON_LINE,
    CAPITAL_ACCOUNTS,
    TO_CAPITAL,
    TO_EXPENSE,
    JibLineKind,
    line_key,
    reclass_account,
)
from bot.close.records import ExceptionRow

# the families, in the order the kinds table lists them
FAMILIES = (intake, interests, jib_lines, accruals, severance, flux, open_items, signoff_kind)

KINDS: dict[str, Kind] = {k.name: k for family in FAMILIES for k in family.KINDS}

__all__ = [
    "BOOKED_ON_LINE",
    "CAPITAL_ACCOUNTS",
    "DOCUMENT_FILES",
    "FAMILIES",
    "HOLDING_ACCOUNTS",
    "KINDS",
    "SETTLED",
    "TO_CAPITAL",
    "TO_EXPENSE",
    "Booker",
    "Deciding",
    "Desk",
    "Facts",
    "JibLineKind",
    "Kind",
    "Line",
    "Opener",
    "Option",
    "adjustment_code",
    "book",
    "by_account",
    "describe",
    "follow_up",
    "held_balance",
    "held_by_others",
    "kind_of",
    "kind_of_ref",
    "line_key",
    "line_refs",
    "option_entry",
    "option_label",
    "option_meaning",
    "reclass_account",
    "without_lines",
]


def kind_of(exc: ExceptionRow) -> Kind:
    """The kind of a recorded exception."""
    return KINDS[exc["kind"]]


def kind_of_ref(ref: str) -> Kind | None:
    """The kind of the exception a ref ('KIND:KEY') names; None for a group's ref or a name
    that is no kind."""
    return KINDS.get(ref.partition(":")[0])


def option_label(kind: str, code: str, facts: dict[str, Any]) -> str:
    return KINDS[kind].label(code, facts)


def option_meaning(kind: str, code: str, facts: dict[str, Any] | None = None) -> str:
    return KINDS[kind].meaning(code, facts)


def option_entry(
    kind: str,
    code: str,
    facts: dict[str, Any],
    extra: dict[str, Any] | None = None,
    *,
    lines: list[Line] | None = None,
    limit: int = 0,
) -> str:
    """What an option books, the one way every front end shows it (Kind.entry)."""
    return KINDS[kind].entry(code, facts, extra, lines=lines, limit=limit)


def book(
    kind: str,
    option: str,
    facts: dict[str, Any],
    extra: dict[str, Any],
    *,
    held: frozenset[str] = frozenset(),
) -> list[Line]:
    """The adjusting lines a decision books (balanced), on top of the documents as received."""
    return KINDS[kind].book(option, facts, extra, held=held)


def follow_up(
    kind: str, option: str, facts: dict[str, Any], extra: dict[str, Any], subject: str
) -> str | None:
    """What a decision leaves open (a dispute, a request, a suspense balance), or None."""
    return KINDS[kind].follow_up(option, facts, extra, subject)


def held_by_others(exceptions: list[ExceptionRow]) -> dict[str, frozenset[str]]:
    """Per exception id, the document lines another decision settled first: a decision that holds
    a line settles it for every exception decided after it, and for every exception that does
    not hold it; the first holding decision books it."""
    decided = [e for e in exceptions if e["status"] == "resolved" and e.get("resolution")]
    order = sorted(range(len(decided)), key=lambda i: (decided[i].get("resolved_at") or "", i))
    holders: list[tuple[int, str, set[str]]] = []  # (position, exception id, lines)
    for pos, i in enumerate(order):
        e = decided[i]
        if KINDS[e["kind"]].holds(cast(str, e["resolution"]), e["details"]["facts"]) and not cast(
            str, e["resolution"]
        ).startswith("map:"):  # a mapped line is the well's: what is found on it then is booked
            holders.append((pos, e["id"], line_refs(e["details"]["facts"])))
    out: dict[str, frozenset[str]] = {}
    for pos, i in enumerate(order):
        e = decided[i]
        holds = KINDS[e["kind"]].holds(cast(str, e["resolution"]), e["details"]["facts"])
        held: set[str] = set()
        for hpos, hid, lines in holders:
            if hid != e["id"] and (not holds or hpos < pos):
                held |= lines
        out[e["id"]] = frozenset(held)
    return out

"""Many alike, decided once: the exceptions one check raises on many lines of one operator,
with the same options and the same recommendation, are one question — the group's count
and total, its lines in an attached detail (a CSV in Slack, a listing at the console), and
"Decide line by line" as an option that asks about each line instead.

A group is fixed when its step records its findings: each member's details carry the
group's ref (`alike:KIND:OPERATOR:HASH`, the hash of its members' refs), so a question that
names the group names exactly those exceptions, and a decision recorded through it is the
option chosen there (decisions.py binds it). Each member is then decided as on its own:
the group's decision books, line by line, exactly what the per-line decisions would.

Only kinds marked `alike` group (kinds.py): their decisions spawn no follow-up question. A
group of one is asked as an exception on its own; an exception recorded without its
operator (an earlier release) is never grouped.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from bot.close.books.exception_index import LINE_BY_LINE_CODE, group_of
from bot.close.checks import Finding
from bot.close.doi_master import money
from bot.close.kinds import KINDS, book, option_entry, option_label
from bot.close.ledger import Ledger
from bot.close.records import ExceptionRow
from bot.core.questions import way_to_answer
from bot.store import QuestionRecord, Store

__all__ = ["LINE_BY_LINE_CODE", "group_of"]  # kept with the index of a run's exceptions

PREFIX = "alike:"
LINE_BY_LINE = way_to_answer("Decide line by line")  # never an override needing a Why
DETAIL_COLUMNS = ("ref", "line", "found", "amount_at_stake", "recommended")
GROUP_REF_RE = re.compile(r"\[ref (alike:[A-Za-z0-9_:.\-]+)\]")


def noun(kind: str) -> str:
    """What one exception of the kind is about, in the plural: lines, wells, AFEs, invoices."""
    return KINDS[kind].noun


def is_group(ref: str) -> bool:
    return ref.startswith(PREFIX)


Key = tuple[str, str, tuple[str, ...], str, tuple[str, ...]]


def _key(f: Finding) -> Key | None:
    """Kind × operator × the options offered (codes and the labels they show for this line)
    × the recommendation: exceptions alike in all of them are one question."""
    operator = str(f.facts.get("operator") or "")
    kind = KINDS[f.kind]
    if not (kind.alike and operator):
        return None
    options = tuple(f.options) if f.options is not None else tuple(kind.options)
    labels = tuple(kind.label(code, f.facts) for code in options)
    return (f.kind, operator, options, f.recommended, labels)


def group_refs(findings: Iterable[Finding]) -> dict[str, str]:
    """Finding id → its group's ref, for every finding with at least one alike: same kind, same
    operator, same options offered and the same recommendation."""
    by_key: dict[Key, list[str]] = defaultdict(list)
    for f in findings:
        key = _key(f)
        if key is not None and f.id not in by_key[key]:
            by_key[key].append(f.id)
    out: dict[str, str] = {}
    for (kind, operator, *_), ids in by_key.items():
        if len(ids) < 2:
            continue
        digest = hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:10]
        slug = re.sub(r"[^A-Za-z0-9]+", "-", operator).strip("-")[:40] or "operator"
        ref = f"{PREFIX}{kind}:{slug}:{digest}"
        out.update((i, ref) for i in ids)
    return out


def members(exceptions: Iterable[ExceptionRow], ref: str) -> list[ExceptionRow]:
    """The group's exceptions, in the order they were found."""
    return [e for e in exceptions if e["details"].get("group") == ref]


def total(group: list[ExceptionRow]) -> Decimal:
    return sum((Decimal(str(e["details"].get("amount") or "0")) for e in group), Decimal("0"))


def operator(group: list[ExceptionRow]) -> str:
    return str(group[0]["details"]["facts"].get("operator") or "")


def summary(group: list[ExceptionRow]) -> str:
    kind = group[0]["kind"]
    return (
        f"{len(group)} alike {kind.replace('_', ' ')} exceptions of {operator(group)}, "
        f"{money(total(group))} at stake in total"
    )


def status(group: list[ExceptionRow]) -> str:
    return "open" if any(e["status"] != "resolved" for e in group) else "resolved"


def group_lines(group: list[ExceptionRow], code: str) -> list[dict[str, Any]]:
    """What the option books for every line of the group: each line's own booking."""
    return [line for e in group for line in book(e["kind"], code, e["details"]["facts"], {})]


def detail_rows(group: list[ExceptionRow]) -> tuple[tuple[str, ...], list[dict[str, str]]]:
    """The group's lines for its detail CSV: each line, what was found, the amount at stake, and
    what each option books for it (accounts by number and name, to the cent)."""
    first = group[0]
    codes = list(first["details"]["options"])
    labels = {c: option_label(first["kind"], c, first["details"]["facts"]) for c in codes}
    columns = (*DETAIL_COLUMNS, *(f"if {labels[c]}" for c in codes))
    rows = []
    for e in group:
        d = e["details"]
        row = {
            "ref": d["ref"],
            "line": d["subject"],
            "found": d["summary"],
            "amount_at_stake": str(d.get("amount") or ""),
            "recommended": labels.get(d["recommended"], d["recommended"]),
        }
        for c in codes:
            row[f"if {labels[c]}"] = option_entry(e["kind"], c, d["facts"])
        rows.append(row)
    return columns, rows


def detail_file_name(ref: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", ref) + ".csv"


def listing(group: list[ExceptionRow]) -> list[str]:
    """The group's lines for the console: one line each, with its amount at stake."""
    return [
        f"  • {e['details']['subject']}: {e['details']['summary']} "
        f"({money(Decimal(str(e['details'].get('amount') or '0')))})"
        for e in group
    ]


def asked_groups(store: Store, record: QuestionRecord) -> list[tuple[str, list[ExceptionRow]]]:
    """The groups a form asks about, each with its exceptions: (ref, members)."""
    refs = [
        ref
        for item in record.questions
        for ref in GROUP_REF_RE.findall(str(item.get("question") or ""))
    ]
    if not refs:
        return []
    excs = Ledger(store).exceptions(record.run_id)
    return [(ref, found) for ref in dict.fromkeys(refs) if (found := members(excs, ref))]


def console_listing(store: Store, record: QuestionRecord) -> list[str]:
    """At the console, what Slack attaches as the detail CSV: every line of each group asked."""
    out: list[str] = []
    for ref, group in asked_groups(store, record):
        out += ["", f"The lines of [ref {ref}] — {summary(group)}:", *listing(group)]
    return out

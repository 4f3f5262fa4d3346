"""The JIB-line kinds (the JIB reconciliation step, `bot/close/steps/jibs.py`): line math, a duplicate, a stale
charge, an AFE overrun, overhead above the JOA rate. Each is a `JibLineKind`: the same options
(pay as billed, short-pay, protest, book the computed amount, reclass capex↔LOE), what it takes
off a line never more than the other decisions on that line left, and what its decisions do to
a line's part in the LOE accrual (`loe_rule`). A new kind of the family is one more
`JibLineKind` in KINDS below (and the check that finds it); the reclass rule, the LOE accrual,
grouping, the journal and the kinds table read it from here."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from bot.close.data import CENT, ZERO
from bot.close.doi_master import ACCOUNT_NAMES, money
from bot.close.kinds.base import Kind, Option
from bot.close.kinds.entries import Booker, Facts, Line, pair

if TYPE_CHECKING:
    from bot.close.checks import Close
    from bot.close.data import JibLine

# Reclass capex↔LOE (CLOSE.md, the JIB reconciliation): a JIB line booked to expense that belongs in capital, or
# the other way, moves whole (its owner net as billed) to the account its category maps to:
#   expense → capital: LOE 6210 → 1620 L&WE (equipment billed as LOE: a pump, a tank),
#                      Workover 6220 → 1615 ICC (a recompletion adds reserves: completion work),
#                      Overhead 6250 → 1610 IDC (drilling overhead, as under an AFE);
#   capital → expense: IDC 1610 and ICC 1615 → 6220 Workover (intangible work on a producing
#                      well), TDC/TCC/L&WE 1620 → 6210 LOE (repairs and replacements),
#                      overhead capitalised under an AFE (1610) → 6250 Operator Overhead.
CAPITAL_ACCOUNTS = ("1610", "1615", "1620")
TO_CAPITAL = {"LOE": "1620", "Workover": "1615", "Overhead": "1610"}
TO_EXPENSE = {"IDC": "6220", "ICC": "6220", "TDC": "6210", "TCC": "6210", "LWE": "6210"}
TO_EXPENSE |= {"Overhead": "6250"}

BOOKED_ON_LINE = "booked_on_line"  # extra: what the other decisions booked, per line_key


def reclass_account(account: str, category: str) -> str | None:
    """Where a line booked to `account` of `category` goes when reclassed (None: nowhere)."""
    if account in CAPITAL_ACCOUNTS:
        return TO_EXPENSE.get(category)
    return TO_CAPITAL.get(category)


def _reclass_moves(facts: Facts) -> list[tuple[dict[str, Any], str]]:
    """(line, the account it moves to) for each line of a JIB finding that can be reclassed;
    lines recorded before reclass existed (no net or category) cannot."""
    out = []
    for item in facts.get("lines", []):
        if "net" not in item or "category" not in item:
            continue
        target = reclass_account(item["account"], item["category"])
        if target:
            out.append((item, target))
    return out


def line_key(ref: str, account: str) -> str:
    """A document line on one account: where decisions on the same line meet."""
    return f"{ref}|{account}"


def _within_line(lines: list[Line], facts: Facts, on_line: dict[str, Decimal]) -> list[Line]:
    """A JIB finding's lines, each document line's share cut to what the decisions before it
    left of that line on its own account: two findings on one line (billed twice, and over the
    overhead rate) never take more off it than it billed — the line is decided once."""
    out: list[Line] = []
    for ref in dict.fromkeys(x["ref"] for x in lines):
        mine = [x for x in lines if x["ref"] == ref]
        item = next((x for x in facts.get("lines", []) if x.get("ref") == ref), None)
        if not ref or item is None or "net" not in item:
            out += mine
            continue
        net, own = Decimal(item["net"]), item["account"]
        left = net + on_line.get(line_key(ref, own), ZERO)
        effect = sum((x["debit"] - x["credit"] for x in mine if x["account"] == own), ZERO)
        if net * effect >= 0 or (abs(effect) <= abs(left) and left * net > 0):
            out += mine  # adds to the line, or takes no more than is left of it
            continue
        share = max(left * (1 if net > 0 else -1), ZERO) / abs(effect)
        for x in mine:
            d, c = (x["debit"] * share).quantize(CENT), (x["credit"] * share).quantize(CENT)
            if d or c:
                out.append({**x, "debit": d, "credit": c})
    return out


def _line_kind(kind: str, side: str, how: str) -> Booker:
    """A JIB line's amount at stake from its cost account to `side` (2110 short-pay, 1390 protest)."""

    def books(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        out: list[Line] = []
        doc = facts.get("invoice") or facts.get("afe_no") or ""
        for item in facts.get("lines", []):
            memo = f"{doc} {kind.replace('_', ' ')}: {how}"
            out += pair(
                side, item["account"], Decimal(item["amount"]), memo, item["ref"], item["well_id"]
            )
        return out

    return books


def _book_computed(facts: Facts, extra: dict[str, Any]) -> list[Line]:
    out: list[Line] = []
    for item in facts.get("lines", []):
        out += pair(
            item["account"],
            "2110",
            -Decimal(item["amount"]),
            f"{facts.get('invoice', '')}: booked at the computed amount",
            item["ref"],
            item["well_id"],
        )
    return out


def _dispute_text(facts: Facts, extra: dict[str, Any], subject: str) -> str:
    amount = Decimal(facts.get("amount") or facts.get("share") or facts.get("difference") or "0")
    return f"dispute {money(abs(amount))} with the operator ({subject})"


def _reclass(kind: str) -> Booker:
    def books(facts: Facts, extra: dict[str, Any]) -> list[Line]:
        out: list[Line] = []
        doc = facts.get("invoice") or facts.get("afe_no") or ""
        seen: set[str] = set()
        for item, target in _reclass_moves(facts):
            if item["ref"] in seen:  # a line is moved once, whatever the finding lists
                continue
            seen.add(item["ref"])
            memo = (
                f"{doc} {kind.replace('_', ' ')}: {item['category']} reclassed "
                f"{item['account']} → {target}"
            )
            out += pair(
                target, item["account"], Decimal(item["net"]), memo, item["ref"], item["well_id"]
            )
        return out

    return books


def line_options(kind: str) -> dict[str, Option]:
    """The options every JIB-line kind offers (a finding offers those its amount allows)."""
    return {
        "pay_as_billed": Option(
            "pay_as_billed", "Pay as billed", "Book and pay the line as the operator billed it."
        ),
        "short_pay": Option(
            "short_pay",
            "Short-pay and dispute",
            "Book and pay what the documents support; dispute the rest (JOA late-payment interest may apply).",
            books=_line_kind(kind, "2110", "short-paid, disputed"),
            accounts="the amount at stake Dr 2110 / Cr cost",
            leaves=_dispute_text,
        ),
        "protest": Option(
            "protest",
            "Pay under protest (receivable)",
            "Pay as billed; hold the disputed amount as a receivable (1390).",
            books=_line_kind(kind, "1390", "paid under protest"),
            accounts="the amount at stake Dr 1390 / Cr cost",
            leaves=_dispute_text,
        ),
        "book_computed": Option(
            "book_computed",
            "Book the computed amount",
            "Book what the line's own figures give; the operator may rebill.",
            books=_book_computed,
            accounts="the difference to the line's own math, between cost and 2110 (Dr cost / Cr 2110 when the line billed less)",
        ),
        "reclass": Option(
            "reclass",
            "Reclass capex↔LOE",
            "Move the line between expense and capital: LOE → 1620, workover → 1615, overhead → "
            "1610; IDC/ICC → 6220, equipment → 6210.",
            books=_reclass(kind),
            accounts="the line's owner net whole: Dr 1620 / Cr 6210 (LOE), Dr 1615 / Cr 6220 (workover), Dr 1610 / Cr 6250 (overhead); from capital Dr 6220 / Cr 1610 or 1615 (IDC, ICC), Dr 6210 / Cr 1620 (TDC, TCC, L&WE), Dr 6250 / Cr 1610 (AFE overhead)",
            moves_lines=True,
        ),
    }


# A line's part in the LOE accrual under a kind's decisions: the amount it counts at, or None
# to leave it out.
LoeRule = Callable[["JibLine", Decimal], Decimal | None]


@dataclass(frozen=True)
class JibLineKind(Kind):
    """A JIB finding (the JIB reconciliation): its reclass option names where the line goes, and what it takes
    off a line is never more than the other decisions on that line left of it."""

    title: str = ""  # what its finding's summary calls it ("duplicate line")
    # what its finding's key names: a jib.csv line, an invoice (its overhead lines), an AFE
    keyed_by: Literal["line", "invoice", "afe"] = "line"
    # the LOE accrual counts its line only when decided so (undecided or disputed: not cost)
    cost_only_if: str = ""
    # decided so, its line counts in the LOE accrual at the JOA's overhead rate, not as billed
    joa_rate_if: tuple[str, ...] = ()

    def book(
        self,
        code: str,
        facts: Facts,
        extra: dict[str, Any] | None = None,
        *,
        held: frozenset[str] = frozenset(),
    ) -> list[Line]:
        lines = super().book(code, facts, extra, held=held)
        on_line = (extra or {}).get(BOOKED_ON_LINE)
        return _within_line(lines, facts, on_line) if on_line is not None else lines

    def option(self, code: str, facts: Facts) -> Option:
        found = super().option(code, facts)
        if not found.moves_lines:
            return found
        targets = sorted({t for _, t in _reclass_moves(facts)})
        sides = {"capital" if t in CAPITAL_ACCOUNTS else "expense" for t in targets}
        label = found.label
        if len(sides) == 1:
            to = sides.pop()
            for text in (
                f"Reclass to {to} ({', '.join(f'{t} {ACCOUNT_NAMES[t]}' for t in targets)})",
                f"Reclass to {to} ({', '.join(targets)})",
            ):
                if len(text) <= 75:
                    label = text
                    break
        return replace(found, label=label)

    def key_of(self, j: JibLine) -> str | None:
        """The key of its finding about `j` (None: its findings are never about one such line)."""
        if self.keyed_by == "line":
            return str(j.line)
        if self.keyed_by == "invoice" and j.cost_category == "Overhead":
            return j.invoice_no
        return None

    def loe_rule(self, close: Close) -> LoeRule | None:
        """What this kind's decisions so far do to a JIB line's part in the LOE accrual: a line
        its decision reclassed is not the LOE the accrual runs at; `cost_only_if` and
        `joa_rate_if` as declared. None when no decision of it bears on any line."""
        prefix = f"{self.name}:"
        decided = {
            fid[len(prefix) :]: d for fid, d in close.decisions.items() if fid.startswith(prefix)
        }
        if not decided:
            return None

        def rule(j: JibLine, amount: Decimal) -> Decimal | None:
            key = self.key_of(j)
            d = decided.get(key) if key is not None else None
            if d is None:
                return amount
            resolved = d.get("status") == "resolved"
            if resolved and self.moves_lines(str(d.get("option"))):
                return None  # moved to capital by its decision: not the LOE the accrual runs at
            if self.cost_only_if and d.get("option") != self.cost_only_if:
                return None  # being disputed (or not yet decided): not cost
            if resolved and d.get("option") in self.joa_rate_if:
                rate = close.master.overhead_rate(j.well_id, j.service_month, drilling=False)
                return rate if rate is not None else amount  # what the JOA allows
            return amount

        return rule


def loe_rules(kinds: Iterable[Kind], close: Close) -> LoeRule:
    """Every JIB-line kind's rule over a line's part in the LOE accrual, together: the amount
    it counts at, None to leave it out."""
    rules = [r for k in kinds if isinstance(k, JibLineKind) if (r := k.loe_rule(close)) is not None]

    def counts(j: JibLine, amount: Decimal) -> Decimal | None:
        for r in rules:
            counted = r(j, amount)
            if counted is None:
                return None
            amount = counted
        return amount

    return counts


def _jib_line_kind(name: str, header: str, **how: Any) -> JibLineKind:
    return JibLineKind(name, header, line_options(name), alike=True, **how)


KINDS = (
    _jib_line_kind("line_math", "JIB line", title="line math"),
    _jib_line_kind(
        "duplicate", "JIB duplicate", title="duplicate line", cost_only_if="pay_as_billed"
    ),
    _jib_line_kind("stale_charge", "JIB stale charge", title="stale charge"),
    _jib_line_kind("afe_overrun", "AFE overrun", noun="AFEs", keyed_by="afe"),
    _jib_line_kind(
        "overhead_rate",
        "Overhead vs JOA",
        noun="invoices",
        keyed_by="invoice",
        joa_rate_if=("short_pay", "protest"),
    ),
)

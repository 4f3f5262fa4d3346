"""Where a flagged flux movement comes from (CLOSE.md v2.2 "Flux explains, or says what it
cannot"): first this close's own entries — the reversal of last month's accruals, this month's
accruals, the decisions it books — then last month's one-offs (its decisions, its workovers and
prior-period adjustments, which do not recur), then the documents: volume and price for
revenue. What is left is the unexplained part; a draft that leaves a part beyond the flux
thresholds unexplained is never the recommendation."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.close.data import ZERO, period_label
from bot.close.doi_master import FLUX_AMOUNT, FLUX_PERCENT, money

# accounts whose activity does not recur month to month: each month's is its own one-offs
ONE_OFF = {"4090": "prior-period adjustments", "6220": "workovers"}
PRODUCT_OF = {"4010": "oil", "4020": "gas", "4030": "ngl"}


@dataclass(frozen=True)
class Part:
    """One part of a movement: what it is, its amount (signed as the movement) and whether it
    explains the movement (the documents' unexplained rest does not)."""

    what: str
    amount: Decimal
    explained: bool = True

    def text(self) -> str:
        return f"{self.what} {signed(self.amount)}"


def signed(amount: Decimal) -> str:
    """'+$1,200.00' / '-$1,200.00': a part's amount with its direction."""
    return ("+" if amount > 0 else "") + money(amount)


def material(amount: Decimal, prior: Decimal) -> bool:
    """Beyond the flux thresholds: ±$5,000 and ±10 % of last month (both: CLOSE.md, the flux review)."""
    if abs(amount) <= FLUX_AMOUNT:
        return False
    return not prior or abs(amount / prior) > FLUX_PERCENT


@dataclass(frozen=True)
class Reconciled:
    """A movement's parts, the explained and unexplained totals, and the draft in words."""

    change: Decimal
    prior: Decimal
    parts: list[Part]

    @property
    def explained(self) -> Decimal:
        return sum((p.amount for p in self.parts if p.explained), ZERO)

    @property
    def unexplained(self) -> Decimal:
        return self.change - self.explained

    @property
    def reconciles(self) -> bool:
        """Whether what is left unexplained is within the thresholds."""
        return not material(self.unexplained, self.prior)

    def draft(self) -> str:
        said = [p.text() for p in self.parts if p.explained and p.amount]
        if not said:
            return ""
        rest = self.unexplained
        return "; ".join(said) + (
            f"; unexplained {signed(rest)}" if rest else "; nothing unexplained"
        )

    def facts(self) -> dict[str, Any]:
        return {
            "parts": [[p.what, str(p.amount), p.explained] for p in self.parts],
            "explained": str(self.explained),
            "unexplained": str(self.unexplained),
            "reconciles": self.reconciles,
        }


def _value(x: Mapping[str, Any], sign: int) -> Decimal:
    return sign * (Decimal(x["debit"]) - Decimal(x["credit"]))


def _by_source(lines: Iterable[Mapping[str, Any]], sign: int) -> dict[str, Decimal]:
    out: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for x in lines:
        out[str(x.get("source") or "document")] += _value(x, sign)
    return out


def _decisions(lines: Iterable[Mapping[str, Any]], sign: int) -> dict[str, Decimal]:
    """A batch's decision entries on the account, by what was decided ('Smith 14-2H — Book the
    catch-up receivable'), from the entry's title."""
    out: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for x in lines:
        if x.get("source") == "decision":
            title = str(x.get("entry") or "").removeprefix("Decision: ")
            out[title.split(" (by ", 1)[0] or "a decision"] += _value(x, sign)
    return out


def _documents(lines: Iterable[Mapping[str, Any]], sign: int, limit: int = 3) -> str:
    """The largest document lines on the account, by their memos."""
    docs: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for x in lines:
        if (x.get("source") or "document") == "document":
            docs[str(x.get("memo") or x.get("ref") or "")] += _value(x, sign)
    top = sorted(docs.items(), key=lambda kv: -abs(kv[1]))[:limit]
    more = f" and {len(docs) - limit} more" if len(docs) > limit else ""
    return ", ".join(f"{m} {money(v)}" for m, v in top) + more


def account_movement(
    account: str,
    period: str,
    prior_month: str,
    current: Sequence[Mapping[str, Any]],
    prior: Sequence[Mapping[str, Any]] | None,
    prior_total: Decimal,
    split: Sequence[Mapping[str, Any]],
) -> Reconciled:
    """An account's movement from `prior_month` to `period`, in parts. `current` and `prior`
    are the batches' lines on the account (with their source: reversal, accrual, decision,
    document); `prior` is None when last month is a trial balance export (no entries: its
    whole activity is its documents, or its one-offs on a one-off account). Amounts are signed
    as the movement: revenue as credits."""
    sign = -1 if account.startswith("4") else 1
    now = _by_source(current, sign)
    before = _by_source(prior or [], sign) if prior is not None else {"document": prior_total}
    before = defaultdict(lambda: ZERO, before)
    last = period_label(prior_month)
    parts: list[Part] = []
    # 1. this close's own entries
    if d := now["reversal"] - before["reversal"]:
        parts.append(
            Part(
                f"this close reversing {last}'s accruals ({money(abs(now['reversal']))}"
                + (
                    f"; {last} itself reversed {money(abs(before['reversal']))}"
                    if before["reversal"]
                    else ""
                )
                + ")",
                d,
            )
        )
    if d := now["accrual"] - before["accrual"]:
        parts.append(
            Part(
                f"this month's accruals ({money(abs(now['accrual']))}) against {last}'s "
                f"({money(abs(before['accrual']))})",
                d,
            )
        )
    for what, amount in _decisions(current, sign).items():
        if amount:
            parts.append(Part(f"this close's decision {what}", amount))
    # 2. last month's one-offs: its decisions, and its activity on an account that does not recur
    for what, amount in _decisions(prior or [], sign).items():
        if amount:
            parts.append(Part(f"{last}'s one-off decision {what}, not repeated", -amount))
    documents = now["document"] - before["document"]
    if account in ONE_OFF:
        if before["document"]:
            which = (
                f" posted by closebot ({_documents(prior, sign)})"
                if prior
                else f" ({money(before['document'])} in the trial balance)"
            )
            parts.append(
                Part(
                    f"{last}'s one-off {ONE_OFF[account]}{which}, not repeated", -before["document"]
                )
            )
        if now["document"]:
            parts.append(
                Part(
                    f"this month's {ONE_OFF[account]}: {_documents(current, sign)}", now["document"]
                )
            )
        documents = ZERO
    # 3. volume and price of this month's checks
    elif product := PRODUCT_OF.get(account):
        rows = [s for s in split if s["product"] == product]
        if rows:
            volume = sum((Decimal(str(s["volume_part"])) for s in rows), ZERO)
            price = sum((Decimal(str(s["price_part"])) for s in rows), ZERO)
            parts += [Part("checks' volume", volume), Part("checks' price", price)]
            documents -= volume + price
    if documents:
        parts.append(Part(f"this month's documents against {last}'s", documents, explained=False))
    for source in sorted(set(now) | set(before)):
        known = source in ("reversal", "accrual", "decision", "document")
        if not known and (d := now[source] - before[source]):
            parts.append(Part(f"{source} entries", d, explained=False))
    change = sum(now.values(), ZERO) - sum(before.values(), ZERO)
    return Reconciled(change=change, prior=sum(before.values(), ZERO), parts=parts)


def well_movement(item: Mapping[str, Any]) -> Reconciled:
    """A well × product's checks against the month before: volume and price, and the rest."""
    return Reconciled(
        change=Decimal(str(item["change"])),
        prior=Decimal(str(item["prior"])),
        parts=[
            Part("volume", Decimal(str(item["volume_part"]))),
            Part("price", Decimal(str(item["price_part"]))),
        ],
    )

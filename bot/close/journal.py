"""Step 6: one balanced batch — last month's reversals, this month's documents as received,
the decisions' adjusting entries, and this month's accruals."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from bot.close.checks import (
    COST_ACCOUNTS,
    REVENUE_ACCOUNTS,
    Close,
    cost_account,
    revenue_account,
    stub_parts,
)
from bot.close.data import CATEGORIES, PRODUCTS, ZERO, JibLine, RevenueLine, period_label
from bot.close.doi_master import ACCOUNT_NAMES, money
from bot.close.kinds import BOOKED_ON_LINE, KINDS, held_by_others, line_key
from bot.close.steps.jibs import loe_accrual
from bot.close.steps.revenue import revenue_accrual
from bot.store.chain import LINE_FIELDS

ACCOUNTS = ACCOUNT_NAMES


# a line as a batch writer takes it: the store's columns after batch_id, amounts as Decimal
LINE_ROW = LINE_FIELDS[1:]
LineRow = tuple[int, int, str, str, str, Decimal, Decimal, str, str, str, str]


class JournalError(ValueError):
    """Entries could not be built (they would not balance)."""


@dataclass
class Entry:
    """One entry's lines, compact while it is built: a plain line is a tuple (account, debit,
    credit, well, memo, ref); a summarized line a dict that later lines of its group add to.
    `iter_lines()` gives them as the store's line dicts."""

    number: int
    description: str
    source: str
    _rows: list[Any] = field(default_factory=list, repr=False)
    # summarized lines: (account, well, side, group) → the line; and, when the batch keeps
    # it, each line's detail (the source lines behind it), by position
    _groups: dict[tuple[str, str, str, str], dict[str, Any]] = field(
        default_factory=dict, repr=False
    )
    detail: dict[int, list[dict[str, Any]]] | None = field(default=None, repr=False)
    _debit: Decimal = ZERO
    _credit: Decimal = ZERO

    def add(
        self,
        account: str,
        *,
        debit: Decimal = ZERO,
        credit: Decimal = ZERO,
        well_id: str = "",
        memo: str = "",
        ref: str = "",
        group: str = "",
    ) -> None:
        """One line; with `group`, lines of the same account, well and side in this entry
        are summed into one whose memo is `group` and the count of its lines."""
        if debit < 0 or credit < 0:  # a negative amount belongs on the other side
            debit, credit = -credit, -debit
        if debit == ZERO and credit == ZERO:
            return
        self._debit += debit
        self._credit += credit
        index = len(self._rows)
        if group:
            key = (account, well_id, "dr" if debit else "cr", group)
            line = self._groups.get(key)
            if line is not None:
                line["debit"] += debit
                line["credit"] += credit
                line["refs"].append(ref)  # its memo is the group's and the count (`finish`)
                if self.detail is not None:
                    self.detail[line["index"]].append(_detail(debit, credit, memo, ref))
                return
            line = {
                "account": account,
                "debit": debit,
                "credit": credit,
                "well_id": well_id,
                "memo": memo,
                "ref": ref,
                "refs": [ref],
                "index": index,
            }
            self._groups[key] = line
            self._rows.append(line)
        else:
            self._rows.append((account, debit, credit, well_id, memo, ref))
        if self.detail is not None:
            self.detail[index] = [_detail(debit, credit, memo, ref)]

    @property
    def amount(self) -> Decimal:
        """The entry's debits."""
        return self._debit

    def check_balanced(self) -> None:
        if self._debit != self._credit:
            raise JournalError(
                f"entry {self.number} ({self.description}) does not balance: {money(self._debit)} ≠ {money(self._credit)}"
            )

    def finish(self) -> None:
        """Summarized lines become plain lines (their count stays in the memo)."""
        for (_, _, _, group), line in self._groups.items():
            refs = line.pop("refs")
            if len(refs) > 1:
                line["memo"] = f"{group} ({len(refs)} lines)"
            line["ref"] = _refs(refs)
        self._groups.clear()

    def iter_lines(self) -> Iterator[dict[str, Any]]:
        """The lines as the store keeps them, numbered."""
        for n, row in enumerate(self._rows, start=1):
            if isinstance(row, dict):
                account, debit, credit = row["account"], row["debit"], row["credit"]
                well_id, memo, ref = row["well_id"], row["memo"], row["ref"]
            else:
                account, debit, credit, well_id, memo, ref = row
            yield {
                "entry_no": self.number,
                "line_no": n,
                "entry": self.description,
                "account": account,
                "account_name": ACCOUNTS[account],
                "debit": debit,
                "credit": credit,
                "well_id": well_id,
                "memo": memo,
                "source": self.source,
                "ref": ref,
            }

    def iter_rows(self) -> Iterator[LineRow]:
        """The lines as tuples in the store's column order (`LINE_ROW`): what a batch writer
        takes without a dict per line."""
        number, description, source = self.number, self.description, self.source
        for n, row in enumerate(self._rows, start=1):
            if isinstance(row, dict):
                account, debit, credit = row["account"], row["debit"], row["credit"]
                well_id, memo, ref = row["well_id"], row["memo"], row["ref"]
            else:
                account, debit, credit, well_id, memo, ref = row
            yield (number, n, description, account, ACCOUNTS[account], debit, credit,
                   well_id, memo, source, ref)  # fmt: skip

    @property
    def lines(self) -> list[dict[str, Any]]:
        return list(self.iter_lines())

    def account_sums(self) -> Iterator[tuple[str, Decimal, Decimal]]:
        for row in self._rows:
            if isinstance(row, dict):
                yield row["account"], row["debit"], row["credit"]
            else:
                yield row[0], row[1], row[2]


def _refs(refs: list[str]) -> str:
    """'jib.csv:2,6', or for many lines 'jib.csv:2,3,…,40 (17 lines)'; refs that share only
    their file, 'production.csv:W-1:oil:2026-09,W-1:gas:2026-09'; refs with nothing in
    common, each in full."""
    if len(refs) == 1:
        return refs[0]
    file, tails, sep = "", refs, ", "
    for split in (_last_colon, _first_colon):
        parts = [split(r) for r in refs]
        if len({file for file, _ in parts}) == 1 and all(tail is not None for _, tail in parts):
            file, tails, sep = parts[0][0] + ":", [str(tail) for _, tail in parts], ","
            break
    if len(tails) <= 8:
        return file + sep.join(tails)
    return f"{file}{tails[0]}{sep}{tails[1]}{sep}…{sep}{tails[-1]} ({len(tails)} lines)"


def _last_colon(ref: str) -> tuple[str, str | None]:
    file, colon, tail = ref.rpartition(":")
    return (file, tail) if colon else (ref, None)


def _first_colon(ref: str) -> tuple[str, str | None]:
    file, colon, tail = ref.partition(":")
    return (file, tail) if colon else (ref, None)


def _detail(debit: Decimal, credit: Decimal, memo: str, ref: str) -> dict[str, Any]:
    return {"debit": debit, "credit": credit, "memo": memo, "ref": ref}


class Batch:
    """The batch's entries, each closed (balanced, numbered) when the next one starts. With a
    `sink`, a closed entry's lines go to it and are not kept: only the entries' totals and
    the totals by account stay, so a batch of any size is built in the memory of one entry."""

    def __init__(
        self,
        *,
        keep_detail: bool = False,
        sink: Callable[[Iterable[dict[str, Any]]], None] | None = None,
        detail_sink: Callable[[list[dict[str, Any]]], None] | None = None,
        row_sink: Callable[[Iterable[LineRow]], None] | None = None,
    ) -> None:
        self.entries: list[Entry] = []  # closed entries with lines, numbered from 1
        self.keep_detail = keep_detail or detail_sink is not None
        self.sink = sink
        self.row_sink = row_sink
        self.detail_sink = detail_sink
        self.totals: dict[str, list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
        self._open: Entry | None = None

    def entry(self, description: str, source: str) -> Entry:
        self.close_entry()
        e = Entry(len(self.entries) + 1, description, source)
        if self.keep_detail:
            e.detail = {}
        self._open = e
        return e

    def close_entry(self) -> None:
        """The open entry is done: summarized, balanced, numbered, and sent to the sink."""
        e, self._open = self._open, None
        if e is None:
            return
        e.finish()
        e.check_balanced()
        if not e._rows:
            return
        e.number = len(self.entries) + 1
        for account, debit, credit in e.account_sums():
            sums = self.totals[account]
            sums[0] += debit
            sums[1] += credit
        self.entries.append(e)
        if self.detail_sink is not None:
            self.detail_sink(_detail_rows(e))
            e.detail = None
        if self.sink is not None:
            self.sink(e.iter_lines())  # dicts made a chunk at a time as the sink takes them
            e._rows = []
        elif self.row_sink is not None:
            self.row_sink(e.iter_rows())  # the same lines as tuples
            e._rows = []

    @property
    def lines(self) -> list[dict[str, Any]]:
        """Every line (only when the batch keeps them: no sink)."""
        return [line for e in self.entries for line in e.lines]

    def by_account(self) -> list[dict[str, Any]]:
        """Debits and credits per account, in account order."""
        return [
            {"account": a, "account_name": ACCOUNTS.get(a, a), "debit": d, "credit": c}
            for a, (d, c) in sorted(self.totals.items())
        ]

    def detail_rows(self) -> list[dict[str, Any]]:
        """Every source line behind every entry line, keyed to it (entry_no, line_no)."""
        return [row for e in self.entries for row in _detail_rows(e)]


def _detail_rows(e: Entry) -> list[dict[str, Any]]:
    out = []
    for index, line in enumerate(e.iter_lines()):
        for d in (e.detail or {}).get(index, []):
            out.append(
                {
                    "entry_no": line["entry_no"],
                    "line_no": line["line_no"],
                    "account": line["account"],
                    "well_id": line["well_id"],
                    **d,
                }
            )
    return out


def build(
    close: Close,
    exceptions: list[dict[str, Any]],
    prior_accruals: Iterable[dict[str, Any]] | None,
    *,
    keep_detail: bool = False,
    sink: Callable[[Iterable[dict[str, Any]]], None] | None = None,
    detail_sink: Callable[[list[dict[str, Any]]], None] | None = None,
    row_sink: Callable[[Iterable[LineRow]], None] | None = None,
) -> tuple[Batch, dict[str, Any]]:
    """The batch and what went into it; `prior_accruals` are last month's stored accrual lines
    (closebot closed it), or None to reverse accruals.csv.

    A JIB's or a check's lines are summarized per well × account (and side): one entry line
    with the count of its source lines in the memo. `keep_detail` keeps the source lines
    behind each entry line (`Batch.detail_rows`), for the detail CSV."""
    batch = Batch(keep_detail=keep_detail, sink=sink, detail_sink=detail_sink, row_sink=row_sink)
    info: dict[str, Any] = {}
    info["reversal_source"] = _reversals(batch, close, prior_accruals)
    _jibs(batch, close)
    _checks(batch, close)
    held = held_by_others(exceptions)
    accruals: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    decided = [e for e in exceptions if e["status"] == "resolved" and e["resolution"]]
    # in the order decided; a reclass moves what the other decisions on its line left
    decided.sort(
        key=lambda e: (
            KINDS[e["kind"]].moves_lines(e["resolution"], e["details"]["facts"]),
            e.get("resolved_at") or "",
        )
    )
    on_line: dict[str, Decimal] = {}  # what the decisions so far booked, per line and account
    for exc in decided:
        kind, facts = KINDS[exc["kind"]], exc["details"]["facts"]
        extra = {**(exc["extra"] or {}), BOOKED_ON_LINE: on_line}
        lines = kind.book(exc["resolution"], facts, extra, held=held.get(exc["id"], frozenset()))
        for line in lines:
            if line["ref"]:
                key = line_key(line["ref"], line["account"])
                on_line[key] = on_line.get(key, ZERO) + line["debit"] - line["credit"]
        if not lines:
            continue
        if kind.option(exc["resolution"], facts).accrual:
            accruals.append((exc, lines))  # booked with this month's accruals, reversed next month
            continue
        label = kind.label(exc["resolution"], facts)
        e = batch.entry(
            f"Decision: {exc['details']['subject']} — {label} (by {exc['decided_by'] or '-'})",
            "decision",
        )
        for line in lines:
            e.add(
                line["account"],
                debit=line["debit"],
                credit=line["credit"],
                well_id=line["well_id"],
                memo=line["memo"],
                ref=line["ref"],
            )
    info["loe_accrual"] = _loe_accrual(batch, close)  # counts: the items are not kept
    info["revenue_accrual"] = _revenue_accrual(batch, close)
    for exc, lines in accruals:
        label = kind_label(exc)
        what = KINDS[exc["kind"]].accrual_entry
        e = batch.entry(
            f"{what}: {exc['details']['subject']} — {label} (by {exc['decided_by'] or '-'})",
            "accrual",
        )
        for line in lines:
            e.add(
                line["account"],
                debit=line["debit"],
                credit=line["credit"],
                well_id=line["well_id"],
                memo=line["memo"],
                ref=line["ref"],
            )
    batch.close_entry()
    return batch, info


def kind_label(exc: dict[str, Any]) -> str:
    return KINDS[exc["kind"]].label(exc["resolution"], exc["details"]["facts"])


def _reversals(batch: Batch, close: Close, prior: Iterable[dict[str, Any]] | None) -> str:
    label = period_label(close.data.service_month)
    if prior is not None:
        e = batch.entry(f"Reversal of {label} accruals (from closebot's posted batch)", "reversal")
        for line in prior:
            e.add(
                line["account"],
                debit=line["credit"],
                credit=line["debit"],
                well_id=line["well_id"] or "",
                memo=f"reverse: {line['memo']}",
                ref=f"batch {line['batch_id']}",
            )
        return "store"
    loe = [a for a in close.data.accruals if a.kind == "loe"]
    revenue = [a for a in close.data.accruals if a.kind == "revenue"]
    # the liability side is one line per well (its categories' or products' lines summed,
    # counted in the memo, each in the detail); the cost and revenue side one per account
    if loe:
        e = batch.entry(f"Reversal of {label} LOE accrual (accruals.csv)", "reversal")
        for a in loe:
            account = COST_ACCOUNTS[CATEGORIES[a.product_or_category.casefold()]]
            e.add(
                "2115",
                debit=a.amount,
                well_id=a.well_id,
                memo=f"reverse accrued {a.product_or_category} {a.month}",
                ref=f"accruals.csv:{a.line}",
                group=f"reverse accrued LOE {a.month}",
            )
            e.add(
                account,
                credit=a.amount,
                well_id=a.well_id,
                memo=f"reverse accrued {a.product_or_category} {a.month}",
                ref=f"accruals.csv:{a.line}",
            )
    if revenue:
        e = batch.entry(f"Reversal of {label} revenue accrual (accruals.csv)", "reversal")
        for a in revenue:
            account = REVENUE_ACCOUNTS[PRODUCTS[a.product_or_category.casefold()]]
            e.add(
                account,
                debit=a.amount,
                well_id=a.well_id,
                memo=f"reverse accrued {a.product_or_category} {a.month}",
                ref=f"accruals.csv:{a.line}",
            )
            e.add(
                "1210",
                credit=a.amount,
                well_id=a.well_id,
                memo=f"reverse accrued {a.product_or_category} {a.month}",
                ref=f"accruals.csv:{a.line}",
                group=f"reverse accrued revenue {a.month}",
            )
    return "accruals.csv"


def _jibs(batch: Batch, close: Close) -> None:
    by_invoice: dict[str, list[tuple[JibLine, str | None]]] = defaultdict(list)
    for j, well in close.jib():
        by_invoice[j.invoice_no].append((j, well))
    for invoice, lines in by_invoice.items():
        first = lines[0][0]
        e = batch.entry(
            f"JIB {invoice} · {first.operator} · service {first.service_month}", "document"
        )
        payable = ZERO
        for j, well in lines:
            memo = f"{close.master.name(well) if well else j.property_no}: {j.description}"
            account = cost_account(j) if well else "1395"
            if not well:
                memo += " (unknown property, held)"
            name = close.master.name(well) if well else "unknown properties"
            e.add(
                account,
                debit=j.owner_net_amount,
                well_id=well or "",
                memo=memo,
                ref=j.ref,
                group=f"{name}: {ACCOUNTS[account]}",
            )
            payable += j.owner_net_amount
        e.add(
            "2110",
            credit=payable,
            memo=f"{first.operator} invoice {invoice}",
            ref=f"jib.csv:{invoice}",
        )


def _checks(batch: Batch, close: Close) -> None:
    by_check: dict[str, list[tuple[RevenueLine, str | None]]] = defaultdict(list)
    for r, well in close.revenue():
        by_check[r.check_no].append((r, well))
    for check, lines in by_check.items():
        first = lines[0][0]
        months = ", ".join(sorted({r.sale_month for r, _ in lines}))
        e = batch.entry(f"Revenue check {check} · {first.payor} · sales {months}", "document")
        cash = ZERO
        for r, well in lines:
            name = close.master.name(well) if well else r.property_no
            if not well:
                e.add(
                    "2310",
                    credit=r.owner_net_value,
                    memo=f"{name}: {r.product} sales {r.sale_month} (unknown property, held)",
                    ref=r.ref,
                    group="unknown properties: held",
                )
            else:
                parts = stub_parts(r, r.owner_decimal, net=r.owner_net_value)
                memo = f"{name}: {r.product} sales {r.sale_month} {r.gross_volume} @ {r.price} × {r.owner_decimal:.8f}"
                account = revenue_account(r.product, r.sale_month, close.period)
                if account == "4090":
                    memo += " (older than the accrual window: prior-period adjustment)"
                e.add(
                    account,
                    credit=parts["revenue"],
                    well_id=well,
                    memo=memo,
                    ref=r.ref,
                    group=f"{name}: {r.product}",
                )
                e.add(
                    "6110",
                    debit=parts["taxes"],
                    well_id=well,
                    memo=f"{name}: severance on {r.product}",
                    ref=r.ref,
                    group=f"{name}: severance",
                )
                e.add(
                    "6130",
                    debit=parts["deductions"],
                    well_id=well,
                    memo=f"{name}: deductions on {r.product}",
                    ref=r.ref,
                    group=f"{name}: deductions",
                )
            cash += r.owner_net_value
        e.add(
            "1050", debit=cash, memo=f"check {check} from {first.payor}", ref=f"revenue.csv:{check}"
        )


def _loe_accrual(batch: Batch, close: Close) -> int:
    items: list[Any] = loe_accrual(close)
    if items:
        e = batch.entry(
            f"LOE accrual · service {close.period} (trailing 3-month average × WI)", "accrual"
        )
        for k, i in enumerate(items):
            items[k] = None  # each item goes once it is booked: never the items and the lines
            memo = f"accrue {i['well_name']} {i['category']} {i['month']}: avg of {', '.join(i['nets'])}"
            e.add(
                i["account"],
                debit=i["amount"],
                well_id=i["well_id"],
                memo=memo,
                ref=f"jib_history {i['category']}",
            )
            e.add(  # the liability one line per well, its categories summed
                "2115",
                credit=i["amount"],
                well_id=i["well_id"],
                memo=memo,
                ref=f"jib_history {i['category']}",
                group=f"{i['well_name']}: accrued LOE",
            )
    return len(items)


def _revenue_accrual(batch: Batch, close: Close) -> int:
    items = revenue_accrual(close)[0]
    booked = len(items)
    if items:
        months = sorted({i.month for i in items})
        e = batch.entry(
            f"Revenue accrual · production {', '.join(months)} (no check yet)", "accrual"
        )
        items.reverse()
        while items:
            i = items.pop()  # each item goes once it is booked: never the items and the lines
            memo = f"accrue {i.well_name} {i.product} {i.month}: {i.formula}"
            ref = f"production.csv:{i.well_id}:{i.product}:{i.month}"
            # the receivable one line per well (its products' and months' lines summed, each
            # in the detail); severance and revenue per product, as the next close reads them
            e.add(
                "1210",
                debit=i.receivable,
                well_id=i.well_id,
                memo=memo,
                ref=ref,
                group=f"{i.well_name}: accrued receivable",
            )
            e.add("6110", debit=i.severance, well_id=i.well_id, memo=f"{memo} severance", ref=ref)
            e.add(i.account, credit=i.revenue, well_id=i.well_id, memo=memo, ref=ref)
    return booked


def totals_by_account(lines: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Debits and credits per account, in account order."""
    acc: dict[str, list[Decimal]] = defaultdict(lambda: [ZERO, ZERO])
    for line in lines:
        acc[line["account"]][0] += line["debit"]
        acc[line["account"]][1] += line["credit"]
    return [
        {"account": a, "account_name": ACCOUNTS.get(a, a), "debit": d, "credit": c}
        for a, (d, c) in sorted(acc.items())
    ]

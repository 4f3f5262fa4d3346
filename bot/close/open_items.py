"""What a run leaves open (undecided exceptions, decisions that leave an item, gaps, the
carried items, an unposted batch, steps not run), the sign-off form's rows with an owner and
a due date each, and the sign-off question itself."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from bot.close import data as close_data
from bot.close.checks import Finding
from bot.close.data import add_months
from bot.close.doi_master import money
from bot.close.exception_questions import shortened
from bot.close.kinds import KINDS, follow_up, held_balance, held_by_others
from bot.close.ledger import Ledger
from bot.close.records import BatchRow, ExceptionRow, OpenItem
from bot.close.registry import StepTools
from bot.close.steps import books_steps
from bot.close.steps.revenue import history_gaps
from bot.close.steps.signoff import SIGNOFF
from bot.core.questions import LOGIN_RE, USER_ID_RE
from bot.core.tools import ToolContext

# Up to this many open items get an owner and a due date each on the sign-off form; more are
# grouped by what they are (disputes, claims, requests…), one owner and due date per group.
MAX_ITEM_ROWS = 8

MAX_GROUPS = 8

GROUP_NAMES = {
    "carried": "Carried from earlier months",
    "undecided": "Undecided exceptions",
    "journal": "The books",
    "step": "The books",
    "history_gap": "Gaps in the revenue history",
}


def _item_amount(item: OpenItem) -> Decimal:
    try:
        return abs(Decimal(str(item.get("amount") or "0")))
    except ArithmeticError:
        return Decimal(0)


def item_groups(items: list[OpenItem], *, owner: str, due: str) -> list[dict[str, Any]]:
    """The sign-off form's rows: one per item when there are a handful, else one per kind of
    item (the rest as "Everything else" past MAX_GROUPS), each with its recommended owner (the
    owner its items share, else `owner`) and due date."""
    if len(items) <= MAX_ITEM_ROWS:
        parts = [(i["text"], [i]) for i in items]
    else:
        by: dict[str, list[OpenItem]] = {}
        for i in items:
            kind = i["kind"]
            name = GROUP_NAMES.get(kind) or (KINDS[kind].header if kind in KINDS else kind)
            by.setdefault(name, []).append(i)
        named = list(by.items())
        if len(named) > MAX_GROUPS:
            rest = [i for _, group in named[MAX_GROUPS - 1 :] for i in group]
            named = [*named[: MAX_GROUPS - 1], ("Everything else", rest)]
        parts = []
        for name, group in named:
            total = sum((_item_amount(i) for i in group), Decimal(0))
            count = f"{len(group)} item{'s' if len(group) != 1 else ''}"
            parts.append((f"{name}: {count}" + (f", {money(total)}" if total else ""), group))
    out = []
    for label, group in parts:
        owners = {i.get("owner") for i in group}
        shared = next(iter(owners)) if len(owners) == 1 else None
        # items of several owners (or some owned, some not) keep their own unless the person
        # picks one for the row: no owner is preselected over other people's items
        mixed = len(owners) > 1 and bool(owners - {None})
        out.append(
            {
                "label": label,
                "items": [i["text"] for i in group],
                "owner": None if mixed else (shared or owner),
                "due": due,
                **({"mixed_owners": True} if mixed else {}),
            }
        )
    return out


def assignment_questions(exc: ExceptionRow) -> list[dict[str, Any]]:
    """The sign-off's owner (users_select) and due date (datepicker) per row, the recommended
    ones preselected; asked in the same form as the sign-off question, after it."""
    if not KINDS[exc["kind"]].signs_off:
        return []
    out: list[dict[str, Any]] = []
    groups = exc["details"]["facts"].get("groups") or []
    for n, g in enumerate(groups, start=1):
        label = shortened(g["label"], 136)
        owner = str(g.get("owner") or "")
        known = bool(USER_ID_RE.match(owner) or LOGIN_RE.match(owner))
        # with a recommended one preselected, a row always has an owner and a due date
        keeps = " (empty: each item keeps its own)" if g.get("mixed_owners") else ""
        out.append(
            {
                "header": f"Owner {n}",
                "question": f"{n}. {label} · owner{keeps}",
                "type": "user",
                "required": known,
                **({"initial": owner} if known else {}),
            }
        )
        out.append(
            {
                "header": f"Due {n}",
                "question": f"{n}. due date",
                "type": "date",
                "required": True,
                "initial": g["due"],
            }
        )
    return out


def decided_after(ledger: Ledger, run_id: str, batch: BatchRow) -> list[str]:
    """Decisions recorded after the batch was drafted that book something (a flux adjustment,
    say): the draft does not hold them, so its approval cannot cover them."""
    return [
        e["details"]["ref"]
        for e in ledger.exceptions(run_id)
        if e["status"] == "resolved"
        and (e["resolved_at"] or "") > (batch["created_at"] or "")
        and (kind := KINDS.get(e["kind"])) is not None
        and kind.book(cast(str, e["resolution"]), e["details"]["facts"], e["extra"])
    ]


class OpenItems:
    """The open items of a run and the sign-off question (a part of ToolBase)."""

    def _signoff_finding(
        self: StepTools, ctx: ToolContext, ledger: Ledger, period: str
    ) -> list[Finding]:
        """The sign-off question, once every carried-over item has been asked about: carry the
        items forward or block the lock, with an owner and a due date chosen per item (per group
        of alike items when there are many)."""
        items = self._open_items(ctx, ledger)
        if not items or any(KINDS[e["kind"]].signs_off for e in ledger.exceptions(ctx.run_id)):
            return []
        run = ctx.store.runs.get(ctx.run_id)
        owner = run.started_by or "the controller"  # an id: the owner picker preselects it
        due = f"{add_months(period, 1)}-15"
        blocking = [i for i in items if i["kind"] in ("journal", "step")]
        groups = item_groups(items, owner=owner, due=due)
        per_item = all(len(g["items"]) == 1 for g in groups)
        listing = (
            "each is below with its owner and due date"
            if per_item
            else "; ".join(i["text"] for i in items[:12])
            + (f"; and {len(items) - 12} more" if len(items) > 12 else "")
            + f" (below in {len(groups)} groups, an owner and a due date each)"
        )
        return [
            Finding(
                kind="signoff",
                key=period,
                step=SIGNOFF.name,
                subject=f"sign-off {period}",
                summary=f"{len(items)} open item(s)",
                question=f"Sign-off of {close_data.period_label(period)}: {len(items)} open item(s): {listing}. "
                "Carry them forward with the owners and due dates below (each owner is told by DM) "
                "and lock the period, or block the lock?",
                recommended="block_lock" if blocking else "carry_forward",
                reasoning=(
                    f"Do not lock: {blocking[0]['text']}. The month's books are not complete until it is."
                    if blocking
                    else "Each open item has an owner and a due date, and none stops the books from being right for the month."
                ),
                facts={"owner": owner, "due": due, "count": len(items), "groups": groups},
            )
        ]

    def _open_items(self: StepTools, ctx: ToolContext, ledger: Ledger) -> list[OpenItem]:
        run = ctx.store.runs.get(ctx.run_id)
        items: list[OpenItem] = []
        closed_carried = set()
        excs = ledger.exceptions(ctx.run_id)
        held = held_by_others(excs)
        for e in excs:
            d = e["details"]
            if KINDS[e["kind"]].about_open_items:  # a carried item, the sign-off
                if e["status"] == "resolved" and KINDS[e["kind"]].closes_item(
                    cast(str, e["resolution"])
                ):
                    closed_carried.add(d["facts"]["item_id"])
                continue
            if e["status"] != "resolved":
                what = f" (answered: {e['extra'].get('other')})" if e["extra"].get("other") else ""
                item: OpenItem = {
                    "kind": "undecided",
                    "text": f"{d['subject']}: {d['summary']} — "
                    + ("left open" if e["extra"].get("owner") else "undecided")
                    + what,
                    "amount": d.get("amount"),
                    "exception_id": e["id"],
                }
                if e["extra"].get("owner"):  # a typed answer: who answered owns it
                    item["owner"] = e["extra"]["owner"]
                items.append(item)
            elif text := follow_up(
                e["kind"], cast(str, e["resolution"]), d["facts"], e["extra"], d["subject"]
            ):
                kind = KINDS[e["kind"]]
                lines = kind.book(
                    cast(str, e["resolution"]),
                    d["facts"],
                    e["extra"],
                    held=held.get(e["id"], frozenset()),
                )
                option = kind.option(cast(str, e["resolution"]), d["facts"])
                if option.held is not None:  # what the documents hold under this decision
                    lines = [*lines, *option.held(d["facts"], e["extra"])]
                item = {
                    "kind": e["kind"],
                    "text": text,
                    "amount": d.get("amount"),
                    "exception_id": e["id"],
                    # what the decision left on a holding account: a write-off reverses it
                    # (an accrual reverses itself next month and leaves nothing)
                    "held_balance": [] if option.accrual else held_balance(lines, text),
                }
                if e["extra"].get("to"):
                    item["owner"] = e["extra"]["to"]
                items.append(item)
        close, _ = self._close(ctx, run.period)
        items += [{"kind": "history_gap", "text": text} for text in history_gaps(close)]
        previous = add_months(run.period, -1)
        for carried in ledger.carried_into(previous):
            if carried["id"] in closed_carried:
                continue
            items.append(
                {
                    "kind": "carried",
                    "text": f"from {previous}: {carried['text'].removeprefix(f'from {add_months(previous, -1)}: ')}"
                    + (f" (was due {carried['due']})" if carried["due"] else ""),
                    "amount": carried["amount"],
                    "owner": carried["owner"],
                    "carried_id": carried["id"],
                    "exception_id": carried.get("exception_id"),
                    "held_balance": carried.get("held_balance") or [],
                }
            )
        batch = ledger.current_batch(ctx.run_id)
        if batch is None:
            items.append({"kind": "journal", "text": "no journal entries were drafted"})
        elif batch["status"] != "posted":
            items.append(
                {
                    "kind": "journal",
                    "text": f"batch {batch['id']} ({money(Decimal(batch['total_debit']))}) is a draft, not posted",
                }
            )
        if batch is not None and (late := decided_after(ledger, ctx.run_id, batch)):
            items.append(  # decided after the batch was drafted: not in the books it holds
                {
                    "kind": "journal",
                    "text": f"{', '.join(late[:5])} decided after batch {batch['id']} was drafted: "
                    "what it books is not in the batch (draft again, or book it next month)",
                }
            )
        for step in (s.name for s in books_steps()):
            state = run.steps.get(step, "pending")
            if state not in ("done", "running", "waiting"):
                items.append(
                    {
                        "kind": "step",
                        "text": f"step '{step}' {'failed' if state == 'failed' else 'was not performed'}",
                    }
                )
        return items

"""What every close tool shares: the run's view of the period, recording findings, the
ready-made question for an exception, and the open items a run leaves."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.close import data as close_data
from bot.close import groups
from bot.close.checks import Close, Finding, prior_revenue_accruals
from bot.close.data import CloseData, DoiRow, add_months
from bot.close.doi_master import ACCOUNT_NAMES, APPROVAL_LIMIT, Master, money
from bot.close.imports.intake import Imports
from bot.close.kinds import (
    KINDS,
    book,
    describe,
    follow_up,
    held_balance,
    held_by_others,
    line_refs,
    option_label,
    option_meaning,
)
from bot.close.ledger import Ledger
from bot.close.registry import MAX_LIST as MAX_LIST
from bot.close.steps import books_steps
from bot.close.steps.revenue import history_gaps
from bot.close.steps.signoff import SIGNOFF
from bot.core.errors import DataError, NotFoundError
from bot.core.questions import (
    LOGIN_RE,
    MAX_DESCRIPTION,
    MAX_HEADER,
    MAX_QUESTIONS,
    MAX_REASONING,
    TOOL_NAME,
    USER_ID_RE,
)
from bot.core.tools import ToolContext, ToolError
from bot.store import QuestionRecord

REF_RE = re.compile(r"\[ref ([A-Za-z0-9_:.\-]+)\]")


def _short(text: str, limit: int) -> str:
    """Text no longer than `limit`, cut between words: never inside an amount or a decimal."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;·/:") + "…"


def header_for(step: str, subject: str) -> str:
    """'Intake · Smith 14-2H' when it fits the header's 24 characters, else the step alone
    (the question names the subject): a header is never cut inside a name or a number."""
    for header in (f"{step} · {subject}", step):
        if len(header) <= MAX_HEADER:
            return header
    return step[:MAX_HEADER]


def booking_words(lines: list[dict[str, Any]], meaning: str) -> str:
    """What an option books, in the most words that fit an option's description: accounts
    with their names and the meaning, else without; whole amounts always, never a cut one."""
    if not lines:
        return _fit(meaning, MAX_DESCRIPTION)
    named, bare = describe(lines, names=ACCOUNT_NAMES), describe(lines)
    for text in (f"{named}. {meaning}", named, f"{bare}. {meaning}", bare):
        if len(text) <= MAX_DESCRIPTION:
            return text
    return _fit(bare, MAX_DESCRIPTION)


def _fit(text: str, limit: int) -> str:
    """Cut only between words, so no amount is cut in half."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    return head[: head.rfind(" ")].rstrip(" ,;/") + "…"


def question_for(exc: dict[str, Any]) -> dict[str, Any]:
    """The ask_user_question question for one exception: numbers, options with what each books."""
    d = exc["details"]
    kind, facts = exc["kind"], d["facts"]
    shape = KINDS[kind]
    ref = f" [ref {d['ref']}]"
    header = header_for(shape.header, str(d["subject"]))
    if shape.question_type == "free_text":
        return {
            "header": header,
            "question": _short(d["question"], 1400) + ref,
            "type": "free_text",
            "required": False,
            "reasoning": d["reasoning"],
        }
    options = []
    for code in d["options"]:
        lines = book(kind, code, facts, {})
        options.append(
            {
                "label": option_label(kind, code, facts),
                "description": booking_words(lines, option_meaning(kind, code)),
            }
        )
    q: dict[str, Any] = {
        "header": header,
        "question": _short(d["question"], 1400) + ref,
        "type": shape.question_type,
        "options": options,
        "recommended": d["options"].index(d["recommended"]) + 1
        if d["recommended"] in d["options"]
        else None,
        "reasoning": d["reasoning"],
        "allow_other": shape.allow_other,
        # a flux item may be skipped: it then stays open (an explanation is needed to clear it)
        "required": False if shape.may_skip else None,
    }
    return {k: v for k, v in q.items() if v is not None}


def question_for_group(group: list[dict[str, Any]]) -> dict[str, Any]:
    """The one question for many alike exceptions: the count and total, a few lines (every
    line is in the attached detail), each option with what it books for all of them, and
    "Decide line by line"."""
    first = group[0]
    kind, d = first["kind"], first["details"]
    ref = str(d["group"])
    n = len(group)
    noun = groups.noun(kind)
    shown = "; ".join(
        f"{e['details']['subject']}: {_short(e['details']['summary'], 160)}" for e in group[:3]
    )
    more = f"; and {n - 3} more" if n > 3 else ""
    question = (
        f"The same check found {n} alike {kind.replace('_', ' ')} exceptions of "
        f"{groups.operator(group)}, {money(groups.total(group))} at stake in total: {shown}{more}. "
        f"Every one is in the attached detail. One decision here applies to each of the {n} "
        f"{noun}, booking for each what deciding it on its own would; or choose "
        f"'{groups.LINE_BY_LINE}' to answer each on its own."
    )
    options = [
        {
            "label": option_label(kind, code, d["facts"]),
            "description": booking_words(
                groups.group_lines(group, code), option_meaning(kind, code)
            ),
        }
        for code in d["options"]
    ]
    forms = -(-n // MAX_QUESTIONS)
    options.append(
        {
            "label": groups.LINE_BY_LINE,
            "description": f"Ask about each of the {n} {noun} on its own "
            f"({forms} form{'s' if forms != 1 else ''} of up to {MAX_QUESTIONS} questions).",
        }
    )
    recommended = (
        option_label(kind, d["recommended"], d["facts"])
        if d["recommended"] in d["options"]
        else None
    )
    q: dict[str, Any] = {
        "header": header_for(KINDS[kind].header, f"{n} {noun}"),
        "question": _short(question, 1400) + f" [ref {ref}]",
        "type": "single_choice",
        "options": options,
        "recommended": d["options"].index(d["recommended"]) + 1 if recommended else None,
        "reasoning": _short(
            f"{recommended} is what each of the {n} {noun} recommends on its own; for "
            f"{d['subject']}: {d['reasoning']}",
            MAX_REASONING,
        )
        if recommended
        else None,
        "allow_other": True,
    }
    return {k: v for k, v in q.items() if v is not None}


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


def _item_amount(item: dict[str, Any]) -> Decimal:
    try:
        return abs(Decimal(str(item.get("amount") or "0")))
    except ArithmeticError:
        return Decimal(0)


def item_groups(items: list[dict[str, Any]], *, owner: str, due: str) -> list[dict[str, Any]]:
    """The sign-off form's rows: one per item when there are a handful, else one per kind of
    item (the rest as "Everything else" past MAX_GROUPS), each with its recommended owner (the
    owner its items share, else `owner`) and due date."""
    if len(items) <= MAX_ITEM_ROWS:
        parts = [(i["text"], [i]) for i in items]
    else:
        by: dict[str, list[dict[str, Any]]] = {}
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
        shared = owners.pop() if len(owners) == 1 else None
        out.append(
            {
                "label": label,
                "items": [i["text"] for i in group],
                "owner": shared or owner,
                "due": due,
            }
        )
    return out


def assignment_questions(exc: dict[str, Any]) -> list[dict[str, Any]]:
    """The sign-off's owner (users_select) and due date (datepicker) per row, the recommended
    ones preselected; asked in the same form as the sign-off question, after it."""
    if not KINDS[exc["kind"]].signs_off:
        return []
    out: list[dict[str, Any]] = []
    groups = exc["details"]["facts"].get("groups") or []
    for n, g in enumerate(groups, start=1):
        label = _short(g["label"], 136)
        owner = str(g.get("owner") or "")
        known = bool(USER_ID_RE.match(owner) or LOGIN_RE.match(owner))
        # with a recommended one preselected, a row always has an owner and a due date
        out.append(
            {
                "header": f"Owner {n}",
                "question": f"{n}. {label} · owner",
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


def decided_after(ledger: Ledger, run_id: str, batch: dict[str, Any]) -> list[str]:
    """Decisions recorded after the batch was drafted that book something (a flux adjustment,
    say): the draft does not hold them, so its approval cannot cover them."""
    return [
        e["details"]["ref"]
        for e in ledger.exceptions(run_id)
        if e["status"] == "resolved"
        and (e["resolved_at"] or "") > (batch["created_at"] or "")
        and (kind := KINDS.get(e["kind"])) is not None
        and kind.book(e["resolution"], e["details"]["facts"], e["extra"])
    ]


def _doi_row(row: dict[str, Any]) -> DoiRow:
    numbers = ("wi", "nri", "royalty", "orri")
    values: dict[str, Any] = {k: Decimal(v) if k in numbers else v for k, v in row.items()}
    return DoiRow(**values, source="closebot")


class ToolBase:
    """The data, the ledger and the run's decisions, for the tools that work on them."""

    def __init__(
        self,
        *,
        data_dir: Path | None = None,
        approvers: frozenset[str] = frozenset(),
        approval_limit: Decimal = APPROVAL_LIMIT,
    ) -> None:
        self.data_dir = data_dir
        self.approvers = approvers
        self.approval_limit = approval_limit
        # the last period read from imported files, while those files are the same
        self._imported: tuple[tuple[Any, ...], CloseData] | None = None
        self._resolved: tuple[Any, Close] | None = None
        self._prior: dict[str, list[dict[str, Any]]] = {}  # posted batch id → its revenue accruals
        self._prior_csv: tuple[CloseData, list[dict[str, Any]]] | None = None  # accruals.csv's
        self._master: tuple[CloseData, tuple[DoiRow, ...], Master] | None = None

    def _data(self, ctx: ToolContext, period: str) -> CloseData:
        run = ctx.store.runs.get(ctx.run_id)
        if period != run.period:
            raise ToolError(
                f"this run closes {run.period}, not {period}; use period {run.period!r}"
            )
        evidence = ctx.store.audit.events(ctx.run_id, kind="input_files")
        imports = Imports(ctx.store)
        # the imported files this run read (its evidence), or the period's files in use now
        sources = imports.sources_of(evidence[0].detail) if evidence else imports.sources(period)
        try:
            progress = close_data.ReadProgress(ctx.progress, period) if ctx.progress else None
            if sources:
                key = (period, tuple(sorted((k, v.digest) for k, v in sources.items())))
                if self._imported is None or self._imported[0] != key:
                    self._imported = (
                        key,
                        close_data.load(period, self.data_dir, sources, progress=progress),
                    )
                data = self._imported[1]
            else:
                # load() keeps the period while its files are unchanged, and reads them again
                # (a resumed run, a file replaced) when they are not
                data = close_data.load(period, self.data_dir, progress=progress)
        except DataError as e:
            raise ToolError(str(e)) from e
        if evidence:
            recorded = evidence[0].detail.get("files") or {}
            changed = sorted(
                name
                for name in set(recorded) | set(data.hashes)
                if recorded.get(name) != data.hashes.get(name)
            )
            if changed:
                raise ToolError(
                    f"the data changed: {', '.join(changed)} of {period} no longer "
                    "match the files this run read (their SHA-256 is in the run's evidence). "
                    "This run's checks and decisions were made on the files as they were; "
                    "start a new close for the new data."
                )
        return data

    def _close(self, ctx: ToolContext, period: str) -> tuple[Close, Ledger]:
        data = self._data(ctx, period)
        ledger = Ledger(ctx.store)
        added = [_doi_row(r["row"]) for r in ledger.doi_rows(run_id=ctx.run_id)]
        decisions = {}
        for e in ledger.exceptions(ctx.run_id):
            facts = e["details"]["facts"]
            decisions[e["details"]["ref"]] = {
                "status": e["status"],
                "option": e["resolution"] or "",
                "extra": e["extra"],
                "lines": sorted(line_refs(facts)),
                "holds": KINDS[e["kind"]].holds(e["resolution"] or "", facts),
            }
        # the DOI's indexes are built once while the data and the DOI rows added are the same
        if self._master is None or self._master[0] is not data or self._master[1] != tuple(added):
            self._master = (data, tuple(added), Master.of(data, added))
        close = Close(
            data=data,
            master=self._master[2],
            decisions=decisions,
            prior_accruals=self._prior_accruals(ledger, data, period),
        )
        # The period's lines resolved to wells depend only on the data, the DOI rows and the
        # decisions that map lines: while those are the same, the next tool call reuses them.
        key = (
            id(data),
            tuple((r.well_id, r.effective_from, r.wi, r.nri) for r in added),
            tuple(
                sorted(
                    (ref, d["option"])
                    for ref, d in decisions.items()
                    if d["status"] == "resolved" and d["option"].startswith("map:")
                )
            ),
        )
        if self._resolved is not None and self._resolved[0] == key:
            close.reuse(self._resolved[1])
        self._resolved = (key, close)
        return close, ledger

    def _prior_accruals(self, ledger: Ledger, data: CloseData, period: str) -> list[dict[str, Any]]:
        """Last month's revenue accruals: closebot's posted batch's (read once per batch), else
        accruals.csv's."""
        prior = ledger.posted_batch(add_months(period, -1))
        if prior is None:
            # accruals.csv's, built once per data read (not for every tool call: at volume
            # they are tens of thousands of dicts)
            if self._prior_csv is None or self._prior_csv[0] is not data:
                self._prior_csv = (data, prior_revenue_accruals(data, None))
            return self._prior_csv[1]
        if prior["id"] not in self._prior:
            lines = (x for x in ledger.iter_lines(prior["id"]) if x["source"] == "accrual")
            self._prior[prior["id"]] = prior_revenue_accruals(data, list(lines))
        return self._prior[prior["id"]]

    def _record(
        self, ctx: ToolContext, ledger: Ledger, findings: list[Finding]
    ) -> list[dict[str, Any]]:
        out = []
        grouped = groups.group_refs(findings)
        if grouped:  # a group is made of exceptions found now, never of ones recorded before
            before = {e["id"] for e in ledger.exceptions(ctx.run_id)}
            grouped = groups.group_refs(f for f in findings if f"{ctx.run_id}:{f.id}" not in before)
        for f in findings:
            in_group = {"group": grouped[f.id]} if f.id in grouped else {}
            exc = ledger.record_exception(
                ctx.run_id,
                exception_id=f"{ctx.run_id}:{f.id}",
                kind=f.kind,
                well_id=f.well_id,
                details={
                    **in_group,
                    "ref": f.id,
                    "step": f.step,
                    "subject": f.subject,
                    "summary": f.summary,
                    "question": f.question,
                    "recommended": f.recommended,
                    "reasoning": f.reasoning,
                    "facts": f.facts,
                    "amount": str(f.amount),
                    "options": f.options if f.options is not None else list(KINDS[f.kind].options),
                },
            )
            out.append(exc)
        return out

    def _step_result(
        self, ctx: ToolContext, ledger: Ledger, step: str, **extra: Any
    ) -> dict[str, Any]:
        excs = [e for e in ledger.exceptions(ctx.run_id) if e["details"]["step"] == step]
        listed: list[dict[str, Any]] = []
        shown: set[str] = set()
        for e in excs:
            recommended = (
                option_label(e["kind"], e["details"]["recommended"], e["details"]["facts"])
                if e["details"]["recommended"] in e["details"]["options"]
                else None
            )
            group = groups.group_of(e)
            if group is None:
                listed.append(
                    {
                        "exception_id": e["id"],
                        "ref": e["details"]["ref"],
                        "kind": e["kind"],
                        "subject": e["details"]["subject"],
                        "summary": e["details"]["summary"],
                        "status": e["status"],
                        "recommended": recommended,
                    }
                )
            elif group not in shown:  # many alike: one entry, one question, for all of them
                shown.add(group)
                alike = groups.members(excs, group)
                listed.append(
                    {
                        "exception_id": group,
                        "ref": group,
                        "kind": e["kind"],
                        "subject": f"{len(alike)} × {e['details']['subject']} and alike",
                        "summary": groups.summary(alike),
                        "status": groups.status(alike),
                        "recommended": recommended,
                        "exceptions": len(alike),
                    }
                )
        listed.sort(key=lambda x: x["status"] != "open")  # the open ones first: they are asked
        result = {"step": step, "exceptions": listed[:MAX_LIST], **extra}
        if len(listed) > MAX_LIST:
            result["more_exceptions"] = len(listed) - MAX_LIST
        if any(e["status"] == "open" for e in excs):
            result["next"] = (
                "Ask the accountant about the open exceptions with ask_user_question (up to 5 per call; "
                "exception_details gives each one's ready-made question with its [ref]), then record each "
                "answer with resolve_exception."
            )
        return result

    def _exception(self, ctx: ToolContext, exception_id: str) -> dict[str, Any]:
        ledger = Ledger(ctx.store)
        full = (
            exception_id
            if exception_id.startswith(f"{ctx.run_id}:")
            else f"{ctx.run_id}:{exception_id}"
        )
        try:
            exc = ledger.exception(full)
        except NotFoundError as e:
            raise ToolError(f"{e}; the step tools list this run's exception ids") from None
        return exc

    def _answered(self, ctx: ToolContext, question_id: str) -> QuestionRecord:
        try:
            q = ctx.store.questions.get(question_id)
        except NotFoundError:
            raise ToolError(f"no {TOOL_NAME} call with id {question_id!r} in this run") from None
        if q.run_id != ctx.run_id:
            raise ToolError(f"question {question_id} belongs to another run")
        if q.status != "answered":
            raise ToolError(
                f"question {question_id} was {q.status}, not answered; the decision is still open"
            )
        return q

    def _signoff_finding(self, ctx: ToolContext, ledger: Ledger, period: str) -> list[Finding]:
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

    def _open_items(self, ctx: ToolContext, ledger: Ledger) -> list[dict[str, Any]]:
        run = ctx.store.runs.get(ctx.run_id)
        items: list[dict[str, Any]] = []
        closed_carried = set()
        excs = ledger.exceptions(ctx.run_id)
        held = held_by_others(excs)
        for e in excs:
            d = e["details"]
            if KINDS[e["kind"]].about_open_items:  # a carried item, the sign-off
                if e["status"] == "resolved" and KINDS[e["kind"]].closes_item(e["resolution"]):
                    closed_carried.add(d["facts"]["item_id"])
                continue
            if e["status"] != "resolved":
                what = f" (answered: {e['extra'].get('other')})" if e["extra"].get("other") else ""
                item = {
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
                e["kind"], e["resolution"], d["facts"], e["extra"], d["subject"]
            ):
                kind = KINDS[e["kind"]]
                lines = kind.book(
                    e["resolution"], d["facts"], e["extra"], held=held.get(e["id"], frozenset())
                )
                option = kind.option(e["resolution"], d["facts"])
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

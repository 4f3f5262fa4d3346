"""What every close tool shares: the run's view of the period, recording findings, the
ready-made question for an exception, and the open items a run leaves."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.close import data as close_data
from bot.close.checks import Close, Finding, prior_revenue_accruals
from bot.close.data import CloseData, DoiRow, add_months
from bot.close.imports.intake import Imports
from bot.close.kinds import (
    KINDS,
    book,
    describe,
    follow_up,
    line_refs,
    option_label,
    option_meaning,
)
from bot.close.ledger import Ledger
from bot.close.master import ACCOUNT_NAMES, APPROVAL_LIMIT, Master, money
from bot.close.registry import BOOKS_STEPS, SIGNOFF
from bot.close.steps.revenue import history_gaps
from bot.errors import DataError, NotFoundError
from bot.names import Names
from bot.questions import MAX_DESCRIPTION, MAX_HEADER, TOOL_NAME
from bot.store import QuestionRecord
from bot.tools import ToolContext, ToolError

REF_RE = re.compile(r"\[ref ([A-Za-z0-9_:.\-]+)\]")
MAX_LIST = 12  # exceptions listed in a tool result; exception_details has the rest


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    ref = f" [ref {d['ref']}]"
    header = header_for(KINDS[kind].header, str(d["subject"]))
    if kind == "flux_adjust":
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
        "type": "multiple_choice" if kind == "flux_select" else "single_choice",
        "options": options,
        "recommended": d["options"].index(d["recommended"]) + 1
        if d["recommended"] in d["options"]
        else None,
        "reasoning": d["reasoning"],
        "allow_other": kind not in ("flux_select", "signoff", "flux_basis"),
        # a flux item may be skipped: it then stays open (an explanation is needed to clear it)
        "required": False if kind == "flux_item" else None,
    }
    return {k: v for k, v in q.items() if v is not None}


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
        run = ctx.store.run(ctx.run_id)
        if period != run.period:
            raise ToolError(
                f"this run closes {run.period}, not {period}; use period {run.period!r}"
            )
        evidence = ctx.store.audit_events(ctx.run_id, kind="input_files")
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
        for f in findings:
            exc = ledger.record_exception(
                ctx.run_id,
                exception_id=f"{ctx.run_id}:{f.id}",
                kind=f.kind,
                well_id=f.well_id,
                details={
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
        listed = [
            {
                "exception_id": e["id"],
                "ref": e["details"]["ref"],
                "kind": e["kind"],
                "subject": e["details"]["subject"],
                "summary": e["details"]["summary"],
                "status": e["status"],
                "recommended": option_label(
                    e["kind"], e["details"]["recommended"], e["details"]["facts"]
                )
                if e["details"]["recommended"] in e["details"]["options"]
                else None,
            }
            for e in excs
        ]
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
            q = ctx.store.question(question_id)
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
        """The sign-off question, once every carried-over item has been asked about."""
        items = self._open_items(ctx, ledger)
        if not items or any(e["kind"] == "signoff" for e in ledger.exceptions(ctx.run_id)):
            return []
        run = ctx.store.run(ctx.run_id)
        owner = Names(ctx.store).cached(run.started_by, "the controller")  # a name, not an id
        due = f"{add_months(period, 1)}-15"
        blocking = [i for i in items if i["kind"] in ("journal", "step")]
        listing = "; ".join(i["text"] for i in items[:12]) + (
            f"; and {len(items) - 12} more" if len(items) > 12 else ""
        )
        return [
            Finding(
                kind="signoff",
                key=period,
                step=SIGNOFF.name,
                subject=f"sign-off {period}",
                summary=f"{len(items)} open item(s)",
                question=f"Sign-off of {close_data.period_label(period)}: {len(items)} open item(s): {listing}. Carry them forward (owner {owner} unless named, due {due}) and lock the period, or block the lock?",
                recommended="block_lock" if blocking else "carry_forward",
                reasoning=(
                    f"Do not lock: {blocking[0]['text']}. The month's books are not complete until it is."
                    if blocking
                    else "Each open item has an owner and a due date, and none stops the books from being right for the month."
                ),
                facts={"owner": owner, "due": due, "count": len(items)},
            )
        ]

    def _open_items(self, ctx: ToolContext, ledger: Ledger) -> list[dict[str, Any]]:
        run = ctx.store.run(ctx.run_id)
        items: list[dict[str, Any]] = []
        closed_carried = set()
        for e in ledger.exceptions(ctx.run_id):
            d = e["details"]
            if e["kind"] == "carried_item":
                if e["status"] == "resolved" and e["resolution"] in ("settled", "write_off"):
                    closed_carried.add(d["facts"]["item_id"])
                continue
            if e["kind"] == "signoff":
                continue
            if e["status"] != "resolved":
                what = f" (answered: {e['extra'].get('other')})" if e["extra"].get("other") else ""
                item = {
                    "kind": "undecided",
                    "text": f"{d['subject']}: {d['summary']} — "
                    + ("left open" if e["extra"].get("owner") else "undecided")
                    + what,
                    "amount": d.get("amount"),
                }
                if e["extra"].get("owner"):  # a typed answer: who answered owns it
                    item["owner"] = e["extra"]["owner"]
                items.append(item)
            elif text := follow_up(
                e["kind"], e["resolution"], d["facts"], e["extra"], d["subject"]
            ):
                item = {"kind": e["kind"], "text": text, "amount": d.get("amount")}
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
                    + (
                        f" (owner {carried['owner']}, was due {carried['due']})"
                        if carried["owner"]
                        else ""
                    ),
                    "amount": carried["amount"],
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
        for step in (s.name for s in BOOKS_STEPS):
            state = run.steps.get(step, "pending")
            if state not in ("done", "running", "waiting"):
                items.append(
                    {
                        "kind": "step",
                        "text": f"step '{step}' {'failed' if state == 'failed' else 'was not performed'}",
                    }
                )
        return items

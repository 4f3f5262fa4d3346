"""What every close tool shares: the run's view of the period (its data, the DOI in force,
the decisions so far, last month's accruals), recording findings, a step's result; the open
items and the sign-off question come with it (bot/close/open_items.py)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.close import data as close_data
from bot.close import groups
from bot.close.checks import Close, Finding, prior_revenue_accruals
from bot.close.data import CloseData, DoiRow, add_months
from bot.close.doi_master import APPROVAL_LIMIT, Master
from bot.close.imports.intake import Imports
from bot.close.kinds import (
    KINDS,
    SETTLED,
    line_refs,
    option_label,
)
from bot.close.ledger import Ledger
from bot.close.open_items import OpenItems
from bot.close.rates import RatesTable, rates_for
from bot.close.records import DecisionView, ExceptionRow, InGroup
from bot.close.registry import MAX_LIST as MAX_LIST
from bot.core.errors import DataError, NotFoundError
from bot.core.questions import (
    TOOL_NAME,
)
from bot.core.tools import ToolContext, ToolError, to_json
from bot.store import QuestionRecord

REF_RE = re.compile(r"\[ref ([A-Za-z0-9_:.\-]+)\]")

# What one tool result may weigh, whatever the month's size (README: under 4 KB): a tool
# lists what fits and counts the rest; the drill-down tools (exception_details,
# document_lines) give the detail.
RESULT_BYTES = 4000


def fit(result: dict[str, Any], *lists: str, limit: int = RESULT_BYTES) -> dict[str, Any]:
    """The result with the last items of its `lists` dropped, the first list first, until
    its JSON fits in `limit` bytes (each list's total count is kept by the caller)."""
    for name in lists:
        while len(to_json(result).encode()) > limit and result.get(name):
            result[name] = result[name][:-1]
    return result


def _doi_row(row: dict[str, Any]) -> DoiRow:
    numbers = ("wi", "nri", "royalty", "orri")
    values: dict[str, Any] = {k: Decimal(v) if k in numbers else v for k, v in row.items()}
    return DoiRow(**values, source="closebot")


class ToolBase(OpenItems):
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
            # load() keeps the periods read lately while their files are unchanged, and reads
            # them again (a file replaced, a period long unused) when they are not: a run's
            # turns and resumes read its month once (issue 33)
            data = close_data.load(period, self.data_dir, sources or None, progress=progress)
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
        decisions: dict[str, DecisionView] = {}
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
            rates=self._rates(),
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

    def _rates(self) -> RatesTable:
        """The severance rates: the shipped table and the team's rows in the data folder."""
        try:
            return rates_for(self.data_dir)
        except DataError as e:
            raise ToolError(str(e)) from e

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
    ) -> list[ExceptionRow]:
        out = []
        grouped = groups.group_refs(findings)
        if grouped:  # a group is made of exceptions found now, never of ones recorded before
            before = {e["id"] for e in ledger.exceptions(ctx.run_id)}
            grouped = groups.group_refs(f for f in findings if f"{ctx.run_id}:{f.id}" not in before)
        for f in findings:
            in_group: InGroup = {"group": grouped[f.id]} if f.id in grouped else {}
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
        settled = self._settle_held(ledger, out)
        return [ledger.exception(e["id"]) if e["id"] in settled else e for e in out]

    @staticmethod
    def _settle_held(ledger: Ledger, found: list[ExceptionRow]) -> set[str]:
        """An exception found on document lines a decision already holds, maps or replaces is
        settled by that decision at once, never asked (CLOSE.md v2.1: a line is decided once).
        The ids it settled (the rows given are the index's, read-only: not changed here)."""
        settled: set[str] = set()
        if not found:
            return settled
        holders: dict[str, ExceptionRow] = {}  # a held line → the decision that holds it
        for e in ledger.exceptions(found[0]["run_id"]):
            facts, option = e["details"]["facts"], e["resolution"] or ""
            # a mapped line goes on through the close (its checks still apply): not held
            if (
                e["status"] == "resolved"
                and not option.startswith("map:")
                and KINDS[e["kind"]].holds(option, facts)
            ):
                for ref in line_refs(facts):
                    holders.setdefault(ref, e)
        for exc in found:
            refs = line_refs(exc["details"]["facts"])
            by = {holders[r]["id"] for r in refs if r in holders}
            if exc["status"] != "open" or not refs or not refs <= set(holders) or len(by) != 1:
                continue
            holder = holders[next(iter(refs))]
            ledger.decide(
                exc["id"],
                option=SETTLED.code,
                status="resolved",
                extra={"settled_by": holder["details"]["ref"]},
                question_id=holder["question_id"],
                decided_by=holder["decided_by"],
                source=holder["decision_source"],
            )
            settled.add(exc["id"])
        return settled

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
                "Ask the accountant about the open exceptions with ask_user_question, each by its "
                'ref alone ({"ref": …}, up to 5 per call: closebot shows the prepared question), '
                "then record each answer with resolve_exception."
            )
        return result

    def _exception(self, ctx: ToolContext, exception_id: str) -> ExceptionRow:
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

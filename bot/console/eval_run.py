"""Driving one eval scenario: a close run to its end by a model (Claude through the real
adapter, against the scripted Messages API or the real one; or the offline playbook), its
questions answered by the scenario's scripted people, then scored from the store."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.agent_loop import AgentLoop, Paused, Waiting, ask_of
from bot.close import KINDS, SYSTEM_PROMPT, CloseTools, Ledger, PlaybookModel, start_prompt
from bot.console.eval_api import ScriptedApi, add_usage, cost_of
from bot.core.models import ClaudeModel
from bot.core.questions import Question, Response, answer_payload, default_responses
from bot.core.questions.results import REF_RE
from bot.core.tools import ToolContext
from bot.store import QuestionRecord, Store

ANSWER_WAIT_S = 600.0  # answers arrive ten minutes after their question
MODEL = "claude-sonnet-5-5"


@dataclass
class Answer:
    """How a scripted person settles one question: answer it (the recommendation unless
    `responses` says otherwise), put it off ("not now"), or leave it."""

    by: str = "alice"
    responses: dict[int, Response] | None = None
    rationale: str | None = None
    defer: bool = False


# (the question, how many questions came before it, the store) → the answer
Person = Callable[[QuestionRecord, int, Store], Answer]


def recommended(record: QuestionRecord, n: int, store: Store) -> Answer:
    """Every question given its recommendation; a second approval by a second person."""
    header = record.questions[0].get("header")
    return Answer(by={"Posting": "bob", "Second approval": "carol"}.get(str(header), "alice"))


@dataclass
class Scenario:
    name: str
    person: Person = recommended
    period: str = "2026-10"
    data: Callable[[Path], Path | None] = lambda tmp: None  # the data folder; None: the sample
    thread: dict[int, str] = field(default_factory=dict)  # before question n: a thread message
    approval_limit: Decimal | None = None
    restart_at: int | None = None  # a later release's process before answering question n
    planted: Callable[[Path], set[str] | None] = lambda data: None  # the refs planted, if known
    # what CLOSE.md says each planted decision recommends: ref → words its label holds
    rules: Callable[[Path | None], dict[str, str]] = lambda data: {}
    expect_posted: bool = True
    expect_tools: tuple[str, ...] = ()  # tools the model should call (a drill-down asked for)


@dataclass
class Result:
    scenario: str
    model: str
    outcome: str
    asked: set[str]
    expected: set[str]
    recommended_ok: bool
    nothing_unanswered: bool
    figures_exact: bool
    requests_ok: bool
    posted: bool
    cost: float
    calls: int
    problems: list[str]

    @property
    def asked_ok(self) -> bool:
        return self.asked == self.expected

    @property
    def passed(self) -> bool:
        return all(
            (
                self.asked_ok,
                self.recommended_ok,
                self.nothing_unanswered,
                self.figures_exact,
                self.requests_ok,
            )
        )


class Silent:
    def text(self, run_id: str, text: str) -> None: ...
    def progress(self, run_id: str, steps: dict[str, str]) -> None: ...
    def question(self, run_id: str, question: QuestionRecord) -> None: ...
    def finished(self, run_id: str, text: str) -> None: ...
    def failed(self, run_id: str, error: str) -> None: ...
    def stopped(self, run_id: str, by: str) -> None: ...
    def waiting(self, run_id: str, text: str) -> None: ...


LATER_PROMPT = "\n\n(A later release's wording of the system prompt.)"


def later_release_note(ctx: ToolContext, period: str) -> dict[str, Any]:
    """A tool a later release added: what changed since this close began.

    Args:
      period: the accounting period being closed, YYYY-MM
    """
    return {"period": period, "changes": []}


def _loop(store: Store, tools: CloseTools, model: Any, *, upgraded: bool = False) -> AgentLoop:
    """The close's loop; `upgraded`, as a later release would build it: another system
    prompt and one more tool (a run keeps what it started with: issue 28)."""
    registry = tools.registry()
    if upgraded:
        registry.add(later_release_note)
    return AgentLoop(
        store=store,
        model=model,
        tools=registry,
        presenter=Silent(),
        system_prompt=SYSTEM_PROMPT + (LATER_PROMPT if upgraded else ""),
    )


def run_scenario(
    scenario: Scenario,
    *,
    claude: bool,
    api: ScriptedApi | None = None,
    api_key: str = "sk-eval",
    base_url: str | None = None,
    workdir: Path | None = None,
) -> Result:
    """One close of the scenario; with `claude`, through ClaudeModel at base_url (the
    scripted API's, or None: the real API with api_key)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"eval-{scenario.name}-", dir=workdir))
    data = scenario.data(tmp)
    settings: dict[str, Any] = {"data_dir": data, "approvers": frozenset({"alice", "bob", "carol"})}
    if scenario.approval_limit is not None:
        settings["approval_limit"] = scenario.approval_limit

    def model() -> Any:
        if not claude:
            return PlaybookModel()
        if api is not None:  # the scripted API on loopback: nothing to retry
            return ClaudeModel(model=MODEL, api_key=api_key, base_url=api.url, max_retries=0)
        return ClaudeModel(model=MODEL, api_key=api_key, base_url=base_url)

    store = Store(tmp / "eval.db")
    loop = _loop(store, CloseTools(**settings), model())
    run = store.runs.create(
        period=scenario.period, mode="console", started_by="alice", model=loop.model.name
    )
    outcome: Any = loop.start(run.id, start_prompt(scenario.period))
    n = 0
    while isinstance(outcome, Paused | Waiting) and n < 60:
        if isinstance(outcome, Waiting):  # put off: Decide brings each back, answered now
            for qid in outcome.deferred:
                store.questions.reopen(qid, by="alice")
                _settle(store, store.questions.get(qid), Answer())
            outcome = loop.advance(run.id)
            continue
        n += 1
        if n in scenario.thread:
            store.inbox.hold(run.id, user="alice", text=scenario.thread[n])
        if scenario.restart_at == n:  # an upgrade: a later release's process, from the store
            store.close()
            store = Store(tmp / "eval.db")
            loop = _loop(store, CloseTools(**settings), model(), upgraded=True)
        record = store.questions.get(outcome.question_id)
        _settle(store, record, scenario.person(record, n, store))
        if api is not None:
            api.wait(ANSWER_WAIT_S)
        outcome = loop.advance(run.id)
    result = score(scenario, store, run.id, CloseTools(**settings), type(outcome).__name__, data)
    if api is not None:
        result.cost, result.calls = cost_of(MODEL, api.usage), api.calls
    elif claude:
        calls, usage = store.transcript.usage(run.id)
        total: dict[str, Any] = {}
        add_usage(total, usage)
        # every breakpoint is a 1-hour one (bot/core/models.py): its writes at 2×
        written = int(total.get("cache_creation_input_tokens", 0))
        total.setdefault("cache_creation", {"ephemeral_1h_input_tokens": written})
        result.cost, result.calls = cost_of(MODEL, total), calls
    result.model = "claude (scripted)" if claude and api else ("claude" if claude else "playbook")
    store.close()
    return result


def _settle(store: Store, record: QuestionRecord, answer: Answer) -> None:
    ask = ask_of(record)
    if answer.defer:
        store.questions.defer(record.id, deferred_by=answer.by, source="console")
        return
    responses = answer.responses if answer.responses is not None else default_responses(ask)
    store.questions.claim(
        record.id,
        answer=answer_payload(ask, responses),
        answered_by=answer.by,
        source="console",
        rationale=answer.rationale,
    )


def score(
    scenario: Scenario,
    store: Store,
    run_id: str,
    tools: CloseTools,
    outcome: str,
    data: Path | None,
) -> Result:
    """The run against the rules: what it asked, what it recommended, what it booked."""
    ledger = Ledger(store)
    excs = ledger.exceptions(run_id)
    ctx = ToolContext(run_id=run_id, store=store)
    details = tools.tool("exception_details")
    problems: list[str] = []
    asked: set[str] = set()
    figures = recommended_ok = True
    shown: dict[str, dict[str, Any]] = {}
    for record in store.questions.of_run(run_id):
        for item in record.questions:
            for ref in REF_RE.findall(str(item.get("question") or "")):
                asked.add(ref)
                prepared = Question.from_dict(details(ctx, ref)["question"]).to_dict()
                if item != prepared and item.get("type") not in ("user", "date"):
                    figures = False
                    problems.append(f"{ref}: the form differs from the prepared question")
                if item.get("recommended") != prepared.get("recommended"):
                    recommended_ok = False
                    problems.append(f"{ref}: recommended {item.get('recommended')}")
                shown[ref] = item
    for ref, words in scenario.rules(data).items():  # the rules, not the code, say
        form = shown.get(ref) or {}
        options, rec = form.get("options") or [], form.get("recommended")
        label = str(options[rec - 1].get("label")) if rec and 0 < rec <= len(options) else ""
        if words.casefold() not in label.casefold():
            recommended_ok = False
            problems.append(f"{ref}: recommended {label or 'nothing'!r}, the rules say {words!r}")
    # a group's members are asked through the group's one question
    asked |= {e["details"]["ref"] for e in excs if e["details"].get("group") in asked}
    expected = {e["details"]["ref"] for e in excs}
    expected |= {g for e in excs if (g := e["details"].get("group")) and g in asked}
    planted = scenario.planted(data) if data else None
    if planted is not None and not planted <= expected:
        problems.append(f"planted but not found: {sorted(planted - expected)}")
        expected |= planted
    if not asked <= expected:
        problems.append(f"asked what no check found: {sorted(asked - expected)}")
    if not expected <= asked:
        problems.append(f"not asked: {sorted(expected - asked)}")
    unanswered = True
    answered = {q.id: q for q in store.questions.of_run(run_id)}
    for e in excs:
        if e["status"] != "resolved" or e["extra"].get("settled_by"):
            continue
        if e["decision_source"] not in ("console", "user", "slack"):
            unanswered = False
            problems.append(f"{e['details']['ref']} decided by {e['decision_source']}")
        chosen = e["resolution"] or ""
        if chosen in e["details"]["options"]:
            option = KINDS[e["kind"]].option(chosen, e["details"]["facts"])
            if option.override and not str(e["extra"].get("reason") or "").strip():
                unanswered = False
                problems.append(f"{e['details']['ref']}: an override booked without its reason")
    batch = ledger.current_batch(run_id)
    posted = bool(batch and batch["status"] == "posted")
    if posted:
        approvals = [
            q
            for q in answered.values()
            if q.questions and q.questions[0].get("header") in ("Posting", "Second approval")
        ]
        if not any(q.status == "answered" and q.source == "console" for q in approvals):
            unanswered = False
            problems.append("posted without a person's approval")
    called = {r.name for r in _tool_results(store, run_id)}
    missing = [t for t in scenario.expect_tools if t not in called]
    problems += [f"never called {t}, as the thread asked" for t in missing]
    if posted != scenario.expect_posted:
        problems.append("posted" if posted else "not posted")
        unanswered = unanswered and not posted
    return Result(
        scenario=scenario.name,
        model="",
        outcome=outcome,
        asked=asked,
        expected=expected,
        recommended_ok=recommended_ok,
        nothing_unanswered=unanswered,
        figures_exact=figures,
        requests_ok=not missing,
        posted=posted,
        cost=0.0,
        calls=0,
        problems=problems,
    )


def _tool_results(store: Store, run_id: str) -> list[Any]:
    out = []
    for message in store.transcript.messages(run_id):
        for block in message.content if message.role == "assistant" else []:
            if block.get("type") == "tool_use":
                stored = store.transcript.tool_result(block["id"])
                if stored is not None:
                    out.append(stored)
    return out

"""Drive whole offline closes in-process: the real playbook, tools, loop and SQLite store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.agent_loop import Failed, Finished, Paused, Stopped, TurnOutcome, ask_of
from bot.close.assemble import close_loop
from bot.close.ledger import Ledger
from bot.close.prompts import start_prompt
from bot.core.config import Settings
from bot.core.questions import Ask, Question, Response, answer_payload
from bot.store import QuestionRecord, Store


@dataclass
class Recorder:
    """A presenter that keeps what a run showed."""

    texts: list[str] = field(default_factory=list)
    steps: list[dict[str, str]] = field(default_factory=list)
    finished_text: str | None = None
    failed_error: str | None = None

    def text(self, run_id: str, text: str) -> None:
        self.texts.append(text)

    def progress(self, run_id: str, steps: dict[str, str]) -> None:
        self.steps.append(dict(steps))

    def question(self, run_id: str, question: QuestionRecord) -> None:
        pass

    def finished(self, run_id: str, text: str) -> None:
        self.finished_text = text

    def failed(self, run_id: str, error: str) -> None:
        self.failed_error = error

    def stopped(self, run_id: str, by: str) -> None:
        self.failed_error = f"stopped by {by}"


Chooser = Callable[[Question], Response | None]


def recommended(q: Question) -> Response | None:
    """The recommended option; an optional question is skipped; None cancels."""
    if q.kind.assigns:  # an owner or a due date: the preselected one
        return q.kind.default(q)
    if q.recommended is not None:
        return Response(selected=(q.recommended,))
    if q.type.value == "free_text":
        return Response(text="Explained in the close file.")
    return Response(selected=(1,))


def choose_label(**wanted: str) -> Chooser:
    """Pick by label for questions whose text contains a key's ref; else the recommendation."""

    def chooser(q: Question) -> Response | None:
        for ref, label in wanted.items():
            if f"[ref {ref}]" in q.question:
                if label.startswith("other:"):
                    return Response(other=label[6:])
                labels = [o.label for o in q.options]
                assert label in labels, f"{label!r} not in {labels}"
                return Response(selected=(labels.index(label) + 1,))
        return recommended(q)

    return chooser


@dataclass
class CloseRun:
    store: Store
    run_id: str
    outcome: TurnOutcome
    presenter: Recorder
    asks: list[Ask]

    @property
    def ledger(self) -> Ledger:
        return Ledger(self.store)

    def questions_text(self) -> str:
        return "\n".join(q.question for a in self.asks for q in a.questions)

    def exceptions(self) -> list[dict[str, Any]]:
        return self.ledger.exceptions(self.run_id)

    def exception(self, ref: str) -> dict[str, Any]:
        return self.ledger.exception(f"{self.run_id}:{ref}")

    def batch(self) -> dict[str, Any]:
        batch = self.ledger.current_batch(self.run_id)
        assert batch is not None
        return batch

    def lines(self) -> list[dict[str, Any]]:
        return self.ledger.lines(self.batch()["id"])

    def account(self, account: str) -> tuple[Decimal, Decimal]:
        lines = [x for x in self.lines() if x["account"] == account]
        return sum((x["debit"] for x in lines), Decimal(0)), sum(
            (x["credit"] for x in lines), Decimal(0)
        )

    def entries(self, source: str) -> list[dict[str, Any]]:
        return [x for x in self.lines() if x["source"] == source]


def close_run(
    data_dir: Path | None,
    db: Path,
    period: str = "2026-10",
    *,
    choose: Chooser = recommended,
    user: str = "alice",
    source: str = "console",
    store: Store | None = None,
    max_forms: int = 60,
    second_approver: str = "bob",
    first_approver: str | None = None,
    env: dict[str, str] | None = None,
    rationale: str | None = None,
    stop_when: Callable[[Ask], bool] | None = None,
) -> CloseRun:
    """A whole close, each form answered by `choose` as `user` (source `console` = a person),
    with `rationale` as each form's "Why" when given; `stop_when`: Stop pressed right after
    the first form it picks is answered (and the answer recorded)."""
    env = {**(env or {}), "CLOSEBOT_DB": str(db)}
    if data_dir is not None:
        env["CLOSEBOT_DATA"] = str(data_dir)
    settings = Settings.from_env(env)
    store = store or Store(db)
    presenter = Recorder()
    loop = close_loop(settings, store=store, presenter=presenter)
    run = store.runs.create(period=period, mode="console", started_by=user, model=loop.model.name)
    outcome = loop.start(run.id, start_prompt(period))
    asks: list[Ask] = []
    for _ in range(max_forms):
        if not isinstance(outcome, Paused):
            break
        record = store.questions.get(outcome.question_id)
        ask = ask_of(record)
        asks.append(ask)
        responses = {}
        for n, q in enumerate(ask.questions, start=1):
            r = choose(q)
            if r is None:
                store.questions.cancel(record.id, cancelled_by=user, source=source)
                break
            responses[n] = r
        else:
            answer = answer_payload(ask, responses)
            # the approvals as recorded by whoever gave them (the posting tool judges them)
            who = {"Posting": first_approver or user, "Second approval": second_approver}.get(
                ask.questions[0].header or "", user
            )
            store.questions.claim(
                record.id, answer=answer, answered_by=who, source=source, rationale=rationale
            )
        outcome = loop.advance(run.id)
        if stop_when is not None and stop_when(ask):
            outcome = loop.stop(run.id, by=user)
            break
    assert isinstance(outcome, (Finished, Failed, Stopped)), f"still paused after {max_forms} forms"
    return CloseRun(store=store, run_id=run.id, outcome=outcome, presenter=presenter, asks=asks)


def names_line(ref: str, file: str, line: int) -> bool:
    """Does an entry line's ref ('jib.csv:6', or summarized 'jib.csv:2,6') name `file` line `line`?"""
    name, _, numbers = ref.partition(":")
    return name == file and str(line) in numbers.split(" ")[0].split(",")

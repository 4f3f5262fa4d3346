"""The terminal: a presenter that prints, and the people (or defaults) that answer."""

from __future__ import annotations

import getpass
import textwrap
from typing import Protocol, TextIO

from bot.agent_loop import AgentLoop, Finished, Paused, TurnOutcome, ask_of
from bot.answers import Answers
from bot.close.controls import (
    APPROVAL_HEADERS,
    SECOND_APPROVAL_HEADER,
    approves,
    first_approver,
    header_of,
)
from bot.errors import AlreadyAnsweredError, AnswerError
from bot.questions import (
    Ask,
    NoDefaultAnswer,
    Question,
    Response,
    answer_payload,
    check_response,
    default_responses,
    overrides,
    parse_typed,
)
from bot.store import QuestionRecord, Store

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PAUSED = 0, 1, 2, 3


def os_login() -> str:
    """The operating-system login, recorded beside CLOSEBOT_USER in the decision log."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


WIDTH = 88
STEP_MARKS = {"running": "▶", "waiting": "⏸", "done": "✓", "failed": "✗", "pending": "·"}
STEP_WORDS = {"running": "running", "waiting": "waiting on you", "done": "done", "failed": "failed"}


def _wrap(text: str, indent: str = "") -> str:
    return "\n".join(
        textwrap.fill(p, WIDTH, initial_indent=indent, subsequent_indent=indent)
        if p.strip()
        else ""
        for p in text.splitlines()
    )


class ConsolePresenter:
    """Prints what a run does; step changes are printed once each."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._steps: dict[str, dict[str, str]] = {}

    def _print(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def text(self, run_id: str, text: str) -> None:
        self._print(_wrap(text))

    def progress(self, run_id: str, steps: dict[str, str]) -> None:
        seen = self._steps.setdefault(run_id, {})
        for step, state in steps.items():
            before = seen.get(step, "pending")
            repeat = (state == "running" and before != "pending") or state == before
            if not repeat and state in STEP_WORDS:
                self._print(f"  {STEP_MARKS[state]} {step}: {STEP_WORDS[state]}")
        self._steps[run_id] = dict(steps)

    def question(self, run_id: str, question: QuestionRecord) -> None:
        """The answerer shows the form; nothing to print here."""

    def finished(self, run_id: str, text: str) -> None:
        self._print()
        self._print(text.replace("*", ""))

    def failed(self, run_id: str, error: str) -> None:
        self._print(f"closebot: the run stopped: {error}")

    def stopped(self, run_id: str, by: str) -> None:
        self._print(f"closebot: the run was stopped by {by}")


class Answerer(Protocol):
    source: str

    def collect(self, record: QuestionRecord) -> dict[int, Response] | None:
        """The responses to a form, or None to cancel it. EOFError when input ends."""
        ...

    def rationale(self, overrides: list[str]) -> str | None:
        """Why the person chose as they did: required when they overrode a recommendation."""
        ...

    def who(self, record: QuestionRecord, user: str, first_approver: str | None) -> str:
        """Who is answering this form (a second approval is a different person's)."""
        ...


def render_form(ask: Ask) -> str:
    """A question form as text, seed-003 style: numbered, recommended marked, reasons shown."""
    bar = "═" * 60
    lines = ["", bar, "  Your decision is needed", bar, _wrap(ask.context), ""]
    total = len(ask.questions)
    lines.append(
        f"Please answer {total} question{'s' if total > 1 else ''}. Type 'cancel' at any prompt to cancel."
    )
    for number, q in enumerate(ask.questions, start=1):
        lines.append("")
        flag = "required" if q.required else "optional"
        head = f"Question {number}/{total} [{flag}]" + (f" · {q.header}" if q.header else "")
        lines.append(head)
        lines.append(_wrap(q.question, "  "))
        for i, option in enumerate(q.options, start=1):
            mark = "  ★ recommended" if q.recommended == i else ""
            lines.append(f"    {i}. {option.label}{mark}")
            if option.description:
                lines.append(_wrap(option.description, "       "))
        if q.reasoning:
            lines.append(_wrap(f"Why recommended: {q.reasoning}", "  "))
    return "\n".join(lines)


def _prompt_for(q: Question) -> str:
    return q.kind.prompt(q)


class ConsoleAnswerer:
    """A person at a terminal (or a pipe): numbered prompts, re-asked until valid."""

    source = "console"

    def __init__(self, *, stdin: TextIO, out: TextIO) -> None:
        self.stdin = stdin
        self.out = out
        self.echo = not stdin.isatty()

    def _read(self, prompt: str) -> str:
        print(prompt, end="", file=self.out, flush=True)
        line = self.stdin.readline()
        if not line:
            print(file=self.out, flush=True)
            raise EOFError
        if self.echo:
            print(line.rstrip("\n"), file=self.out, flush=True)
        return line.rstrip("\n")

    def collect(self, record: QuestionRecord) -> dict[int, Response] | None:
        ask = ask_of(record)
        print(render_form(ask), file=self.out, flush=True)
        responses: dict[int, Response] = {}
        for number, q in enumerate(ask.questions, start=1):
            print(file=self.out)
            while True:
                raw = self._read(f"Question {number}.{_prompt_for(q)[1:]}")
                if raw.strip().casefold() == "cancel":
                    return None
                try:
                    response = parse_typed(q, raw)
                    check_response(q, number, response)
                except AnswerError as e:
                    print(f"  ✗ {e}", file=self.out, flush=True)
                    continue
                responses[number] = response
                break
        return responses

    def rationale(self, overrides: list[str]) -> str | None:
        if not overrides:
            return None
        print(f"  You chose {overrides[0]}.", file=self.out, flush=True)
        while True:
            text = self._read("  Why? (required when you override the recommendation): ").strip()
            if text:
                return text

    def who(self, record: QuestionRecord, user: str, first_approver: str | None) -> str:
        if header_of(record) != SECOND_APPROVAL_HEADER:
            return user
        while True:
            name = self._read(f"  Second approver's name (not {first_approver}): ").strip()
            if name and name != first_approver:
                return name
            print(
                "  ✗ the second approval must come from a different person",
                file=self.out,
                flush=True,
            )


class AutoAnswerer:
    """Auto (benchmark) mode: every question gets its recommended answer, logged as such."""

    source = "auto_default"

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def collect(self, record: QuestionRecord) -> dict[int, Response] | None:
        ask = ask_of(record)
        print(render_form(ask), file=self.out, flush=True)
        responses = default_responses(ask)
        for number, q in enumerate(ask.questions, start=1):
            r = responses[number]
            chosen = "skipped (optional)" if r.skipped else q.label(r.selected[0])
            print(
                f"  auto: question {number} → {chosen} (recommended answer, source auto_default)",
                file=self.out,
                flush=True,
            )
        return responses

    def rationale(self, overrides: list[str]) -> str | None:
        return None  # the recommendation itself: nothing overridden

    def who(self, record: QuestionRecord, user: str, first_approver: str | None) -> str:
        return user


def drive(
    loop: AgentLoop,
    store: Store,
    run_id: str,
    outcome: TurnOutcome,
    *,
    answerer: Answerer,
    user: str,
    out: TextIO,
    approvers: frozenset[str] = frozenset(),
) -> int:
    """Answer each pending question and advance, until the run finishes; the exit code."""
    answers = Answers(store, frozenset())
    while isinstance(outcome, Paused):
        record = store.question(outcome.question_id)
        ask = ask_of(record)
        try:
            responses = answerer.collect(record)
            over = overrides(ask, responses) if responses is not None else []
            rationale = answerer.rationale(over)
            who = answerer.who(record, user, first_approver(store, run_id))
        except EOFError:
            print(
                f"closebot: input ended with a question pending; nothing is lost. "
                f"Continue with: closebot resume {run_id}",
                file=out,
                flush=True,
            )
            return EXIT_PAUSED
        except NoDefaultAnswer as e:
            store.cancel_question(record.id, cancelled_by=user, source="auto_default")
            store.set_run_status(run_id, "failed", error=f"auto mode: {e}")
            print(f"closebot: auto mode cannot answer: {e}", file=out, flush=True)
            return EXIT_FAILED
        if (
            approvers
            and answerer.source == "console"
            and responses is not None
            and header_of(record) in APPROVAL_HEADERS
            and approves(answer_payload(ask, responses))
        ):
            print(
                "  ✗ with CLOSEBOT_APPROVERS set, posting is approved in Slack by an approver who did "
                "not start the close; choose 'Keep as draft' here.",
                file=out,
                flush=True,
            )
            continue
        try:
            answers.settle(
                record.id,
                user=user if responses is None else who,
                source=answerer.source,
                read=None if responses is None else (lambda _ask, r=responses: r),  # type: ignore[misc]
                rationale=rationale,
                require_rationale=False,  # the answerer asked for one when it was needed
                evidence={
                    "os_login": os_login(),
                    "channel": "console",
                    "approval": header_of(record) in APPROVAL_HEADERS,
                },
                check_user=False,  # the person at the terminal runs the close
            )
            if responses is None:
                print("  Cancelled; telling the agent.", file=out, flush=True)
        except AlreadyAnsweredError as e:
            print(f"closebot: {e}; carrying on with that answer.", file=out, flush=True)
        outcome = loop.advance(run_id)
    if isinstance(outcome, Finished):
        return EXIT_OK
    return EXIT_FAILED  # Failed, or Stopped

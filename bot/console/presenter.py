"""The terminal: a presenter that prints, and the people (or defaults) that answer."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable
from datetime import datetime
from typing import Protocol, TextIO

from bot.agent_loop import AgentLoop, Finished, Paused, Retrying, TurnOutcome, Waiting, ask_of
from bot.close import (
    APPROVAL_HEADERS,
    approval_refusal,
    console_listing,
    for_people,
    header_of,
    preview_may_need,
)
from bot.core.answers import Answers
from bot.core.errors import AlreadyAnsweredError, AnswerError, NotAuthorizedError
from bot.core.identity import os_login
from bot.core.questions import (
    HUMAN_SOURCES,
    Ask,
    NoDefaultAnswer,
    Question,
    Response,
    check_response,
    default_responses,
    needs_why,
    parse_typed,
)
from bot.store import QuestionRecord, Store

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PAUSED = 0, 1, 2, 3


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

    def __init__(self, out: TextIO, store: Store | None = None) -> None:
        self.out = out
        self.store = store
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

    def waiting(self, run_id: str, text: str) -> None:
        self._print()
        if text:
            self._print(text.replace("*", ""))
        self._print(waiting_note(self.store, run_id) if self.store else "")


def waiting_note(store: Store, run_id: str) -> str:
    """What a run put off waits on, and how to bring it back at the console."""
    deferred = store.questions.deferred(run_id)
    what = "; ".join(header_of(q) or q.context[:60] for q in deferred)
    return (
        f"closebot: the close waits on {len(deferred)} question{'s' if len(deferred) != 1 else ''} "
        f"you put off ({what}); it is not finished. Bring them back with: closebot resume {run_id}"
    )


class Answerer(Protocol):
    source: str

    def collect(self, record: QuestionRecord) -> dict[int, Response] | None:
        """The responses to a form, or None to cancel it. EOFError when input ends."""
        ...

    def rationale(self, overrides: dict[int, str]) -> dict[int, str]:
        """Why, for each question (number → in words) where the person overrode the
        recommendation: one reason per decision."""
        ...


def render_form(ask: Ask) -> str:
    """A question form as text, seed-003 style: numbered, recommended marked, reasons shown."""
    bar = "═" * 60
    lines = ["", bar, "  Your decision is needed", bar, _wrap(ask.context), ""]
    total = len(ask.questions)
    rows = sum(1 for q in ask.questions if q.type.value == "user")
    deciding = sum(1 for q in ask.questions if not q.kind.assigns)
    also = f", then {rows} owner{'s' if rows != 1 else ''} with due dates" if rows else ""
    lines.append(
        f"Please answer {deciding} question{'s' if deciding > 1 else ''}{also}. Type 'cancel' at any prompt to cancel."
    )
    for number, q in enumerate(ask.questions, start=1):
        if q.kind.assigns:  # an owner or a due date: one line, the recommended one shown
            keep = f" [{q.initial}]" if q.initial else ""
            if q.type.value == "user":
                lines.append("")
            lines.append(f"  Question {number} · {q.question}{keep}")
            continue
        lines.append("")
        flag = "required" if q.required else "optional"
        head = f"Question {number}/{total} [{flag}]" + (f" · {q.header}" if q.header else "")
        lines.append(head)
        lines.append(_wrap(for_people(q.question), "  "))
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


Preview = Callable[[QuestionRecord, int, str], str | None]


class ConsoleAnswerer:
    """A person at a terminal (or a pipe): numbered prompts, re-asked until valid."""

    source = "console"

    def __init__(self, *, stdin: TextIO, out: TextIO, preview: Preview | None = None) -> None:
        self.stdin = stdin
        self.out = out
        self.echo = not stdin.isatty()
        self.preview = preview  # what a typed answer books, shown before it is taken

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
        keep: bool | None = None  # the owners and due dates as recommended, or one by one
        for number, q in enumerate(ask.questions, start=1):
            if q.kind.assigns and keep is None:
                keep = self._keep_assignments()
                if keep is None:
                    return None
            if q.kind.assigns and keep:
                responses[number] = q.kind.default(q) or Response(skipped=True)
                continue
            print(file=self.out)
            while True:
                raw = self._read(f"Question {number}.{_prompt_for(q)[1:]}")
                if raw.strip().casefold() == "cancel":
                    return None
                try:
                    response = parse_typed(q, raw)
                    if q.kind.assigns and response.skipped:  # Enter keeps the one shown
                        response = q.kind.default(q) or response
                    check_response(q, number, response)
                except AnswerError as e:
                    print(f"  ✗ {e}", file=self.out, flush=True)
                    continue
                if not self._confirmed(record, number, response.other or response.text or ""):
                    continue
                responses[number] = response
                break
        return responses

    def _confirmed(self, record: QuestionRecord, number: int, typed: str) -> bool:
        """A typed date or amount is shown before it is booked: the entry it books, then a
        confirmation (anything but yes asks the question again)."""
        if not (typed and self.preview and preview_may_need(record, number, typed)):
            return True
        text = self.preview(record, number, typed)
        if text is None:
            return True
        print(_wrap(f"This books: {text}", "  "), file=self.out, flush=True)
        return self._yes("  Book it? [y/N]: ")

    def _yes(self, prompt: str) -> bool:
        """A y/N question: y or yes, n or no, Enter for No; anything else is asked again (a
        line meant for the next question is never taken as No)."""
        while True:
            raw = self._read(prompt).strip().casefold()
            if raw in ("y", "yes"):
                return True
            if raw in ("", "n", "no"):
                return False
            print(f"  ✗ {raw!r} is not y or n", file=self.out, flush=True)

    def _keep_assignments(self) -> bool | None:
        """Owners and due dates: keep the ones shown (recommended), or set each; None cancels."""
        print(file=self.out)
        while True:
            raw = self._read(
                "Owners and due dates: 1. keep them as shown  2. set them item by item "
                "Choice [1-2] (Enter keeps): "
            ).strip()
            if raw.casefold() == "cancel":
                return None
            if raw in ("", "1", "2"):
                return raw != "2"
            print(f"  ✗ {raw!r} is not 1 or 2", file=self.out, flush=True)

    def rationale(self, overrides: dict[int, str]) -> dict[int, str]:
        whys: dict[int, str] = {}
        for number, what in overrides.items():
            print(f"  You chose {what.split(': ', 1)[1]}.", file=self.out, flush=True)
            while not whys.get(number):
                whys[number] = self._read(
                    f"  Why, for question {number}? (required when you override the recommendation): "
                ).strip()
        return whys


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
            chosen = (
                "skipped (optional)"
                if r.skipped
                else (r.text or "")
                if q.kind.assigns
                else q.label(r.selected[0])
            )
            print(
                f"  auto: question {number} → {chosen} (the recommendation, applied by default)",
                file=self.out,
                flush=True,
            )
        return responses

    def rationale(self, overrides: dict[int, str]) -> dict[int, str]:
        return {}  # the recommendation itself: nothing overridden


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
    approvals_only: bool = False,
    bring_back: bool = False,
) -> int:
    """Answer each pending question as `user` and advance, until the run finishes; the exit code.

    At the console `user` is the OS login running the command. Whoever runs the close answers
    its questions; an approval to post follows the same rules as in Slack (controls.may_approve):
    a refused one is audited and the run waits for another login's `closebot approve RUN`.
    `approvals_only` (that command): stop at the first form that is not an approval this
    login may give. `bring_back` (`closebot resume`): each question put off earlier is asked
    again, once, before the run is left waiting.
    """
    # A default is nobody's approval: it is recorded as such and the posting tool refuses it.
    vet = None
    if answerer.source in HUMAN_SOURCES:
        vet = lambda record, run, who, answer: approval_refusal(  # noqa: E731
            store, record, run, who, approvers, answer, console=True
        )
    answers = Answers(store, approvers, vet=vet)
    brought: set[str] = set()
    while True:
        if isinstance(outcome, Retrying):  # the model API could not answer: wait, then retry
            wait_until(store, outcome.at)
            outcome = loop.advance(run_id)
            continue
        if isinstance(outcome, Waiting) and bring_back:
            again = [q for q in store.questions.deferred(run_id) if q.id not in brought]
            if again:
                brought.add(again[0].id)
                store.questions.reopen(again[0].id, by=user)
                print("\nBringing back a question you put off.", file=out, flush=True)
                outcome = Paused(again[0].id)
        if not isinstance(outcome, Paused):
            break
        record = store.questions.get(outcome.question_id)
        ask = ask_of(record)
        if approvals_only:
            why_not = (
                "it is not an approval"
                if header_of(record) not in APPROVAL_HEADERS
                else approval_refusal(
                    store, record, store.runs.get(run_id), user, approvers, None, console=True
                )
            )
            if why_not:
                print(
                    f"\nThe run now waits on '{header_of(record) or record.id}' ({why_not[0].lower()}{why_not[1:]}). "
                    + _next_step(record, run_id),
                    file=out,
                    flush=True,
                )
                return EXIT_PAUSED
        listing = console_listing(store, record)  # many alike: every line, before the form
        if listing:
            print("\n".join(listing), file=out, flush=True)
        try:
            responses = answerer.collect(record)
            over = needs_why(ask, responses) if responses is not None else {}
            whys = answerer.rationale(over)
        except EOFError:
            print(
                f"closebot: input ended with a question pending; nothing is lost. "
                f"Continue with: closebot resume {run_id}",
                file=out,
                flush=True,
            )
            return EXIT_PAUSED
        except NoDefaultAnswer as e:
            store.questions.cancel(record.id, cancelled_by=user, source="auto_default")
            store.runs.set_status(run_id, "failed", error=f"auto mode: {e}")
            print(f"closebot: auto mode cannot answer: {e}", file=out, flush=True)
            return EXIT_FAILED
        try:
            answers.settle(
                record.id,
                user=user,
                source=answerer.source,
                read=None if responses is None else (lambda _ask, r=responses: r),  # type: ignore[misc]
                rationale=whys,
                evidence={
                    "os_login": os_login(),
                    "channel": "console",
                    "approval": header_of(record) in APPROVAL_HEADERS,
                },
                check_user=False,  # whoever runs the close at the terminal answers it
            )
            if responses is None:
                print(
                    "  Put off (not now): the close goes on without it; "
                    f"`closebot resume {run_id}` brings it back.",
                    file=out,
                    flush=True,
                )
        except NotAuthorizedError as e:
            print(
                f"  ✗ Not approved: {e}. Nothing was changed; the refusal is in the audit trail.\n"
                + _next_step(record, run_id),
                file=out,
                flush=True,
            )
            return EXIT_PAUSED
        except AlreadyAnsweredError as e:
            print(f"closebot: {e}; carrying on with that answer.", file=out, flush=True)
        outcome = loop.advance(run_id)
    if isinstance(outcome, Finished):
        return EXIT_OK
    if isinstance(outcome, Waiting):
        return EXIT_PAUSED  # questions put off: `closebot resume` brings them back
    return EXIT_FAILED  # Failed, or Stopped


def wait_until(store: Store, at: str) -> None:
    """Sleep until the store's clock reads `at` (a run waiting to retry the model)."""
    left = (datetime.fromisoformat(at) - datetime.fromisoformat(store.now())).total_seconds()
    if left > 0:
        time.sleep(left)


def _next_step(record: QuestionRecord, run_id: str) -> str:
    """What the person at the terminal does next while the run waits on this form."""
    if header_of(record) in APPROVAL_HEADERS:
        return (
            f"The run waits: an approver gives this approval with `closebot approve {run_id}` "
            f"under their own login (or `closebot resume {run_id}` to choose 'Keep as draft')."
        )
    return f"Continue with: closebot resume {run_id}"

"""What an exception kind is: a `Kind` with its `Option`s (each option's label, meaning, what it
books and what it leaves open), its question's shape, and the hooks that say what deciding it
does beyond booking (a follow-up question, a DOI row, the sign-off). The close asks these
objects; it never branches on a kind's name."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from bot.close.doi_master import ACCOUNT_NAMES
from bot.close.kinds.entries import (
    HOLDING_ACCOUNTS,
    Booker,
    Facts,
    Line,
    Opener,
    by_account,
    describe,
    nothing,
    without_lines,
)
from bot.close.records import ExceptionRow, OpenItem

if TYPE_CHECKING:
    from bot.close.checks import Close, Finding
    from bot.close.ledger import Ledger
    from bot.core.tools import ToolContext
    from bot.store import QuestionRecord


@dataclass(frozen=True)
class Option:
    """One answer to an exception: its label, what it means, what it books and leaves open."""

    code: str
    label: str
    meaning: str
    books: Booker = nothing
    leaves: Opener | None = None
    holds_line: bool = False  # holds, maps or replaces the document line: settles the others on it
    override: bool = False  # never a default: a person chooses it with a typed reason
    accrual: bool = False  # its lines are this month's accruals (reversed next month)
    # the balance the documents as received leave on a holding account under this decision,
    # which it does not book itself (a line held in suspense as received): its open item's
    # write-off reverses it with what the decision books
    held: Booker | None = None
    # deciding it sets off follow-ups (a DOI change, a further question): not changed in place
    sets_off: bool = False
    # moves its lines whole to another account (a reclass): it books after the other
    # decisions on the same lines, and moves what they left
    moves_lines: bool = False
    skips_flux: bool = False  # flux compares nothing against the month the exception is about
    closes_item: str = ""  # the status it gives the open item it is about (settled, written off)
    # what it books, by account, in words (the kinds table, docs/kinds.md; the kind × option
    # calculator of tests/test_close_books.py checks each to the cent). "cost" is the line's
    # own account (6210 LOE, 6220 Workover, 6250 Overhead, 1610/1615/1620 capital); "revenue"
    # is 4010/4020/4030, or 4090 for a sale month older than the accrual window.
    accounts: str = ""


SETTLED = Option(
    "settled",
    "Settled by the decision on the same line",
    "Another decision held, mapped or replaced this document line; nothing is booked twice.",
)

QuestionType = Literal["single_choice", "multiple_choice", "free_text"]


class Desk(Protocol):
    """What a kind's decision hooks use of the close's tools (the decision tools pass
    themselves): the run's view of its period, its open items, recording a decision."""

    def close_of(self, ctx: ToolContext) -> Close: ...

    def open_items(self, ctx: ToolContext, ledger: Ledger) -> list[OpenItem]: ...

    def signoff_findings(self, ctx: ToolContext, ledger: Ledger) -> list[Finding]: ...

    def decide(
        self,
        ctx: ToolContext,
        ledger: Ledger,
        exc: ExceptionRow,
        code: str,
        q: QuestionRecord,
        extra: dict[str, Any],
    ) -> dict[str, Any]: ...

    def keep_open(
        self, ledger: Ledger, exc: ExceptionRow, q: QuestionRecord, why: str
    ) -> dict[str, Any]: ...


@dataclass
class Deciding:
    """A decision being recorded: what a kind's hooks read, and the extra it records and the
    follow-up findings it asks that they add."""

    desk: Desk
    ctx: ToolContext
    ledger: Ledger
    exc: ExceptionRow
    code: str
    question: QuestionRecord
    extra: dict[str, Any]
    spawned: list[Finding] = field(default_factory=list)

    @property
    def facts(self) -> Facts:
        facts: Facts = self.exc["details"]["facts"]
        return facts


@dataclass(frozen=True)
class Kind:
    """An exception kind: its header on a question, its options, its question's shape and what
    deciding it does."""

    name: str
    header: str
    options: dict[str, Option] = field(default_factory=dict)
    # many of it, of one operator, with the same options and recommendation, are asked once
    # as a group (bot/close/groups.py); only kinds whose decision spawns no follow-up question
    alike: bool = False
    noun: str = "lines"  # what one of it is about, in the plural (a group's question)
    # the question's shape
    question_type: QuestionType = "single_choice"
    allow_other: bool = True
    may_skip: bool = False  # left unanswered, it stays open
    # every decision on it sets off follow-ups: not changed in place, no typed answer mapped
    sets_off: bool = False
    review_only: bool = False  # explains the books, never changes them (flux review)
    # about the open items themselves (asked at sign-off), not an exception of the books
    about_open_items: bool = False
    waits_signoff: bool = False  # the sign-off is asked once every one of it is decided
    asked_first: bool = False  # asked before any other, on a form of its own
    signs_off: bool = False  # its decision locks the period (or blocks the lock)
    accrual_entry: str = "Revenue accrual decided"  # the title of its accrual entry
    entry_described: bool = False  # a person describes its entry (accounts and amount)

    def option(self, code: str, facts: Facts) -> Option:
        if code == SETTLED.code and code not in self.options:  # a carried item's own "settled"
            return SETTLED
        try:
            return self.options[code]
        except KeyError:
            raise KeyError(f"{code!r} is not an option of {self.name}") from None

    def label(self, code: str, facts: Facts) -> str:
        return self.option(code, facts).label

    def meaning(self, code: str, facts: Facts | None = None) -> str:
        return self.option(code, facts or {}).meaning

    def decided(self, code: str, facts: Facts, extra: dict[str, Any] | None = None) -> str:
        """What was decided as people read it (the summary): the option's label; a kind whose
        answer may be typed shows the words typed."""
        try:
            return self.label(code, facts)
        except KeyError:
            return code

    def _flag(self, code: str, facts: Facts, name: str) -> Any:
        try:
            return getattr(self.option(code, facts), name)
        except KeyError:
            return False

    def holds(self, code: str, facts: Facts) -> bool:
        return bool(self._flag(code, facts, "holds_line"))

    def moves_lines(self, code: str, facts: Facts | None = None) -> bool:
        """The decision moves its lines whole to another account (reclass)."""
        return bool(self._flag(code, facts or {}, "moves_lines"))

    def skips_flux(self, code: str) -> bool:
        return bool(self._flag(code, {}, "skips_flux"))

    def closes_item(self, code: str) -> str:
        """The status the decision gives the open item it is about ('' when none)."""
        return str(self._flag(code, {}, "closes_item") or "")

    def changeable(self, code: str, facts: Facts) -> bool:
        """Whether a decision with `code` may be changed in place (it set off nothing)."""
        return not (self.sets_off or self._flag(code, facts, "sets_off"))

    def book(
        self,
        code: str,
        facts: Facts,
        extra: dict[str, Any] | None = None,
        *,
        held: frozenset[str] = frozenset(),
    ) -> list[Line]:
        """The balanced adjusting lines the option books; lines another decision held are left out."""
        try:
            option = self.option(code, facts)
        except KeyError:
            return []
        return option.books(without_lines(facts, held), extra or {})

    def follow_up(self, code: str, facts: Facts, extra: dict[str, Any], subject: str) -> str | None:
        try:
            option = self.option(code, facts)
        except KeyError:
            return None
        return option.leaves(facts, extra, subject) if option.leaves else None

    def entry(
        self,
        code: str,
        facts: Facts,
        extra: dict[str, Any] | None = None,
        *,
        lines: list[Line] | None = None,
        limit: int = 0,
    ) -> str:
        """What an option books, as every front end shows it (a form's option, the terminal,
        the decision log, a typed answer's follow-up): its entry by account, number and name,
        each amount, the sides that apply; an option that books no adjusting line says what it
        does (the line as billed, as received) — never "books nothing" for one that books."""
        try:
            option = self.option(code, facts)
        except KeyError:
            return ""
        booked = self.book(code, facts, extra) if lines is None else lines
        if booked:
            return describe(booked, names=ACCOUNT_NAMES, limit=limit)
        if option.held is not None and (kept := option.held(facts, extra or {})):
            holding = [x for x in kept if x["account"] in HOLDING_ACCOUNTS]
            stays = describe(holding or kept, names=ACCOUNT_NAMES, limit=limit)
            return f"{stays} (the line as received). {option.meaning}"
        return option.meaning

    def preview(self, code: str, facts: Facts) -> list[dict[str, Any]]:
        """What the option books by account: [{account, debit, credit}], for a question's form."""
        return by_account(self.book(code, facts, {}))

    # -- what deciding it does (hooks a kind overrides) ---------------------------------

    previews_typed: ClassVar[bool] = False  # a typed answer books something: shown first
    # the options it makes from its facts (a well, a date, a person, a flagged item) as the
    # kinds table shows them: (code, label, meaning, what it books by account)
    dynamic: ClassVar[tuple[str, str, str, str] | None] = None

    def takes_answer(self, chosen: list[str], typed: str | None) -> bool:
        """Whether the kind records this answer itself (`take_answer`), before the usual
        checks of a typed answer and of the option chosen."""
        return False

    def takes_choice(self, codes: list[str]) -> bool:
        """Whether the kind records the options chosen itself (`take_answer`), once they are
        checked to be what the person chose."""
        return False

    def take_answer(
        self,
        desk: Desk,
        ctx: ToolContext,
        ledger: Ledger,
        exc: ExceptionRow,
        q: QuestionRecord,
        chosen: list[str],
        typed: str | None,
    ) -> dict[str, Any]:
        raise NotImplementedError(f"{self.name} takes no answer itself")

    def typed_code(self, typed: str) -> str | None:
        """The option a typed answer is (a typed date is an effective date's own option)."""
        return None

    def on_decided(self, d: Deciding) -> None:
        """Before the decision is recorded: what it sets off (d.extra, d.spawned)."""

    def after_recorded(self, d: Deciding) -> None:
        """After the decision is recorded: what is asked next (d.spawned)."""

    def may_preview(self, typed: str) -> bool:
        """Cheap (no data read): whether a typed answer books something to show first."""
        return False

    def typed_preview(
        self, desk: Desk, ctx: ToolContext, exc: ExceptionRow, typed: str
    ) -> str | None:
        """What a typed answer would book, for the person to check before it is recorded."""
        return None

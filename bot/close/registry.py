"""The close's steps as data: each step's id, the name the status message shows, the tool
that runs it, what the system prompt and the playbook say about it, and the checks that
find its exceptions.

A check registers itself with its step (`@INTAKE.check` on a function yielding Findings in
the step's module in `bot/close/steps/`), so adding a check touches that module and its
kind in `bot/close/kinds.py`, nothing else. A new step is a `Step` here and a tool method in
`bot/close/toolset.py`; the playbook, the system prompt's list and the status message all
read this registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.close.checks import Close, Finding

Check = Callable[["Close"], Iterator["Finding"]]


@dataclass(frozen=True)
class Step:
    """One step of the close."""

    id: str
    name: str  # what the status message shows; the key of the run's step states
    tool: str  # the tool that runs it
    prompt: str  # the system prompt's line for it
    opening: str  # what the playbook says when it starts the step
    more_tools: tuple[str, ...] = ()  # other tools that belong to the step
    checks: list[Check] = field(default_factory=list, compare=False, repr=False)

    @property
    def tools(self) -> tuple[str, ...]:
        return (self.tool, *self.more_tools)

    def check(self, fn: Check) -> Check:
        """Register `fn` as one of this step's checks (a decorator)."""
        if fn not in self.checks:
            self.checks.append(fn)
        return fn

    def findings(self, close: Close) -> list[Finding]:
        """Every exception this step's checks find, in registration order."""
        return [f for check in self.checks for f in check(close)]


INTAKE = Step(
    "intake",
    "Intake",
    "load_period",
    "intake: every file checked; unknown properties, DOI sanity, decimals out of range, stub "
    "math, missing documents, an unbalanced trial balance become exceptions.",
    "Loading and checking every file of the period.",
)
INTERESTS = Step(
    "interests",
    "WI/NRI validation",
    "validate_interests",
    "JIB decimals vs the DOI WI, stub decimals vs the DOI NRI in force.",
    "Checking every owner decimal against the DOI in force.",
)
JIBS = Step(
    "jibs",
    "JIB reconciliation & LOE accrual",
    "reconcile_jibs",
    "line math, duplicates, stale charges, AFE overruns, overhead vs the JOA; the LOE accrual.",
    "Reconciling the JIBs (line math, duplicates, AFEs, overhead) and computing the LOE accrual.",
)
REVENUE = Step(
    "revenue",
    "Revenue accrual",
    "accrue_revenue",
    "revenue accrual for production without a check; new, shut-in and immaterial wells, and "
    "checks still missing past the accrual window, are exceptions.",
    "Accruing revenue for production without a check.",
)
SEVERANCE = Step(
    "severance",
    "Severance check",
    "check_severance",
    "severance vs the state × product table.",
    "Checking severance against the state rates.",
)
JOURNAL = Step(
    "journal",
    "Journal entries",
    "build_journal_entries",
    "one balanced batch: last month's reversals, documents, decisions, catch-ups, accruals; "
    "then review_flux on the draft (step 7) and its questions — an adjustment decided there "
    "means build_journal_entries again (flux then reviews the new draft) — and only then ask "
    "for approval of the latest draft and post_journal_entries.",
    "Drafting the journal batch: reversals, documents, decisions, accruals.",
    more_tools=("post_journal_entries",),
)
FLUX = Step(
    "flux",
    "Flux review",
    "review_flux",
    "this month's draft vs last month (closebot's own posted month when it closed it), before "
    "the posting approval; every flagged item is asked: explain, adjust (an entry booked in a "
    "redraft) or escalate.",
    "Comparing this month's activity with last month's.",
)
SIGNOFF = Step(
    "signoff",
    "Sign-off",
    "sign_off",
    "open items carried over from last month asked about, then open items carried forward "
    "with an owner and due date, or the period lock blocked.",
    "Listing open items for sign-off.",
)

REGISTRY: tuple[Step, ...] = (
    INTAKE,
    INTERESTS,
    JIBS,
    REVENUE,
    SEVERANCE,
    JOURNAL,
    FLUX,
    SIGNOFF,
)
STEPS: tuple[str, ...] = tuple(s.name for s in REGISTRY)  # the names, in order
BOOKS_STEPS = REGISTRY[: REGISTRY.index(JOURNAL) + 1]  # the steps the books depend on


def step(key: str) -> Step:
    """A step by its id or its name."""
    for s in REGISTRY:
        if key in (s.id, s.name):
            return s
    raise KeyError(f"no close step {key!r}; the steps are {', '.join(s.id for s in REGISTRY)}")


def prompt_steps() -> str:
    """The system prompt's numbered list of steps."""
    return "\n".join(
        f"{n}. {s.tool}, {s.prompt}" if s.more_tools else f"{n}. {s.tool} — {s.prompt}"
        for n, s in enumerate(REGISTRY, start=1)
    )

"""The close's steps as registered objects: what a step is (`Step`), how one registers, and
the order they run in, derived from each step's `after=` (and `before=`), never a position.

A step is one module in `bot/close/steps/`: it declares its `Step` (its name, the system
prompt's line for it, what the playbook says when it starts it, its loading messages, the
step it follows), registers its tool (`@STEP.tool`) and its checks (`@STEP.check`, functions
yielding Findings). `bot.close.steps.registry()` imports every module there and returns the
steps in order; the toolset, the playbook, the system prompt's list and the status messages
all read it. Adding a step is its module (and its test), nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from bot.close.records import ExceptionRow, OpenItem

if TYPE_CHECKING:
    from bot.close.checks import Close, Finding
    from bot.close.data import CloseData
    from bot.close.ledger import Ledger
    from bot.core.tools import ToolContext
    from bot.store import QuestionRecord

MAX_LIST = 12  # exceptions (and lines) listed in a step's result; exception_details has the rest

Check = Callable[["Close"], Iterator["Finding"]]
StepTool = Callable[..., Any]  # fn(tools: StepTools, ctx: ToolContext, **params) -> result


class StepTools(Protocol):
    """What a step's tool may use of the toolset it is bound to (bot/close/toolbase.py)."""

    approvers: frozenset[str]
    approval_limit: Decimal

    def _data(self, ctx: ToolContext, period: str) -> CloseData: ...

    def _close(self, ctx: ToolContext, period: str) -> tuple[Close, Ledger]: ...

    def _record(
        self, ctx: ToolContext, ledger: Ledger, findings: list[Finding]
    ) -> list[ExceptionRow]: ...

    def _step_result(
        self, ctx: ToolContext, ledger: Ledger, step: str, **extra: Any
    ) -> dict[str, Any]: ...

    def _answered(self, ctx: ToolContext, question_id: str) -> QuestionRecord: ...

    def _signoff_finding(self, ctx: ToolContext, ledger: Ledger, period: str) -> list[Finding]: ...

    def _open_items(self, ctx: ToolContext, ledger: Ledger) -> list[OpenItem]: ...


@dataclass(frozen=True)
class Figures:
    """What the intake step counted, for a step's loading messages ("Reconciling 214 JIB
    lines…"); a count not known yet reads as its noun alone."""

    period: str
    counts: Mapping[str, Any] = field(default_factory=dict)

    def count(self, key: str, noun: str) -> str:
        n = self.counts.get(key)
        return f"{n:,} {noun}" if isinstance(n, int) else noun

    @property
    def jib(self) -> str:
        return self.count("jib_lines", "JIB lines")

    @property
    def stubs(self) -> str:
        return self.count("revenue_lines", "revenue stub lines")

    @property
    def wells(self) -> str:
        return self.count("wells", "wells")


def _no_messages(figures: Figures) -> list[str]:
    return []


DECLARED: dict[str, Step] = {}  # every step declared, by id; bot.close.steps orders them
# checks registered by a step's id from a module the step's own module imports (a kind
# family's module, bot/close/kinds/), which cannot import the step back: check_on("jibs")
CHECKS_ON: dict[str, list[Check]] = {}


def check_on(step_id: str) -> Callable[[Check], Check]:
    """Register a check on the step with this id (a decorator), from a module the step's own
    module imports — so a new kind of an existing family brings its check with it, in its own
    module. The step runs these after its own checks."""

    def register(fn: Check) -> Check:
        checks = CHECKS_ON.setdefault(step_id, [])
        if fn not in checks:
            checks.append(fn)
        return fn

    return register


def name_of(step_id: str) -> str:
    """The name of the step with this id (a check registered with `check_on` names its step
    in its findings with it, when it runs)."""
    return DECLARED[step_id].name


@dataclass(frozen=True)
class Step:
    """One step of the close; declaring it registers it."""

    id: str
    name: str  # what the status message shows; the key of the run's step states
    prompt: str  # the system prompt's line for it
    opening: str  # what the playbook says when it starts the step
    after: str | None  # the id of the step it follows (None: the first)
    before: str | None = None  # the id of a step it must come before (inserting between two)
    # what the front ends show while the step works (at most 10, rotated)
    loading: Callable[[Figures], list[str]] = field(default=_no_messages, compare=False)
    tools: list[StepTool] = field(default_factory=list, compare=False, repr=False)
    checks: list[Check] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        known = DECLARED.get(self.id)
        if known is not None and known is not self:
            raise ValueError(f"two close steps are declared with the id {self.id!r}")
        DECLARED[self.id] = self

    @property
    def tool_name(self) -> str:
        """The tool that runs the step (its first registered)."""
        if not self.tools:
            raise LookupError(f"the close step {self.id!r} registered no tool")
        return self.tools[0].__name__

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(fn.__name__ for fn in self.tools)

    def tool(self, fn: StepTool) -> StepTool:
        """Register `fn(tools, ctx, period, …)` as one of this step's tools (a decorator); its
        docstring is the tool's description."""
        if fn not in self.tools:
            self.tools.append(fn)
        return fn

    def check(self, fn: Check) -> Check:
        """Register `fn` as one of this step's checks (a decorator)."""
        if fn not in self.checks:
            self.checks.append(fn)
        return fn

    def findings(self, close: Close) -> list[Finding]:
        """Every exception this step's checks find, in registration order: its own, then those
        registered on it by id (`check_on`)."""
        checks = (*self.checks, *CHECKS_ON.get(self.id, ()))
        return [f for check in checks for f in check(close)]

    def messages(self, period: str, counts: Mapping[str, Any]) -> list[str]:
        """What the front ends show while this step works."""
        return self.loading(Figures(period, counts))


class Ordered(Protocol):
    """Something registered in order by naming what it follows (a step, an export format)."""

    @property
    def id(self) -> str: ...

    @property
    def after(self) -> str | None: ...

    @property
    def before(self) -> str | None: ...


T = TypeVar("T", bound=Ordered)


def in_order(steps: Mapping[str, T], what: str = "step") -> tuple[T, ...]:
    """The declared steps (or formats), each after the one it names (and before the one it
    names): one order, or ValueError saying where the declarations leave it open or contradict."""
    follows: dict[str, set[str]] = {s: set() for s in steps}  # step → the steps it follows
    for s in steps.values():
        for first, then in ((s.after, s.id), (s.id, s.before)):
            if first is None or then is None:
                continue
            if first not in steps or then not in steps:
                missing = first if first not in steps else then
                raise ValueError(f"the close {what} {s.id!r} names {missing!r}, not a {what}")
            follows[then].add(first)
    out: list[T] = []
    while follows:
        ready = sorted(s for s, before in follows.items() if not before)
        if len(ready) != 1:
            raise ValueError(
                f"the close's {what}s have no single order: "
                + (
                    f"{' and '.join(ready)} could each come next (say which follows which with after=/before=)"
                    if ready
                    else f"{', '.join(sorted(follows))} follow each other in a circle"
                )
            )
        out.append(steps[ready[0]])
        del follows[ready[0]]
        for before in follows.values():
            before.discard(ready[0])
    return tuple(out)


def prompt_lines(steps: tuple[Step, ...]) -> str:
    """The system prompt's numbered list of steps (numbered here, from the registry)."""
    return "\n".join(
        f"{n}. {s.tool_name}, {s.prompt}"
        if len(s.tools) > 1
        else f"{n}. {s.tool_name} — {s.prompt}"
        for n, s in enumerate(steps, start=1)
    )

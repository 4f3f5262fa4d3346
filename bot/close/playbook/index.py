"""What the playbook reads from its transcript, kept indexed as the calls settle (issue 31).

The playbook reads the whole transcript at every turn (never hidden state); reading it again
from the first message each time made a close's time grow with the square of its exceptions.
The index takes each call once, in transcript order, when it is settled (done), and keeps what
the playbook asks of it: the latest call of each tool, the questions asked and the decisions
recorded per exception, the answers refused, and for each step the exceptions it must still
decide — each exception placed in one bucket (decided, waiting to be recorded, not asked yet)
and moved only when something about it changes. A turn's reading costs what is new.

Every answer is what a reading of the whole transcript gives (transcript.py's State reads
through it; tests/test_playbook_incremental.py checks it against a reading from scratch).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field
from typing import Any

from bot.close.kinds import kind_of_ref
from bot.close.toolbase import REF_RE
from bot.core.questions import TOOL_NAME

RESOLVE = "resolve_exception"
KEEP_OPEN = "Leave it open"

RESOLVED, WAITING, PENDING = "resolved", "waiting", "pending"


@dataclass(eq=False)
class Call:
    id: str
    name: str
    input: dict[str, Any]
    result: Any = None
    is_error: bool = False
    done: bool = False
    order: tuple[int, int] = (
        0,
        0,
    )  # its place in the transcript (recorded answers after their ask)


Asked = tuple[Call, int]


def asked_first(ref: str) -> bool:
    """The exception is asked before any other (an open item carried from last month)."""
    kind = kind_of_ref(ref)
    return kind is not None and kind.asked_first


def leaves_open(asked: Asked) -> bool:
    """The follow-up to a typed answer was answered 'Leave it open': nothing more to record."""
    call, n = asked
    result = call.result if isinstance(call.result, dict) else {}
    labels = ((result.get("answers") or {}).get(str(n)) or {}).get("labels") or []
    return any(str(label).startswith(KEEP_OPEN) for label in labels)


def refs_asked(call: Call) -> list[tuple[str, int]]:
    """(ref, 1-based question number) for each exception an ask names."""
    out = []
    for n, q in enumerate(call.input.get("questions", []), start=1):
        if set(q) == {"ref"}:  # asked by reference: closebot rendered it in its place
            out.append((str(q["ref"]), n))
            continue
        out += [(ref, n) for ref in REF_RE.findall(q.get("question", ""))]
    return out


@dataclass
class StepRefs:
    """One step's exceptions to decide, in the order found (a step's result, a follow-up, one
    named still open), each in its bucket: positions kept sorted."""

    order: list[str] = field(default_factory=list)
    position: dict[str, int] = field(default_factory=dict)
    bucket: dict[str, tuple[str, bool]] = field(default_factory=dict)  # ref → (class, first)
    waiting: list[int] = field(default_factory=list)
    pending_first: list[int] = field(default_factory=list)  # carried items, asked first
    pending_rest: list[int] = field(default_factory=list)

    def _list(self, cls: str, first: bool) -> list[int] | None:
        if cls == WAITING:
            return self.waiting
        if cls == PENDING:
            return self.pending_first if first else self.pending_rest
        return None

    def place(self, ref: str, cls: str) -> None:
        at = self.position[ref]
        old = self.bucket.get(ref)
        if old is not None and old[0] == cls:
            return
        if old is not None and (was := self._list(*old)) is not None:
            del was[bisect_left(was, at)]
        first = asked_first(ref)
        self.bucket[ref] = (cls, first)
        if (now := self._list(cls, first)) is not None:
            insort(now, at)

    def refs(self, positions: list[int]) -> list[str]:
        return [self.order[p] for p in positions]

    def undecided(self) -> int:
        return len(self.waiting) + len(self.pending_first) + len(self.pending_rest)


class Index:
    """The settled calls read so far, in transcript order (`take` each once)."""

    def __init__(self) -> None:
        self.latest: dict[str, Call] = {}
        self.asks: list[Call] = []
        self.asked: dict[str, Asked] = {}  # ref → the latest ask that named it
        self.asked_rank: dict[str, int] = {}  # ref → when it was first asked
        self.resolved_by: dict[str, Call] = {}  # ref → the latest decision recorded
        self.recorded_rank: dict[str, int] = {}
        self.refused: set[tuple[Any, Any]] = set()  # (exception, question) a decision refused
        self.refusal: dict[Any, Call] = {}  # exception → the latest refusal
        self.typed: dict[str, list[Call]] = {}  # ref → its decisions that kept a typed answer
        self.details: dict[str, Any] = {}
        self.summaries: dict[str, str] = {}
        self.steps: dict[str, StepRefs] = {}
        self.steps_of: dict[str, list[str]] = {}  # ref → the steps that list it
        self.cls: dict[str, str] = {}
        self.follow: dict[str, int] = {}  # ref → its rank: a typed answer to confirm
        self.deferred_asks: dict[str, Call] = {}  # asks ever put off (their result may change)
        self.dirty: set[str] = set()  # refs whose bucket may have changed

    def take(self, c: Call) -> None:
        """A settled call, the next in transcript order."""
        self.latest[c.name] = c
        if c.name == TOOL_NAME and not c.is_error:
            self.asks.append(c)
            for ref, n in refs_asked(c):
                self.asked[ref] = (c, n)
                self.asked_rank.setdefault(ref, len(self.asked_rank))
                self.dirty.add(ref)
            self.result_changed(c)
        if c.name == RESOLVE:
            decided: Any = c.input.get("exception_id")
            if c.is_error:
                self.refused.add((decided, c.input.get("question_id")))
                self.refusal[decided] = c
            else:
                self.resolved_by[decided] = c
                self.recorded_rank.setdefault(decided, len(self.recorded_rank))
                if isinstance(c.result, dict) and c.result.get("other"):
                    self.typed.setdefault(decided, []).append(c)
            self.dirty.add(str(decided))
        if c.name == "exception_details" and not c.is_error:
            self.details[c.input["exception_id"]] = c.result
        if not c.is_error and isinstance(c.result, dict):
            self._listed(c, c.result)

    def _listed(self, c: Call, result: dict[str, Any]) -> None:
        """The exceptions a result names: a step's (open ones to decide), follow-ups and those
        still open (resolve_exception), and the summaries a step's result gives."""
        listed = result.get("exceptions")
        seen: set[str] = set()
        for e in listed if isinstance(listed, list) else []:
            if isinstance(e, dict) and (ref := e.get("ref")) is not None and ref not in seen:
                seen.add(ref)
                self.summaries[ref] = str(e.get("summary") or e.get("subject") or ref)
        if result.get("step") is not None:
            step = result["step"]
            for e in result.get("exceptions", []):
                if e["status"] == "open":
                    self._to_decide(step, e["ref"])
        if c.name == RESOLVE:
            for e in [*result.get("follow_up_exceptions", []), *result.get("still_open", [])]:
                self._to_decide(e["step"], e["ref"])

    def _to_decide(self, step: str, ref: str) -> None:
        refs = self.steps.setdefault(step, StepRefs())
        if ref in refs.position:
            return
        refs.position[ref] = len(refs.order)
        refs.order.append(ref)
        self.steps_of.setdefault(ref, []).append(step)
        self.dirty.add(ref)

    def result_changed(self, ask: Call) -> None:
        """An ask's result was written or replaced (a late answer): its refs are looked at again."""
        if isinstance(ask.result, dict) and ask.result.get("status") == "deferred":
            self.deferred_asks[ask.id] = ask
        self.dirty.update(ref for ref, _ in refs_asked(ask))

    # -- reading ----------------------------------------------------------

    def asked_now(self, ref: str) -> Asked | None:
        """The latest ask of `ref`, unless the decision it got was refused (asked again)."""
        a = self.asked.get(ref)
        return None if a is None or (ref, a[0].id) in self.refused else a

    def is_resolved(self, ref: str) -> bool:
        """A decision is recorded from the latest ask (or after it, or none asked since, or
        the follow-up left it open)."""
        call = self.resolved_by.get(ref)
        if call is None:
            return False
        a = self.asked.get(ref)
        return (
            a is None
            or a[0].id == call.input.get("question_id")
            or a[0].order < call.order
            or leaves_open(a)
        )

    def settle(self) -> None:
        """Each ref looked at again since the last reading: into its bucket in every step."""
        for ref in self.dirty:
            a, call = self.asked_now(ref), self.resolved_by.get(ref)
            cls = RESOLVED if self.is_resolved(ref) else WAITING if a is not None else PENDING
            self.cls[ref] = cls
            for step in self.steps_of.get(ref, ()):
                self.steps[step].place(ref, cls)
            typed = (
                call is not None
                and isinstance(call.result, dict)
                and call.result.get("maps_to")
                and a is not None
                and a[0].id == call.input.get("question_id")
            )
            if typed:
                self.follow[ref] = self.recorded_rank[ref]
            else:
                self.follow.pop(ref, None)
        self.dirty.clear()

    def deferred(self) -> list[str]:
        """Refs whose latest question was put off and not decided since."""
        out = [
            ref
            for ask in self.deferred_asks.values()
            if isinstance(ask.result, dict) and ask.result.get("status") == "deferred"
            for ref, _ in refs_asked(ask)
            if self.asked.get(ref, (None, 0))[0] is ask
        ]
        return sorted(dict.fromkeys(out), key=self.asked_rank.__getitem__)

    def to_confirm(self, step: str) -> list[str]:
        """The step's typed answers that match an option, to confirm, in the order recorded."""
        refs = self.steps.get(step)
        if refs is None or not self.follow:
            return []
        found = [r for r in self.follow if r in refs.position]
        return sorted(found, key=self.follow.__getitem__)

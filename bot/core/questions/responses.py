"""A person's responses to a form: checked, stored as the answer payload, compared with
the recommendation (the Whys an override needs), the defaults that apply without a
person, and a console line read as a response."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.core.errors import AnswerError
from bot.core.questions.contract import COMPLEXITY_MINUTES, Response
from bot.core.questions.declaration import Ask, Question


def check_response(q: Question, number: int, r: Response) -> None:
    """Raise AnswerError if `r` is not a valid answer to question `number`."""
    name = f"question {number} ({q.header or _short(q.question)})"
    if r.skipped or r.empty:
        if q.required:
            raise AnswerError(f"{name} is required")
        return
    q.kind.check(q, name, r)


def check_responses(ask: Ask, responses: dict[int, Response]) -> None:
    """Validate a whole form's answers; the first problem raises AnswerError."""
    extra = sorted(set(responses) - set(range(1, len(ask.questions) + 1)))
    if extra:
        raise AnswerError(f"there is no question {extra[0]}")
    for number, q in enumerate(ask.questions, start=1):
        check_response(q, number, responses.get(number, Response(skipped=True)))


def answer_payload(ask: Ask, responses: dict[int, Response]) -> dict[str, Any]:
    """The stored form of a valid answer: per 1-based question, labels not just numbers."""
    check_responses(ask, responses)
    out: dict[str, Any] = {}
    for number, q in enumerate(ask.questions, start=1):
        r = responses.get(number, Response(skipped=True))
        entry: dict[str, Any] = {"question": q.question}
        if r.skipped or r.empty:
            entry["skipped"] = True
        else:
            entry.update(q.kind.payload(q, r))
        out[str(number)] = entry
    return out


def answer_text(entry: dict[str, Any]) -> str:
    """One stored answer as words: the labels (and Other text), the typed text, or (skipped)."""
    if entry.get("skipped"):
        return "(skipped)"
    if "text" in entry:
        return str(entry["text"])
    for key in ("user", "date"):
        if key in entry:
            return str(entry[key])
    parts = list(entry.get("labels", []))
    if entry.get("other"):
        parts.append(f"Other: {entry['other']}")
    return "; ".join(parts)


def overridden(ask: Ask, responses: dict[int, Response]) -> dict[int, str]:
    """Per question number, where the person chose against the recommendation, in words."""
    out: dict[int, str] = {}
    for number, q in enumerate(ask.questions, start=1):
        r = responses.get(number)
        if r is None or r.skipped or r.empty or q.kind.follows(q, r):
            continue
        assert q.recommended is not None
        chose = "; ".join(
            [q.label(n) for n in r.selected] + ([f"Other: {r.other}"] if r.other else [])
        )
        out[number] = f"question {number}: {chose} over the recommended {q.label(q.recommended)}"
    return out


# Options that say how to answer rather than answer (a group's "Decide line by line": each
# line is then asked on its own, and each of those answers is the decision). Registered by
# the domain that offers them (bot/close/groups.py), read by every front end through here.
WAYS_TO_ANSWER: set[str] = set()


def way_to_answer(label: str) -> str:
    """Register an option label that chooses how to answer, never an override needing a Why."""
    WAYS_TO_ANSWER.add(label.casefold())
    return label


def why_applies(q: Question) -> bool:
    """Whether choosing other than this question's ⭐ can need a "Why": an accounting decision
    with a recommendation — not an optional review (a flux item, an explanation), and not a
    question whose only other choices are ways to answer."""
    if q.recommended is None or not q.required or not q.is_choice:
        return False
    return any(
        n != q.recommended and o.label.casefold() not in WAYS_TO_ANSWER
        for n, o in enumerate(q.options, start=1)
    )


def needs_why(ask: Ask, responses: dict[int, Response]) -> dict[int, str]:
    """The overrides that need a "Why" (issue 30): overriding an accounting decision's ⭐ by
    picking another of its options. A typed answer explains itself; a way to answer ("Decide
    line by line") decides nothing; an optional review (a flux explanation) overrides
    nothing."""
    out: dict[int, str] = {}
    for number, words in overridden(ask, responses).items():
        q, r = ask.questions[number - 1], responses[number]
        if not why_applies(q) or r.other or r.text:
            continue
        if r.selected and all(q.label(n).casefold() in WAYS_TO_ANSWER for n in r.selected):
            continue
        out[number] = words
    return out


def overrides(ask: Ask, responses: dict[int, Response]) -> list[str]:
    """Where the person chose against the recommendation, in words (empty: they followed it)."""
    return list(overridden(ask, responses).values())


def check_rationale(
    ask: Ask, responses: dict[int, Response], rationale: str | dict[int, str] | None
) -> list[str]:
    """The overrides; AnswerError when one has no 'Why'. `rationale` is the form's one Why, or
    one per question (then each overridden question needs its own)."""
    over = needs_why(ask, responses)
    for number, words in over.items():
        why = rationale.get(number) if isinstance(rationale, dict) else rationale
        if not (why or "").strip():
            raise AnswerError(
                f"you chose {words}: say why in 'Why' under question {number}"
                if isinstance(rationale, dict)
                else f"you chose {words}: say why in 'Why'"
            )
    return list(over.values())


def rationale_text(ask: Ask, whys: dict[int, str]) -> str | None:
    """Per-question Whys as the one rationale the decision log keeps."""
    kept = {n: w.strip() for n, w in whys.items() if w and w.strip()}
    if not kept:
        return None
    if len(ask.questions) == 1:
        return next(iter(kept.values()))
    return "\n".join(f"Question {n}: {w}" for n, w in sorted(kept.items()))


Rationale = str | Mapping[int, str] | None  # one form-level text, or per question (0 = the form's)


def question_whys(
    ask: Ask, responses: dict[int, Response], rationale: Rationale, *, required: bool = True
) -> dict[int, str]:
    """Each question's "Why", checked: every question that overrides its recommendation needs
    its own. A form-level text (a card's one Why box) answers for every question that needs
    one. Overrides that need no Why (needs_why) are not asked for one. AnswerError names the
    first question without one."""
    given: dict[int, str] = {}
    form = ""
    if isinstance(rationale, str):
        form = rationale.strip()
    elif rationale:
        form = str(rationale.get(0) or "").strip()
        given = {
            int(n): str(t).strip()
            for n, t in rationale.items()
            if int(n) >= 1 and int(n) <= len(ask.questions) and str(t or "").strip()
        }
    over = needs_why(ask, responses)
    if form:
        for number in over:
            given.setdefault(number, form)
        if not over and len(ask.questions) == 1 and 1 not in given:
            given[1] = form  # a reason for following the recommendation is kept too
        if not over:
            for number in overridden(ask, responses):  # a typed answer's Why is kept too
                given.setdefault(number, form)
    missing = [n for n in over if n not in given]
    if required and missing:
        raise AnswerError(f"you chose {over[missing[0]]}: say why in 'Why'")
    return given


def with_whys(answer: dict[str, Any], whys: Mapping[int, str]) -> dict[str, Any]:
    """The stored answer with each question's own "Why" beside its choice (key `why`)."""
    return {
        k: ({**v, "why": whys[int(k)]} if int(k) in whys and isinstance(v, dict) else v)
        for k, v in answer.items()
    }


class NoDefaultAnswer(AnswerError):
    """Auto mode met a required question with no recommended answer."""

    def __init__(self, number: int, question: Question) -> None:
        super().__init__(
            f"question {number} ({question.question!r}) is required and has no recommended answer"
        )
        self.number = number
        self.question = question


def default_responses(ask: Ask) -> dict[int, Response]:
    """The recommended answers (auto mode, timeouts); NoDefaultAnswer for a required one without."""
    out: dict[int, Response] = {}
    for number, q in enumerate(ask.questions, start=1):
        default = q.kind.default(q)
        if default is not None:
            out[number] = default
        elif not q.required:
            out[number] = Response(skipped=True)
        else:
            raise NoDefaultAnswer(number, q)
    return out


def has_defaults(ask: Ask) -> bool:
    try:
        default_responses(ask)
    except NoDefaultAnswer:
        return False
    return True


def timeout_minutes(ask: Ask) -> int | None:
    """The longest default wait the form's questions' complexities give, or None."""
    found = [COMPLEXITY_MINUTES[q.complexity] for q in ask.questions if q.complexity]
    return max(found) if found else None


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- console input -------------------------------------------------------


def parse_typed(q: Question, raw: str) -> Response:
    """A console line as an answer: '2', '1,3', free text, 'other: …', or '' to skip."""
    raw = raw.strip()
    if not raw:
        return Response(skipped=True)
    return q.kind.parse_typed(q, raw)

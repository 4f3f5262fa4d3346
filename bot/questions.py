"""The ask_user_question tool: schema, validation, answers and the tool_result they become."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from bot.errors import AnswerError

TOOL_NAME = "ask_user_question"

MAX_CONTEXT = 1000
MIN_QUESTIONS, MAX_QUESTIONS = 1, 5
MAX_QUESTION_TEXT = 2500
MAX_HEADER = 24
MIN_OPTIONS, MAX_OPTIONS = 2, 100
MAX_LABEL = 75
MAX_DESCRIPTION = 150
MAX_REASONING = 1000
MAX_FREE_TEXT_ANSWER = 3000

HUMAN_SOURCES = ("user", "console")


class QuestionType(StrEnum):
    SINGLE = "single_choice"
    MULTIPLE = "multiple_choice"
    FREE_TEXT = "free_text"


@dataclass(frozen=True)
class Option:
    label: str
    description: str = ""


@dataclass(frozen=True)
class Question:
    question: str
    type: QuestionType = QuestionType.SINGLE
    options: tuple[Option, ...] = ()
    header: str | None = None
    recommended: int | None = None
    reasoning: str | None = None
    allow_other: bool = False
    required: bool = True

    @property
    def is_choice(self) -> bool:
        return self.type is not QuestionType.FREE_TEXT

    def label(self, number: int) -> str:
        """The label of 1-based option `number`."""
        return self.options[number - 1].label

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["type"] = self.type.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Question:
        return cls(
            question=data["question"],
            type=QuestionType(data.get("type", "single_choice")),
            options=tuple(Option(**o) for o in data.get("options", ())),
            header=data.get("header"),
            recommended=data.get("recommended"),
            reasoning=data.get("reasoning"),
            allow_other=bool(data.get("allow_other", False)),
            required=bool(data.get("required", True)),
        )


@dataclass(frozen=True)
class Ask:
    """One ask_user_question call: a context and 1–5 questions, answered together."""

    context: str
    questions: tuple[Question, ...]

    def questions_json(self) -> list[dict[str, Any]]:
        return [q.to_dict() for q in self.questions]

    @classmethod
    def from_record(cls, context: str, questions: list[dict[str, Any]]) -> Ask:
        return cls(context=context, questions=tuple(Question.from_dict(q) for q in questions))


@dataclass(frozen=True)
class Response:
    """A person's answer to one question."""

    selected: tuple[int, ...] = ()
    other: str | None = None
    text: str | None = None
    skipped: bool = False

    @property
    def empty(self) -> bool:
        return not self.selected and not self.other and not self.text


class AskInvalid(ValueError):
    """The model's ask_user_question input breaks the contract; the messages say where."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


TOOL_SCHEMA: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": (
        "Ask the accountant running the close to decide something that is theirs to decide "
        "(an exception, an approval, a missing fact). The run pauses until they answer in the "
        "thread; the result tells you what they chose, or that they cancelled or the question "
        "expired. Give the numbers that matter in the question, recommend an option when the "
        "data supports one and say why in `reasoning`. Never ask in plain text instead."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "context": {
                "type": "string",
                "description": f"One or two sentences: why you are asking (max {MAX_CONTEXT} chars).",
            },
            "questions": {
                "type": "array",
                "minItems": MIN_QUESTIONS,
                "maxItems": MAX_QUESTIONS,
                "description": "1 to 5 questions, shown together in one form.",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {
                            "type": "string",
                            "description": f"The question (max {MAX_QUESTION_TEXT} chars).",
                        },
                        "header": {
                            "type": "string",
                            "description": f"Optional short label (max {MAX_HEADER} chars).",
                        },
                        "type": {
                            "type": "string",
                            "enum": [t.value for t in QuestionType],
                            "description": "single_choice (default), multiple_choice or free_text.",
                        },
                        "options": {
                            "type": "array",
                            "minItems": MIN_OPTIONS,
                            "maxItems": MAX_OPTIONS,
                            "description": "For choice questions: 2 to 100 options.",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {
                                        "type": "string",
                                        "description": f"max {MAX_LABEL} chars",
                                    },
                                    "description": {
                                        "type": "string",
                                        "description": f"max {MAX_DESCRIPTION} chars",
                                    },
                                },
                                "required": ["label"],
                            },
                        },
                        "recommended": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "1-based number of the option you would pick.",
                        },
                        "reasoning": {
                            "type": "string",
                            "description": "Why that option is recommended; shown to the user.",
                        },
                        "allow_other": {
                            "type": "boolean",
                            "description": "Choice questions: also accept a typed 'Other' answer.",
                        },
                        "required": {
                            "type": "boolean",
                            "description": "Default true; optional ones may be skipped.",
                        },
                    },
                    "required": ["question"],
                },
            },
        },
        "required": ["context", "questions"],
    },
}

_QUESTION_FIELDS = {
    "question",
    "header",
    "type",
    "options",
    "recommended",
    "reasoning",
    "allow_other",
    "required",
}


def _text(
    problems: list[str], where: str, value: Any, *, limit: int, required: bool = True
) -> str | None:
    if value is None:
        if required:
            problems.append(
                f"{where}: missing; give a non-empty string of at most {limit} characters"
            )
        return None
    if not isinstance(value, str):
        problems.append(f"{where}: must be a string, got {type(value).__name__}")
        return None
    value = value.strip()
    if not value and required:
        problems.append(f"{where}: is empty; give a non-empty string of at most {limit} characters")
        return None
    if len(value) > limit:
        problems.append(f"{where}: {len(value)} characters, the limit is {limit}")
        return None
    return value or None


def _flag(problems: list[str], where: str, value: Any, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        problems.append(f"{where}: must be true or false, got {value!r}")
        return default
    return value


def _options(problems: list[str], where: str, raw: Any) -> tuple[Option, ...]:
    if not isinstance(raw, list):
        problems.append(
            f"{where}: a choice question needs a list of {MIN_OPTIONS}–{MAX_OPTIONS} options"
        )
        return ()
    if not MIN_OPTIONS <= len(raw) <= MAX_OPTIONS:
        problems.append(
            f"{where}: {len(raw)} options, a choice question takes {MIN_OPTIONS} to {MAX_OPTIONS}"
        )
    options: list[Option] = []
    seen: dict[str, int] = {}
    for j, item in enumerate(raw, start=1):
        at = f"{where}[{j}]"
        if isinstance(item, str):  # a bare label is a common and harmless shorthand
            item = {"label": item}
        if not isinstance(item, dict):
            problems.append(f"{at}: must be an object with a label and an optional description")
            continue
        unknown = set(item) - {"label", "description"}
        if unknown:
            problems.append(f"{at}: unknown field(s) {', '.join(sorted(unknown))}")
        label = _text(problems, f"{at}.label", item.get("label"), limit=MAX_LABEL)
        description = _text(
            problems,
            f"{at}.description",
            item.get("description"),
            limit=MAX_DESCRIPTION,
            required=False,
        )
        if label is None:
            continue
        if label.casefold() in seen:
            problems.append(f"{at}.label: {label!r} repeats option {seen[label.casefold()]}")
        seen[label.casefold()] = j
        options.append(Option(label=label, description=description or ""))
    return tuple(options)


def _question(problems: list[str], i: int, raw: Any) -> Question | None:
    where = f"questions[{i}]"
    if not isinstance(raw, dict):
        problems.append(f"{where}: must be an object")
        return None
    unknown = set(raw) - _QUESTION_FIELDS
    if unknown:
        problems.append(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    text = _text(problems, f"{where}.question", raw.get("question"), limit=MAX_QUESTION_TEXT)
    header = _text(problems, f"{where}.header", raw.get("header"), limit=MAX_HEADER, required=False)
    try:
        qtype = QuestionType(raw.get("type") or QuestionType.SINGLE)
    except ValueError:
        problems.append(
            f"{where}.type: {raw.get('type')!r} is not one of {', '.join(t.value for t in QuestionType)}"
        )
        return None
    reasoning = _text(
        problems, f"{where}.reasoning", raw.get("reasoning"), limit=MAX_REASONING, required=False
    )
    allow_other = _flag(problems, f"{where}.allow_other", raw.get("allow_other"), False)
    required = _flag(problems, f"{where}.required", raw.get("required"), True)
    recommended = raw.get("recommended")
    options: tuple[Option, ...] = ()
    if qtype is QuestionType.FREE_TEXT:
        for name in ("options", "recommended", "allow_other"):
            if raw.get(name) not in (None, False, []):
                problems.append(f"{where}.{name}: a free_text question takes no {name}")
        recommended = None
    else:
        options = _options(problems, f"{where}.options", raw.get("options"))
        if recommended is not None:
            if isinstance(recommended, bool) or not isinstance(recommended, int):
                problems.append(
                    f"{where}.recommended: must be a 1-based option number, got {recommended!r}"
                )
                recommended = None
            elif not 1 <= recommended <= len(options):
                problems.append(
                    f"{where}.recommended: {recommended} is not an option number (1–{len(options)})"
                )
                recommended = None
        if reasoning and raw.get("recommended") is None:
            problems.append(
                f"{where}.reasoning: explains a recommendation, so give `recommended` too"
            )
    if text is None:
        return None
    return Question(
        question=text,
        type=qtype,
        options=options,
        header=header,
        recommended=recommended,
        reasoning=reasoning,
        allow_other=allow_other,
        required=required,
    )


def parse_ask(raw: Any) -> Ask:
    """Validate the model's tool input; AskInvalid lists every problem, precisely."""
    if not isinstance(raw, dict):
        raise AskInvalid(["input: must be an object with `context` and `questions`"])
    problems: list[str] = []
    unknown = set(raw) - {"context", "questions"}
    if unknown:
        problems.append(f"input: unknown field(s) {', '.join(sorted(unknown))}")
    context = _text(problems, "context", raw.get("context"), limit=MAX_CONTEXT)
    items = raw.get("questions")
    questions: list[Question] = []
    if not isinstance(items, list):
        problems.append(f"questions: must be a list of {MIN_QUESTIONS}–{MAX_QUESTIONS} questions")
    elif not MIN_QUESTIONS <= len(items) <= MAX_QUESTIONS:
        problems.append(
            f"questions: {len(items)} questions, one call takes {MIN_QUESTIONS} to {MAX_QUESTIONS}"
        )
    else:
        for i, item in enumerate(items, start=1):
            q = _question(problems, i, item)
            if q is not None:
                questions.append(q)
    if problems:
        raise AskInvalid(problems)
    assert context is not None
    return Ask(context=context, questions=tuple(questions))


# -- answers -------------------------------------------------------------


def check_response(q: Question, number: int, r: Response) -> None:
    """Raise AnswerError if `r` is not a valid answer to question `number`."""
    name = f"question {number} ({q.header or _short(q.question)})"
    if r.skipped or r.empty:
        if q.required:
            raise AnswerError(f"{name} is required")
        return
    if q.type is QuestionType.FREE_TEXT:
        if r.selected or r.other:
            raise AnswerError(f"{name} takes a typed answer, not options")
        if r.text is not None and len(r.text) > MAX_FREE_TEXT_ANSWER:
            raise AnswerError(
                f"{name}: the answer is {len(r.text)} characters, the limit is {MAX_FREE_TEXT_ANSWER}"
            )
        return
    if r.text:
        raise AnswerError(f"{name} takes a choice, not free text")
    bad = [n for n in r.selected if not 1 <= n <= len(q.options)]
    if bad:
        raise AnswerError(f"{name}: {bad[0]} is not an option (1–{len(q.options)})")
    if len(set(r.selected)) != len(r.selected):
        raise AnswerError(f"{name}: an option is chosen twice")
    if r.other is not None:
        if not q.allow_other:
            raise AnswerError(f"{name} does not take an 'Other' answer")
        if len(r.other) > MAX_FREE_TEXT_ANSWER:
            raise AnswerError(
                f"{name}: the 'Other' text is {len(r.other)} characters, the limit is {MAX_FREE_TEXT_ANSWER}"
            )
    chosen = len(r.selected) + (1 if r.other else 0)
    if q.type is QuestionType.SINGLE and chosen > 1:
        raise AnswerError(f"{name} takes one choice, got {chosen}")


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
        elif q.type is QuestionType.FREE_TEXT:
            entry["text"] = r.text
        else:
            entry["selected"] = list(r.selected)
            entry["labels"] = [q.label(n) for n in r.selected]
            if r.other:
                entry["other"] = r.other
        out[str(number)] = entry
    return out


def answer_text(entry: dict[str, Any]) -> str:
    """One stored answer as words: the labels (and Other text), the typed text, or (skipped)."""
    if entry.get("skipped"):
        return "(skipped)"
    if "text" in entry:
        return str(entry["text"])
    parts = list(entry.get("labels", []))
    if entry.get("other"):
        parts.append(f"Other: {entry['other']}")
    return "; ".join(parts)


def overrides(ask: Ask, responses: dict[int, Response]) -> list[str]:
    """Where the person chose against the recommendation, in words (empty: they followed it)."""
    out = []
    for number, q in enumerate(ask.questions, start=1):
        r = responses.get(number)
        if r is None or r.skipped or r.empty or q.recommended is None:
            continue
        followed = (
            q.recommended in r.selected
            if q.type is QuestionType.MULTIPLE
            else r.selected == (q.recommended,)
        )
        if r.other or not followed:
            chose = "; ".join(
                [q.label(n) for n in r.selected] + ([f"Other: {r.other}"] if r.other else [])
            )
            out.append(f"question {number}: {chose} over the recommended {q.label(q.recommended)}")
    return out


def check_rationale(ask: Ask, responses: dict[int, Response], rationale: str | None) -> list[str]:
    """The overrides; AnswerError when there are some and no rationale says why."""
    over = overrides(ask, responses)
    if over and not (rationale or "").strip():
        raise AnswerError(f"you chose {over[0]}: say why in 'Why'")
    return over


Rationale = str | Mapping[int, str] | None  # one form-level text, or per question (0 = the form's)


def overridden_questions(ask: Ask, responses: dict[int, Response]) -> dict[int, str]:
    """Question number → in words, where the person chose against the recommendation."""
    return {int(o.split(":", 1)[0].split()[1]): o for o in overrides(ask, responses)}


def question_whys(
    ask: Ask, responses: dict[int, Response], rationale: Rationale, *, required: bool = True
) -> dict[int, str]:
    """Each question's "Why", checked: every question that overrides its recommendation needs
    its own. A form-level text answers for the one question that overrides when only one does;
    when several do, each must say why (one reason is never stored against another decision).
    AnswerError names the first question without one."""
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
    over = overridden_questions(ask, responses)
    if form:
        if len(over) == 1 and next(iter(over)) not in given:
            given[next(iter(over))] = form
        elif not over and len(ask.questions) == 1 and 1 not in given:
            given[1] = form  # a reason for following the recommendation is kept too
    missing = [n for n in over if n not in given]
    if required and missing:
        what = over[missing[0]]
        if form and len(over) > 1:
            raise AnswerError(
                f"you overrode the recommendation on questions {', '.join(str(n) for n in over)}: "
                f"say why for each in its own 'Why' ({what} has none)"
            )
        raise AnswerError(f"you chose {what}: say why in 'Why'")
    return given


def rationale_text(whys: Mapping[int, str], total: int) -> str | None:
    """The per-question reasons as one text (the questions table's rationale column)."""
    if not whys:
        return None
    if len(whys) == 1:
        return next(iter(whys.values()))
    return "; ".join(f"question {n}: {t}" for n, t in sorted(whys.items()))


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
        if q.recommended is not None:
            out[number] = Response(selected=(q.recommended,))
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


@dataclass(frozen=True)
class Outcome:
    """How a question ended, as the model will read it."""

    status: str
    source: str | None
    by: str | None
    at: str | None
    answers: dict[str, Any] | None = field(default=None)
    rationale: str | None = None


def tool_result_content(ask: Ask, outcome: Outcome) -> str:
    """The JSON the model reads: status, who and how, and per question what was chosen."""
    body: dict[str, Any] = {"status": outcome.status}
    if outcome.status == "answered":
        body.update(
            source=outcome.source,
            answered_by=outcome.by,
            answered_at=outcome.at,
            answers=outcome.answers,
        )
        if outcome.rationale:
            body["rationale"] = outcome.rationale
        if outcome.source in ("auto_default", "timeout_default"):
            body["note"] = "No person chose this: the recommended answer was applied " + (
                "because the run is in auto mode."
                if outcome.source == "auto_default"
                else "when the question timed out."
            )
    elif outcome.status == "cancelled":
        body.update(
            source=outcome.source,
            cancelled_by=outcome.by,
            cancelled_at=outcome.at,
            message="The user cancelled these questions without answering. Do not assume an answer; "
            "leave the matter open and say so.",
        )
    elif outcome.status == "expired":
        body.update(
            expired_at=outcome.at,
            message="Nobody answered before the question expired and it had no recommended answer. "
            "Do not assume an answer; leave the matter open and say so.",
        )
    else:
        raise ValueError(f"a question in status {outcome.status!r} has no result yet")
    body["questions"] = [q.question for q in ask.questions]
    return json.dumps(body, ensure_ascii=False)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- console input -------------------------------------------------------


def parse_typed(q: Question, raw: str) -> Response:
    """A console line as an answer: '2', '1,3', free text, 'other: …', or '' to skip."""
    raw = raw.strip()
    if not raw:
        return Response(skipped=True)
    if q.type is QuestionType.FREE_TEXT:
        return Response(text=raw)
    lowered = raw.casefold()
    if q.allow_other and lowered.startswith("other"):
        text = raw[5:].lstrip(" :=-").strip()
        if not text:
            raise AnswerError(
                "type your answer after 'other:', e.g. other: hold until the operator replies"
            )
        return Response(other=text)
    parts = [p.strip() for p in raw.replace(" ", ",").split(",") if p.strip()]
    if not all(p.isascii() and p.isdigit() for p in parts):  # '²' is a digit, not a number
        hint = (
            "one number"
            if q.type is QuestionType.SINGLE
            else "numbers separated by commas, e.g. 1,3"
        )
        extra = " or 'other: your answer'" if q.allow_other else ""
        raise AnswerError(
            f"{raw!r} is not an option; type {hint} from 1 to {len(q.options)}{extra}"
        )
    return Response(selected=tuple(int(p) for p in parts))

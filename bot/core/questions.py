"""The ask_user_question tool, declared once: one pydantic model gives the tool's JSON
schema and validates the model's input; one object per question type knows its Block Kit
element, how it reads a submitted form, its console prompt and its answer payload.

Adding a question type: a `QuestionType` member and a `QuestionKind` subclass registered in
`KINDS`; the form, the console and the stored answer follow from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from bot.core.errors import AnswerError

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

Complexity = Literal["low", "medium", "high"]
# How long a question of each complexity waits before its recommended answer applies, when
# timeouts are on (seed 001's mapping, in minutes for a person at work rather than seconds).
COMPLEXITY_MINUTES: dict[str, int] = {"low": 30, "medium": 120, "high": 480}


class QuestionType(StrEnum):
    SINGLE = "single_choice"
    MULTIPLE = "multiple_choice"
    FREE_TEXT = "free_text"
    USER = "user"  # a person of the workspace (an owner): Slack's users_select
    DATE = "date"  # a calendar date (a due date): Slack's datepicker


# Questions that take no options: typed text, a person, a date.
NO_OPTIONS = (QuestionType.FREE_TEXT, QuestionType.USER, QuestionType.DATE)
# Assignments (a person, a date) ride beside the decisions of a form: up to this many of them
# on top of the 1–5 questions that decide something.
MAX_ASSIGNMENTS = 20
USER_ID_RE = re.compile(r"^[UW][A-Z0-9]{2,20}$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
LOGIN_RE = re.compile(r"^[a-z_][a-z0-9._-]{0,31}$")  # an OS login (the console's people)


def _problem(kind: str, message: str, at: str = "") -> PydanticCustomError:
    """A validation problem worded for the model; `at` refines where (e.g. '[2].label')."""
    return PydanticCustomError(kind, message, {"at": at})


_MODEL = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class Option(BaseModel):
    """One choice: a label, what it means or books, and how sure the recommender is of it."""

    model_config = _MODEL

    label: Annotated[StrictStr, Field(min_length=1, max_length=MAX_LABEL)] = Field(
        description=f"The choice, max {MAX_LABEL} chars."
    )
    description: Annotated[StrictStr, Field(max_length=MAX_DESCRIPTION)] = Field(
        default="",
        description=f"What choosing it means or books, max {MAX_DESCRIPTION} chars.",
    )
    confidence: Annotated[float, Field(ge=0, le=1, strict=False)] | None = Field(
        default=None,
        description="Optional: how likely (0–1) this is the answer the person will give; shown as a percentage.",
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_label(cls, data: Any) -> Any:
        if isinstance(data, str):  # a bare label is a common and harmless shorthand
            return {"label": data}
        if not isinstance(data, dict | Option):
            raise _problem("option", "must be an object with a label and an optional description")
        return data

    @field_validator("confidence", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float | None):
            raise _problem("confidence", f"must be a number from 0 to 1, got {value!r}")
        return value


class Question(BaseModel):
    """One question of a form: its text, type, options and the recommendation."""

    model_config = _MODEL

    question: Annotated[StrictStr, Field(min_length=1, max_length=MAX_QUESTION_TEXT)] = Field(
        description=f"The question, with the numbers that matter (max {MAX_QUESTION_TEXT} chars)."
    )
    header: Annotated[StrictStr, Field(max_length=MAX_HEADER)] | None = Field(
        default=None, description=f"Optional short label (max {MAX_HEADER} chars)."
    )
    type: QuestionType = Field(
        default=QuestionType.SINGLE,
        strict=False,
        description="single_choice (default), multiple_choice, free_text, or user / date: "
        "a person (an owner) or a date (a due date) picked in the form.",
    )
    options: tuple[Option, ...] = Field(
        default=None,
        validate_default=True,
        strict=False,
        description=f"For choice questions: {MIN_OPTIONS} to {MAX_OPTIONS} options.",
        json_schema_extra={"minItems": MIN_OPTIONS, "maxItems": MAX_OPTIONS},
    )
    recommended: StrictInt | None = Field(
        default=None,
        description="1-based number of the option you would pick.",
        json_schema_extra={"minimum": 1},
    )
    reasoning: Annotated[StrictStr, Field(max_length=MAX_REASONING)] | None = Field(
        default=None, description="Why that option is recommended; shown to the user."
    )
    allow_other: StrictBool = Field(
        default=False, description="Choice questions: also accept a typed 'Other' answer."
    )
    required: StrictBool = Field(
        default=True, description="Default true; optional ones may be skipped."
    )
    complexity: Complexity | None = Field(
        default=None,
        description="Optional: low (yes/no), medium (a few domain options) or high (open or "
        "technical); sets how long the question waits when timeouts are on.",
    )
    initial: StrictStr | None = Field(
        default=None,
        description="user / date questions: the recommended person (a Slack user id, U…) or "
        "date (YYYY-MM-DD), preselected.",
    )

    @field_validator("header", "reasoning", mode="after")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("type", mode="before")
    @classmethod
    def _known_type(cls, value: Any) -> Any:
        if value is None:
            return QuestionType.SINGLE
        if value not in {t.value for t in QuestionType}:
            raise _problem(
                "type", f"{value!r} is not one of {', '.join(t.value for t in QuestionType)}"
            )
        return QuestionType(value)

    @field_validator("options", mode="before")
    @classmethod
    def _options_for_the_type(cls, value: Any, info: ValidationInfo) -> Any:
        qtype = info.data.get("type")
        if qtype in NO_OPTIONS:
            if value not in (None, [], ()):
                raise _problem("no_options", f"a {qtype} question takes no options")
            return ()
        if value is None and qtype is None:
            return ()  # the type itself was wrong: that is the problem reported
        if not isinstance(value, list | tuple):
            raise _problem(
                "options",
                f"a choice question needs a list of {MIN_OPTIONS}–{MAX_OPTIONS} options",
            )
        return value

    @field_validator("options", mode="after")
    @classmethod
    def _options_count_and_labels(
        cls, value: tuple[Option, ...], info: ValidationInfo
    ) -> tuple[Option, ...]:
        if info.data.get("type") in (None, *NO_OPTIONS):
            return value
        if not MIN_OPTIONS <= len(value) <= MAX_OPTIONS:
            raise _problem(
                "options",
                f"{len(value)} options, a choice question takes {MIN_OPTIONS} to {MAX_OPTIONS}",
            )
        seen: dict[str, int] = {}
        for j, option in enumerate(value, start=1):
            key = option.label.casefold()
            if key in seen:
                raise _problem(
                    "repeat", f"{option.label!r} repeats option {seen[key]}", f"[{j}].label"
                )
            seen[key] = j
        return value

    @field_validator("recommended", mode="before")
    @classmethod
    def _an_option_number(cls, value: Any) -> Any:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise _problem("recommended", f"must be a 1-based option number, got {value!r}")
        return value

    @field_validator("recommended", mode="after")
    @classmethod
    def _recommended_in_range(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None:
            return None
        if (qtype := info.data.get("type")) in NO_OPTIONS:
            hint = (
                " (a user or date question's is `initial`)"
                if qtype != QuestionType.FREE_TEXT
                else ""
            )
            raise _problem("no_recommended", f"a {qtype} question takes no recommended{hint}")
        options = info.data.get("options")
        if options is not None and not 1 <= value <= len(options):
            raise _problem("recommended", f"{value} is not an option number (1–{len(options)})")
        return value

    @field_validator("reasoning", mode="after")
    @classmethod
    def _reasoning_needs_a_recommendation(
        cls, value: str | None, info: ValidationInfo
    ) -> str | None:
        choice = info.data.get("type") not in (None, *NO_OPTIONS)
        if value and choice and "recommended" in info.data and info.data["recommended"] is None:
            raise _problem("reasoning", "explains a recommendation, so give `recommended` too")
        return value

    @field_validator("allow_other", mode="after")
    @classmethod
    def _other_needs_choices(cls, value: bool, info: ValidationInfo) -> bool:
        if value and (qtype := info.data.get("type")) in NO_OPTIONS:
            raise _problem("no_other", f"a {qtype} question takes no allow_other")
        return value

    @field_validator("initial", mode="after")
    @classmethod
    def _initial_for_the_type(cls, value: str | None, info: ValidationInfo) -> str | None:
        if not value:
            return None
        qtype = info.data.get("type")
        if qtype is QuestionType.USER and not (USER_ID_RE.match(value) or LOGIN_RE.match(value)):
            raise _problem("initial", f"{value!r} is not a Slack user id (U…) or a login")
        if qtype is QuestionType.DATE and not _a_date(value):
            raise _problem("initial", f"{value!r} is not a date as YYYY-MM-DD")
        if qtype not in (QuestionType.USER, QuestionType.DATE):
            raise _problem("initial", "only a user or date question takes `initial`")
        return value

    @property
    def kind(self) -> QuestionKind:
        return KINDS[self.type]

    @property
    def is_choice(self) -> bool:
        return self.kind.choice

    def label(self, number: int) -> str:
        """The label of 1-based option `number`."""
        return self.options[number - 1].label

    def confidence(self, number: int) -> float | None:
        return self.options[number - 1].confidence

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Question:
        return cls.model_validate(data)


class Ask(BaseModel):
    """One ask_user_question call: a context and 1–5 questions, answered together."""

    model_config = _MODEL

    context: Annotated[StrictStr, Field(min_length=1, max_length=MAX_CONTEXT)] = Field(
        description=f"Two or three short lines: the situation and its key figures (max {MAX_CONTEXT} chars)."
    )
    questions: tuple[Question, ...] = Field(
        strict=False,
        min_length=MIN_QUESTIONS,
        max_length=MAX_QUESTIONS + MAX_ASSIGNMENTS,
        description=f"{MIN_QUESTIONS} to {MAX_QUESTIONS} questions, shown together in one form "
        f"(plus up to {MAX_ASSIGNMENTS} user / date questions assigning owners and due dates).",
    )

    @field_validator("questions", mode="after")
    @classmethod
    def _decisions_per_form(cls, value: tuple[Question, ...]) -> tuple[Question, ...]:
        deciding = sum(1 for q in value if not q.kind.assigns)
        if deciding > MAX_QUESTIONS:
            raise _problem(
                "too_many",
                f"{deciding} questions, one call takes {MIN_QUESTIONS} to {MAX_QUESTIONS}",
            )
        if len(value) - deciding > MAX_ASSIGNMENTS:
            raise _problem(
                "too_many",
                f"{len(value) - deciding} user / date questions, one call takes at most {MAX_ASSIGNMENTS}",
            )
        if not deciding:
            raise _problem(
                "too_many", "user / date questions go with a question that decides something"
            )
        return value

    def questions_json(self) -> list[dict[str, Any]]:
        return [q.to_dict() for q in self.questions]

    @classmethod
    def from_record(cls, context: str, questions: list[dict[str, Any]]) -> Ask:
        return cls.model_validate({"context": context, "questions": questions})


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


# -- the tool's schema and its validation, both from the models above ------

_TEXT_LIMITS = {"context": MAX_CONTEXT, "question": MAX_QUESTION_TEXT, "label": MAX_LABEL}


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "input"


def _words(error: Any) -> tuple[str, str]:
    """(where, what) of one pydantic error, in the words the model is told."""
    loc, kind, value = tuple(error["loc"]), error["type"], error.get("input")
    ctx = error.get("ctx") or {}
    where = _where(loc)
    name = loc[-1] if loc else ""
    limit = _TEXT_LIMITS.get(str(name), ctx.get("max_length"))
    if kind == "missing":
        return where, f"missing; give a non-empty string of at most {limit} characters"
    if kind == "string_too_short":
        return where, f"is empty; give a non-empty string of at most {limit} characters"
    if kind == "string_too_long":
        return where, f"{len(str(value).strip())} characters, the limit is {ctx['max_length']}"
    if kind == "string_type":
        return where, f"must be a string, got {type(value).__name__}"
    if kind == "bool_type":
        return where, f"must be true or false, got {value!r}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return where, "must be an object" + (" with `context` and `questions`" if not loc else "")
    if kind in ("tuple_type", "list_type"):
        return where, f"must be a list of {MIN_QUESTIONS}–{MAX_QUESTIONS} questions"
    if kind in ("too_short", "too_long"):
        count = len(value) if isinstance(value, list | tuple) else "?"
        return where, f"{count} questions, one call takes {MIN_QUESTIONS} to {MAX_QUESTIONS}"
    if kind == "literal_error":
        return where, f"{value!r} is not one of " + str(ctx.get("expected", "")).replace("'", "")
    if kind in ("greater_than_equal", "less_than_equal", "float_parsing", "float_type"):
        return where, f"must be a number from 0 to 1, got {value!r}"
    return where + str(ctx.get("at", "")), str(error["msg"])


def _problems(e: ValidationError) -> list[str]:
    out: list[str] = []
    unknown: dict[str, list[str]] = {}
    for error in e.errors():
        if error["type"] == "extra_forbidden":
            unknown.setdefault(_where(tuple(error["loc"][:-1])), []).append(str(error["loc"][-1]))
            continue
        value = error.get("input")
        if (
            error["type"] in ("too_short", "too_long")
            and isinstance(value, list | tuple)
            and MIN_QUESTIONS <= len(value) <= MAX_QUESTIONS
        ):
            continue  # counted after its invalid items were dropped: those are the problem
        where, what = _words(error)
        out.append(f"{where}: {what}")
    out += [f"{where}: unknown field(s) {', '.join(sorted(n))}" for where, n in unknown.items()]
    return out


def parse_ask(raw: Any) -> Ask:
    """Validate the model's tool input; AskInvalid lists every problem, precisely."""
    if not isinstance(raw, dict):
        raise AskInvalid(["input: must be an object with `context` and `questions`"])
    try:
        return Ask.model_validate(raw)
    except ValidationError as e:
        raise AskInvalid(_problems(e)) from None


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """The JSON schema with $refs inlined, titles dropped and `X or null` read as optional X."""
    if isinstance(schema, list):
        return [_inline(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    if "$ref" in schema:
        out.update(_inline(defs[schema["$ref"].split("/")[-1]], defs))
    for key, value in schema.items():
        if key in ("title", "$defs", "default", "$ref"):
            continue
        out[key] = _inline(value, defs)
    options = out.pop("anyOf", None)
    if options is not None:
        kept = [o for o in options if o.get("type") != "null"]
        if len(kept) == 1:
            out = {**kept[0], **out}
        else:
            out["anyOf"] = kept
    return out


def _input_schema() -> dict[str, Any]:
    raw = Ask.model_json_schema()
    schema: dict[str, Any] = _inline(raw, raw.get("$defs", {}))
    schema.pop("additionalProperties", None)
    return schema


TOOL_SCHEMA: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": (
        "Ask the accountant running the close to decide something that is theirs to decide "
        "(an exception, an approval, a missing fact). The run pauses until they answer in the "
        "thread; the result tells you what they chose, or that they cancelled or the question "
        "expired. Put the situation and its key figures in `context`; give each option what it "
        "books (accounts and amounts) in its description; recommend an option when the data "
        "supports one, say why in `reasoning`, and give options a `confidence` when you can. "
        "Never ask in plain text instead."
    ),
    "input_schema": _input_schema(),
}


# -- one object per question type ----------------------------------------


class QuestionKind:
    """What a question type does in a form, at the console and in the stored answer."""

    type: ClassVar[QuestionType]
    choice: ClassVar[bool] = True
    multiple: ClassVar[bool] = False
    assigns: ClassVar[bool] = False  # a person or a date beside the decisions (user / date)
    label: ClassVar[str] = "Your choice"

    # Block Kit
    def element(
        self, q: Question, options: list[dict[str, Any]], *, action_id: str, external: bool
    ) -> dict[str, Any]:
        """The input element; `options` are the Block Kit options, in order."""
        few = len(q.options) <= MAX_CHOICE_BUTTONS
        if external and not few:
            # Served by the options listener from the store: keeps a huge form in one message.
            element: dict[str, Any] = {
                "type": "multi_external_select" if self.multiple else "external_select",
                "action_id": action_id,
                "placeholder": _plain("Type to search the options"),
                "min_query_length": 0,
            }
        else:
            kind = {
                (False, True): "radio_buttons",
                (False, False): "static_select",
                (True, True): "checkboxes",
                (True, False): "multi_static_select",
            }[(self.multiple, few)]
            element = {"type": kind, "action_id": action_id, "options": options}
            if not few:
                element["placeholder"] = _plain("Choose any" if self.multiple else "Choose one")
        if q.recommended is not None and "options" in element:
            chosen = options[q.recommended - 1]
            if self.multiple:
                element["initial_options"] = [chosen]
            else:
                element["initial_option"] = chosen
        return element

    def read(self, q: Question, state: dict[str, Any], other: str | None) -> Response:
        """A submitted input's state → the Response; ValueError if it is not what was built."""
        options = state.get("selected_options") or []
        if state.get("selected_option"):
            options = [state["selected_option"], *options] if isinstance(options, list) else None
        if not isinstance(options, list):
            raise ValueError("options")
        selected = tuple(_option_number(o) for o in options)
        if other and not self.multiple:
            # A radio button cannot be cleared once one is on (and the recommended one starts
            # on), so typed Other text is the answer to a single-choice question.
            return Response(other=other)
        if not selected and not other:
            return Response(skipped=True)
        return Response(selected=selected, other=other)

    # console
    def prompt(self, q: Question) -> str:
        span = f"1-{len(q.options)}"
        what = f"Choices, e.g. 1,3 [{span}]" if self.multiple else f"Choice [{span}]"
        extras = []
        if q.allow_other:
            extras.append("'other: …'")
        if not q.required:
            extras.append("Enter to skip")
        return f"  {what}" + (f" ({', '.join(extras)})" if extras else "") + ": "

    def parse_typed(self, q: Question, raw: str) -> Response:
        """A console line ('2', '1,3', 'other: …') as a Response; AnswerError says why not."""
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
            hint = "numbers separated by commas, e.g. 1,3" if self.multiple else "one number"
            extra = " or 'other: your answer'" if q.allow_other else ""
            raise AnswerError(
                f"{raw!r} is not an option; type {hint} from 1 to {len(q.options)}{extra}"
            )
        return Response(selected=tuple(int(p) for p in parts))

    # answers
    def check(self, q: Question, name: str, r: Response) -> None:
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
        if not self.multiple and chosen > 1:
            raise AnswerError(f"{name} takes one choice, got {chosen}")

    def payload(self, q: Question, r: Response) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "selected": list(r.selected),
            "labels": [q.label(n) for n in r.selected],
        }
        if r.other:
            entry["other"] = r.other
        return entry

    def follows(self, q: Question, r: Response) -> bool:
        """Whether the answer is the recommended one (no recommendation: nothing to follow)."""
        if q.recommended is None:
            return True
        if r.other:
            return False
        if self.multiple:
            return q.recommended in r.selected
        return r.selected == (q.recommended,)

    def default(self, q: Question) -> Response | None:
        return Response(selected=(q.recommended,)) if q.recommended is not None else None


class SingleChoice(QuestionKind):
    type = QuestionType.SINGLE


class MultipleChoice(QuestionKind):
    type = QuestionType.MULTIPLE
    multiple = True


class FreeText(QuestionKind):
    type = QuestionType.FREE_TEXT
    choice = False
    label = "Your answer"

    def element(
        self, q: Question, options: list[dict[str, Any]], *, action_id: str, external: bool
    ) -> dict[str, Any]:
        return {
            "type": "plain_text_input",
            "action_id": action_id,
            "multiline": True,
            "max_length": MAX_FREE_TEXT_ANSWER,
        }

    def read(self, q: Question, state: dict[str, Any], other: str | None) -> Response:
        text = _typed(state)
        return Response(text=text) if text else Response(skipped=True)

    def prompt(self, q: Question) -> str:
        return "  Your answer" + (" (Enter to skip)" if not q.required else "") + ": "

    def parse_typed(self, q: Question, raw: str) -> Response:
        return Response(text=raw)

    def check(self, q: Question, name: str, r: Response) -> None:
        if r.selected or r.other:
            raise AnswerError(f"{name} takes a typed answer, not options")
        if r.text is not None and len(r.text) > MAX_FREE_TEXT_ANSWER:
            raise AnswerError(
                f"{name}: the answer is {len(r.text)} characters, the limit is {MAX_FREE_TEXT_ANSWER}"
            )

    def payload(self, q: Question, r: Response) -> dict[str, Any]:
        return {"text": r.text}

    def follows(self, q: Question, r: Response) -> bool:
        return True

    def default(self, q: Question) -> Response | None:
        return None


class _Pick(QuestionKind):
    """A person or a date picked in the form (an owner, a due date): an assignment beside the
    form's decisions, with the recommended value preselected (`initial`). It never overrides
    anything, so it needs no "Why"; left empty (or Enter at the console), the recommended
    value stands."""

    choice = False
    assigns = True
    element_type: ClassVar[str]
    state_key: ClassVar[str]  # where Slack puts the picked value in the form's state
    initial_key: ClassVar[str]
    answer_key: ClassVar[str]  # the stored answer's key
    placeholder: ClassVar[str]

    def element(
        self, q: Question, options: list[dict[str, Any]], *, action_id: str, external: bool
    ) -> dict[str, Any]:
        element: dict[str, Any] = {
            "type": self.element_type,
            "action_id": action_id,
            "placeholder": _plain(self.placeholder),
        }
        if q.initial and (self.type is not QuestionType.USER or USER_ID_RE.match(q.initial)):
            element[self.initial_key] = q.initial  # a console login is no Slack user to preselect
        return element

    def valid(self, value: str) -> bool:
        raise NotImplementedError

    def read(self, q: Question, state: dict[str, Any], other: str | None) -> Response:
        value = state.get(self.state_key)
        if value in (None, ""):
            return Response(skipped=True)
        if not (isinstance(value, str) and self.valid(value)):
            raise ValueError(value)
        return Response(text=value)

    def check(self, q: Question, name: str, r: Response) -> None:
        if r.selected or r.other:
            raise AnswerError(f"{name} takes {self.label.lower()}, not options")
        if r.text is not None and not self.valid(r.text):
            raise AnswerError(f"{name}: {r.text!r} is not {self.what}")

    what: ClassVar[str] = ""

    def payload(self, q: Question, r: Response) -> dict[str, Any]:
        return {self.answer_key: r.text}

    def follows(self, q: Question, r: Response) -> bool:
        return True

    def default(self, q: Question) -> Response | None:
        return Response(text=q.initial) if q.initial else Response(skipped=True)


class UserPick(_Pick):
    type = QuestionType.USER
    label = "Owner"
    element_type = "users_select"
    state_key = "selected_user"
    initial_key = "initial_user"
    answer_key = "user"
    placeholder = "Choose a person"
    what = "a Slack user id (U…) or a login"

    def valid(self, value: str) -> bool:
        # Slack sends a user id; the console takes a Slack id or an OS login (an owner is an
        # assignment, not an identity claim: who decides or approves is never typed).
        return bool(USER_ID_RE.match(value) or LOGIN_RE.match(value))

    def prompt(self, q: Question) -> str:
        keep = f"Enter keeps {q.initial}" if q.initial else "Enter to leave unassigned"
        return f"  Owner: a Slack user id (U…) or a login ({keep}): "

    def parse_typed(self, q: Question, raw: str) -> Response:
        value = raw.strip()  # "UBEN" a Slack id, "uben" a login: never folded into each other
        if not self.valid(value):
            raise AnswerError(
                f"{raw!r} is not a Slack user id (U…) or a login (letters, digits, . _ -)"
            )
        return Response(text=value)


class DatePick(_Pick):
    type = QuestionType.DATE
    label = "Due date"
    element_type = "datepicker"
    state_key = "selected_date"
    initial_key = "initial_date"
    answer_key = "date"
    placeholder = "Choose a date"
    what = "a date as YYYY-MM-DD"

    def valid(self, value: str) -> bool:
        return _a_date(value)

    def prompt(self, q: Question) -> str:
        keep = f"Enter keeps {q.initial}" if q.initial else "Enter to leave open"
        return f"  Due date, YYYY-MM-DD ({keep}): "

    def parse_typed(self, q: Question, raw: str) -> Response:
        if not self.valid(raw.strip()):
            raise AnswerError(f"{raw!r} is not a date; type it as YYYY-MM-DD, e.g. 2026-11-15")
        return Response(text=raw.strip())


KINDS: dict[QuestionType, QuestionKind] = {
    k.type: k for k in (SingleChoice(), MultipleChoice(), FreeText(), UserPick(), DatePick())
}


def _a_date(value: str) -> bool:
    if not DATE_RE.match(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


MAX_CHOICE_BUTTONS = 10  # Slack: radio buttons and checkboxes take at most 10 options


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text, "emoji": True}


def _typed(action: dict[str, Any]) -> str:
    """The text of a text input's state ('' when there is none, or it is not text)."""
    value = action.get("value")
    return value.strip() if isinstance(value, str) else ""


def _option_number(option: Any) -> int:
    """The option number a selected option carries; ValueError if it is not ours."""
    value = option.get("value") if isinstance(option, dict) else None
    if not (isinstance(value, str) and value.isascii() and value.isdigit()):
        raise ValueError(value)
    return int(value)


# -- answers -------------------------------------------------------------


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


def overrides(ask: Ask, responses: dict[int, Response]) -> list[str]:
    """Where the person chose against the recommendation, in words (empty: they followed it)."""
    return list(overridden(ask, responses).values())


def check_rationale(
    ask: Ask, responses: dict[int, Response], rationale: str | dict[int, str] | None
) -> list[str]:
    """The overrides; AnswerError when one has no 'Why'. `rationale` is the form's one Why, or
    one per question (then each overridden question needs its own)."""
    over = overridden(ask, responses)
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
    over = overridden(ask, responses)
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
    elif outcome.status == "cancelled" and outcome.source == "change":
        body.update(
            source=outcome.source,
            withdrawn_by=outcome.by,
            message="Withdrawn: the person is changing an earlier decision. Do not post this "
            "batch. When the changed decision comes with this result, record it, draft the "
            "batch again and ask for a new approval; when none comes, the change was dropped: "
            "ask for this approval again.",
        )
    elif outcome.status == "cancelled":
        body.update(
            source=outcome.source,
            cancelled_by=outcome.by,
            cancelled_at=outcome.at,
            message="The user cancelled these questions without answering. Do not assume an answer; "
            "leave the matter open and say so.",
        )
    elif outcome.status == "deferred":
        body.update(
            source=outcome.source,
            deferred_by=outcome.by,
            deferred_at=outcome.at,
            message="The user put these questions off ('not now') without answering. Do not assume "
            "an answer: their exceptions stay open and undecided. Go on with the steps that do not "
            "depend on them; do not draft, approve or post journal entries, or sign off, while "
            "any is undecided — end your turn saying what waits. closebot brings the question "
            "back when the person presses Decide, and tells you the answer.",
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


LATE_ANSWER = "(closebot) A question answered now, after your turn moved on"


def late_answer_text(
    ask: Ask, outcome: Outcome, *, question_id: str, changes: str | None = None
) -> str:
    """How a late answer reaches the agent (a message, its tool call long settled): a
    question put off and brought back with Decide, or a decision changed before posting.
    The last line is the JSON the playbook reads (late_answer_of)."""
    body = json.loads(tool_result_content(ask, outcome))
    body["question_id"] = question_id
    if changes:
        body["changes"] = changes
        what = (
            f"{outcome.by} changed the decision asked in {changes}: record the new answer with "
            f"resolve_exception (question_id {question_id}) for each exception it names, then "
            "draft the journal entries again (build_journal_entries) — an approval of the earlier "
            "batch is void — and ask for approval of the new draft."
        )
    else:
        what = (
            f"{outcome.by} answered the question you asked as {question_id}, which was put off: "
            f"record each decision with resolve_exception (question_id {question_id}) and go on "
            "with the close from where it waits."
        )
    return f"{LATE_ANSWER}. {what}\n{json.dumps(body, ensure_ascii=False)}"


def late_answer_of(text: str) -> dict[str, Any] | None:
    """The answer in a late_answer_text message, or None for any other text."""
    if not text.startswith(LATE_ANSWER):
        return None
    try:
        body = json.loads(text.rsplit("\n", 1)[-1])
    except json.JSONDecodeError:
        return None
    return body if isinstance(body, dict) and "question_id" in body else None


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- console input -------------------------------------------------------


def parse_typed(q: Question, raw: str) -> Response:
    """A console line as an answer: '2', '1,3', free text, 'other: …', or '' to skip."""
    raw = raw.strip()
    if not raw:
        return Response(skipped=True)
    return q.kind.parse_typed(q, raw)

"""The ask_user_question input declared once, as pydantic models (Option, Question, Ask):
they validate the model's input and give the tool's JSON schema."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from bot.core.questions.contract import (
    LOGIN_RE,
    MAX_ASSIGNMENTS,
    MAX_CONTEXT,
    MAX_DESCRIPTION,
    MAX_HEADER,
    MAX_LABEL,
    MAX_OPTIONS,
    MAX_QUESTION_TEXT,
    MAX_QUESTIONS,
    MAX_REASONING,
    MIN_OPTIONS,
    MIN_QUESTIONS,
    NO_OPTIONS,
    USER_ID_RE,
    Complexity,
    QuestionType,
    _a_date,
)
from bot.core.questions.kinds import QUESTION_KINDS, QuestionKind


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
        return QUESTION_KINDS[self.type]

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

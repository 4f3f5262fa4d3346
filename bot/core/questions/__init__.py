"""The ask_user_question tool, declared once: one pydantic model gives the tool's JSON
schema and validates the model's input; one object per question type knows its Block Kit
element, how it reads a submitted form, its console prompt and its answer payload.

Adding a question type: a `QuestionType` member and a `QuestionKind` subclass registered in
`QUESTION_KINDS`; the form, the console and the stored answer follow from it.

The package: contract (limits, types, Response), kinds (one object per question type),
declaration (the pydantic models), tool (schema and parse_ask), responses (checks,
payload, Whys, defaults, console lines), results (what the model reads).
"""

from __future__ import annotations

from bot.core.questions.contract import (
    COMPLEXITY_MINUTES,
    HUMAN_SOURCES,
    LOGIN_RE,
    MAX_ASSIGNMENTS,
    MAX_DESCRIPTION,
    MAX_HEADER,
    MAX_QUESTIONS,
    MAX_REASONING,
    TOOL_NAME,
    USER_ID_RE,
    QuestionType,
    Response,
)
from bot.core.questions.declaration import Ask, Option, Question
from bot.core.questions.kinds import QUESTION_KINDS, QuestionKind
from bot.core.questions.responses import (
    NoDefaultAnswer,
    Rationale,
    answer_payload,
    answer_text,
    check_rationale,
    check_response,
    check_responses,
    default_responses,
    has_defaults,
    needs_why,
    overridden,
    overrides,
    parse_typed,
    question_whys,
    rationale_text,
    timeout_minutes,
    way_to_answer,
    why_applies,
    with_whys,
)
from bot.core.questions.results import (
    Outcome,
    late_answer_of,
    late_answer_text,
    tool_result_content,
)
from bot.core.questions.tool import TOOL_SCHEMA, AskInvalid, parse_ask

__all__ = [
    "COMPLEXITY_MINUTES",
    "HUMAN_SOURCES",
    "LOGIN_RE",
    "MAX_ASSIGNMENTS",
    "MAX_DESCRIPTION",
    "MAX_HEADER",
    "MAX_QUESTIONS",
    "MAX_REASONING",
    "QUESTION_KINDS",
    "TOOL_NAME",
    "TOOL_SCHEMA",
    "USER_ID_RE",
    "Ask",
    "AskInvalid",
    "NoDefaultAnswer",
    "Option",
    "Outcome",
    "Question",
    "QuestionKind",
    "QuestionType",
    "Rationale",
    "Response",
    "answer_payload",
    "answer_text",
    "check_rationale",
    "check_response",
    "check_responses",
    "default_responses",
    "has_defaults",
    "late_answer_of",
    "late_answer_text",
    "needs_why",
    "overridden",
    "overrides",
    "parse_ask",
    "parse_typed",
    "question_whys",
    "rationale_text",
    "timeout_minutes",
    "tool_result_content",
    "way_to_answer",
    "why_applies",
    "with_whys",
]

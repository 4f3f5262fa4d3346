"""The ask_user_question contract's limits, its question types, and the Response a
person gives to one question: the plain values every other part of the package reads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import Literal

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


def _a_date(value: str) -> bool:
    if not DATE_RE.match(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True

"""One object per question type: its Block Kit element, how it reads a submitted form,
its console prompt, how it checks an answer and what it stores (QUESTION_KINDS)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from bot.core.errors import AnswerError
from bot.core.questions.contract import (
    LOGIN_RE,
    MAX_FREE_TEXT_ANSWER,
    USER_ID_RE,
    QuestionType,
    Response,
    _a_date,
)

if TYPE_CHECKING:
    from bot.core.questions.declaration import Question

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


QUESTION_KINDS: dict[QuestionType, QuestionKind] = {
    k.type: k for k in (SingleChoice(), MultipleChoice(), FreeText(), UserPick(), DatePick())
}

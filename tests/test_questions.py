"""The ask_user_question contract: every validation limit, answers, and the tool_result."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.blocks import FormError, read_form
from bot.core.errors import AnswerError
from bot.core.questions import (
    MAX_ASSIGNMENTS,
    TOOL_SCHEMA,
    Ask,
    AskInvalid,
    NoDefaultAnswer,
    Outcome,
    QuestionType,
    Response,
    answer_payload,
    check_responses,
    default_responses,
    parse_ask,
    parse_typed,
    tool_result_content,
)


def q(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def problems(raw: Any) -> list[str]:
    with pytest.raises(AskInvalid) as info:
        parse_ask(raw)
    return info.value.problems


def test_a_valid_ask_parses_with_defaults() -> None:
    ask = parse_ask(
        {"context": " Why ", "questions": [q(recommended=2, reasoning="because", header="H")]}
    )
    (question,) = ask.questions
    assert ask.context == "Why"
    assert question.type is QuestionType.SINGLE and question.required and not question.allow_other
    assert [o.label for o in question.options] == ["A", "B"] and question.recommended == 2
    assert Ask.from_record(ask.context, ask.questions_json()) == ask


def test_schema_is_named_and_requires_context_and_questions() -> None:
    assert TOOL_SCHEMA["name"] == "ask_user_question"
    assert TOOL_SCHEMA["input_schema"]["required"] == ["context", "questions"]
    items = TOOL_SCHEMA["input_schema"]["properties"]["questions"]
    # 1–5 questions that decide, plus the owners and due dates assigned beside them
    assert (items["minItems"], items["maxItems"]) == (1, 5 + MAX_ASSIGNMENTS)
    assert "user / date" in items["description"]
    # a question is written out (the second form) or named by a prepared question's ref
    assert items["items"]["anyOf"][0]["required"] == ["ref"]
    kinds = items["items"]["anyOf"][1]["properties"]["type"]["enum"]
    assert {"user", "date"} <= set(kinds)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("not an object", "input: must be an object"),
        ({"questions": [q()]}, "context: missing"),
        ({"context": "  ", "questions": [q()]}, "context: is empty"),
        (
            {"context": "x" * 1001, "questions": [q()]},
            "context: 1001 characters, the limit is 1000",
        ),
        ({"context": "c", "questions": []}, "questions: 0 questions, one call takes 1 to 5"),
        ({"context": "c", "questions": [q()] * 6}, "questions: 6 questions, one call takes 1 to 5"),
        ({"context": "c", "questions": "q"}, "questions: must be a list"),
        ({"context": "c", "questions": [q()], "extra": 1}, "input: unknown field(s) extra"),
        (
            {"context": "c", "questions": [q(question="x" * 2501)]},
            "questions[1].question: 2501 characters, the limit is 2500",
        ),
        ({"context": "c", "questions": [q(question=None)]}, "questions[1].question: missing"),
        (
            {"context": "c", "questions": [q(header="h" * 25)]},
            "questions[1].header: 25 characters, the limit is 24",
        ),
        (
            {"context": "c", "questions": [q(type="ranking")]},
            "questions[1].type: 'ranking' is not one of",
        ),
        (
            {"context": "c", "questions": [q(options=[{"label": "A"}])]},
            "questions[1].options: 1 options, a choice question takes 2 to 100",
        ),
        (
            {"context": "c", "questions": [q(options=[{"label": str(i)} for i in range(101)])]},
            "questions[1].options: 101 options",
        ),
        (
            {"context": "c", "questions": [q(options=None)]},
            "questions[1].options: a choice question needs a list",
        ),
        (
            {"context": "c", "questions": [q(options=[{"label": "A" * 76}, {"label": "B"}])]},
            "questions[1].options[1].label: 76 characters, the limit is 75",
        ),
        (
            {
                "context": "c",
                "questions": [
                    q(options=[{"label": "A", "description": "d" * 151}, {"label": "B"}])
                ],
            },
            "questions[1].options[1].description: 151 characters, the limit is 150",
        ),
        (
            {"context": "c", "questions": [q(options=[{"label": "A"}, {"label": "a"}])]},
            "questions[1].options[2].label: 'a' repeats option 1",
        ),
        (
            {
                "context": "c",
                "questions": [q(options=[{"label": "A", "value": 1}, {"label": "B"}])],
            },
            "questions[1].options[1]: unknown field(s) value",
        ),
        (
            {"context": "c", "questions": [q(recommended=3)]},
            "questions[1].recommended: 3 is not an option number (1–2)",
        ),
        (
            {"context": "c", "questions": [q(recommended=0)]},
            "questions[1].recommended: 0 is not an option number",
        ),
        (
            {"context": "c", "questions": [q(recommended="1")]},
            "questions[1].recommended: must be a 1-based option number",
        ),
        (
            {"context": "c", "questions": [q(recommended=True)]},
            "questions[1].recommended: must be a 1-based option number",
        ),
        (
            {"context": "c", "questions": [q(reasoning="r" * 1001, recommended=1)]},
            "questions[1].reasoning: 1001 characters, the limit is 1000",
        ),
        (
            {"context": "c", "questions": [q(reasoning="why")]},
            "questions[1].reasoning: explains a recommendation",
        ),
        (
            {"context": "c", "questions": [q(required="yes")]},
            "questions[1].required: must be true or false",
        ),
        (
            {"context": "c", "questions": [q(allow_other=1)]},
            "questions[1].allow_other: must be true or false",
        ),
        (
            {
                "context": "c",
                "questions": [
                    {
                        "question": "Why?",
                        "type": "free_text",
                        "options": [{"label": "A"}, {"label": "B"}],
                    }
                ],
            },
            "questions[1].options: a free_text question takes no options",
        ),
        (
            {
                "context": "c",
                "questions": [{"question": "Why?", "type": "free_text", "recommended": 1}],
            },
            "questions[1].recommended: a free_text question takes no recommended",
        ),
        (
            {"context": "c", "questions": [q(), q(colour="red")]},
            "questions[2]: unknown field(s) colour",
        ),
        ({"context": "c", "questions": [q(), "text"]}, "questions[2]: must be an object"),
    ],
)
def test_each_limit_is_reported_precisely(raw: Any, expected: str) -> None:
    assert any(p.startswith(expected) for p in problems(raw)), problems(raw)


def test_the_limits_themselves_are_allowed() -> None:
    ask = parse_ask(
        {
            "context": "x" * 1000,
            "questions": [
                q(
                    question="x" * 2500,
                    header="h" * 24,
                    options=[{"label": "L" * 75, "description": "d" * 150}]
                    + [{"label": f"o{i}"} for i in range(1, 100)],
                    recommended=100,
                    reasoning="r" * 1000,
                )
            ]
            + [q()] * 4,
        }
    )
    assert len(ask.questions) == 5 and len(ask.questions[0].options) == 100


def test_all_problems_are_reported_at_once() -> None:
    found = problems({"context": "", "questions": [q(header="h" * 30, recommended=9)]})
    assert len(found) == 3


def test_bare_string_options_are_accepted() -> None:
    ask = parse_ask({"context": "c", "questions": [q(options=["Yes", "No"])]})
    assert [o.label for o in ask.questions[0].options] == ["Yes", "No"]


def _ask() -> Ask:
    return parse_ask(
        {
            "context": "c",
            "questions": [
                q(question="Pick one", recommended=1, allow_other=True),
                q(
                    question="Pick some",
                    type="multiple_choice",
                    options=["x", "y", "z"],
                    required=False,
                ),
                {"question": "Notes?", "type": "free_text", "required": False},
            ],
        }
    )


def test_answer_payload_carries_labels_other_text_and_skips() -> None:
    payload = answer_payload(
        _ask(),
        {1: Response(other="hold it"), 2: Response(selected=(1, 3)), 3: Response(text="see memo")},
    )
    assert payload == {
        "1": {"question": "Pick one", "selected": [], "labels": [], "other": "hold it"},
        "2": {"question": "Pick some", "selected": [1, 3], "labels": ["x", "z"]},
        "3": {"question": "Notes?", "text": "see memo"},
    }
    skipped = answer_payload(_ask(), {1: Response(selected=(2,))})
    assert (
        skipped["2"] == {"question": "Pick some", "skipped": True}
        and skipped["3"]["skipped"] is True
    )


@pytest.mark.parametrize(
    ("responses", "message"),
    [
        ({}, "question 1 (Pick one) is required"),
        ({1: Response(selected=(3,))}, "question 1 (Pick one): 3 is not an option (1–2)"),
        ({1: Response(selected=(1, 2))}, "question 1 (Pick one) takes one choice, got 2"),
        ({1: Response(selected=(1,), other="and this")}, "takes one choice, got 2"),
        ({1: Response(selected=(1,)), 2: Response(selected=(1, 1))}, "an option is chosen twice"),
        ({1: Response(selected=(1,)), 2: Response(other="x")}, "does not take an 'Other' answer"),
        ({1: Response(selected=(1,)), 3: Response(selected=(1,))}, "takes a typed answer"),
        ({1: Response(text="free")}, "takes a choice, not free text"),
        ({1: Response(selected=(1,)), 4: Response(text="x")}, "there is no question 4"),
        ({1: Response(selected=(1,)), 3: Response(text="x" * 3001)}, "the limit is 3000"),
    ],
)
def test_bad_answers_are_refused_with_the_reason(
    responses: dict[int, Response], message: str
) -> None:
    with pytest.raises(AnswerError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_responses(_ask(), responses)


def test_defaults_use_the_recommendation_and_skip_optional_ones() -> None:
    assert default_responses(_ask()) == {
        1: Response(selected=(1,)),
        2: Response(skipped=True),
        3: Response(skipped=True),
    }
    no_default = parse_ask({"context": "c", "questions": [q(question="Post it?")]})
    with pytest.raises(
        NoDefaultAnswer,
        match="question 1 \\('Post it\\?'\\) is required and has no recommended answer",
    ):
        default_responses(no_default)


def test_tool_result_says_status_source_and_labels() -> None:
    ask = _ask()
    answers = answer_payload(ask, {1: Response(selected=(2,))})
    body = json.loads(
        tool_result_content(ask, Outcome("answered", "user", "U1", "2026-10-31T10:00", answers))
    )
    assert body["status"] == "answered" and body["source"] == "user" and body["answered_by"] == "U1"
    assert body["answers"]["1"]["labels"] == ["B"] and body["answers"]["1"]["selected"] == [2]
    auto = json.loads(
        tool_result_content(ask, Outcome("answered", "auto_default", "auto", "t", answers))
    )
    assert "No person chose this" in auto["note"]
    cancelled = json.loads(tool_result_content(ask, Outcome("cancelled", "user", "U2", "t")))
    assert (
        cancelled["status"] == "cancelled"
        and cancelled["cancelled_by"] == "U2"
        and "Do not assume" in cancelled["message"]
    )
    expired = json.loads(tool_result_content(ask, Outcome("expired", "timeout", None, "t")))
    assert expired["status"] == "expired" and "Do not assume" in expired["message"]
    with pytest.raises(ValueError):
        tool_result_content(ask, Outcome("pending", None, None, None))


@pytest.mark.parametrize(
    ("index", "raw", "expected"),
    [
        (0, "2", Response(selected=(2,))),
        (0, " other: hold it ", Response(other="hold it")),
        (1, "1,3", Response(selected=(1, 3))),
        (1, "1 3", Response(selected=(1, 3))),
        (1, "", Response(skipped=True)),
        (2, "free words, 1,2", Response(text="free words, 1,2")),
    ],
)
def test_typed_answers_parse(index: int, raw: str, expected: Response) -> None:
    assert parse_typed(_ask().questions[index], raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("yes", "'yes' is not an option; type one number from 1 to 2 or 'other: your answer'"),
        ("other:", "type your answer after 'other:'"),
    ],
)
def test_typed_nonsense_is_explained(raw: str, message: str) -> None:
    with pytest.raises(AnswerError, match=message):
        parse_typed(_ask().questions[0], raw)


def test_the_schema_and_the_validation_come_from_one_declaration() -> None:
    """What the schema declares is what the validator enforces, including the optional
    confidence and complexity (so the two can no longer drift apart)."""
    items = TOOL_SCHEMA["input_schema"]["properties"]["questions"]["items"]["anyOf"][1][
        "properties"
    ]
    option = items["options"]["items"]["properties"]
    assert (option["confidence"]["minimum"], option["confidence"]["maximum"]) == (0, 1)
    assert items["complexity"]["enum"] == ["low", "medium", "high"]
    assert items["header"]["maxLength"] == 24 and option["label"]["maxLength"] == 75
    assert "$ref" not in json.dumps(TOOL_SCHEMA) and "null" not in json.dumps(TOOL_SCHEMA)
    ok = parse_ask(
        {
            "context": "c",
            "questions": [
                q(
                    options=[{"label": "A", "confidence": 0.8}, {"label": "B", "confidence": 0}],
                    recommended=1,
                    complexity="high",
                )
            ],
        }
    )
    assert ok.questions[0].confidence(1) == 0.8 and ok.questions[0].complexity == "high"
    for bad, expected in [
        ({"label": "A", "confidence": 1.5}, "questions[1].options[1].confidence: must be a number"),
        ({"label": "A", "confidence": "high"}, "questions[1].options[1].confidence: must be"),
    ]:
        found = problems({"context": "c", "questions": [q(options=[bad, {"label": "B"}])]})
        assert any(p.startswith(expected) for p in found), found
    found = problems({"context": "c", "questions": [q(complexity="extreme")]})
    assert any(p.startswith("questions[1].complexity: 'extreme' is not one of") for p in found)


def test_each_question_type_is_one_object_for_form_console_and_payload() -> None:
    from bot.core.questions import QUESTION_KINDS

    assert set(QUESTION_KINDS) == set(QuestionType)
    ask = _ask()
    single, multiple, free = ask.questions
    options = [
        {"text": {"type": "plain_text", "text": o.label}, "value": str(n)}
        for n, o in enumerate(single.options, 1)
    ]
    element = single.kind.element(single, options, action_id="answer", external=False)
    assert element["type"] == "radio_buttons" and element["initial_option"] == options[0]
    assert (
        multiple.kind.element(multiple, options, action_id="answer", external=False)["type"]
        == "checkboxes"
    )
    assert (
        free.kind.element(free, [], action_id="answer", external=False)["type"]
        == "plain_text_input"
    )
    assert single.kind.read(single, {"selected_option": {"value": "2"}}, None) == Response(
        selected=(2,)
    )
    assert free.kind.read(free, {"value": " memo "}, None) == Response(text="memo")
    assert "1,3" in multiple.kind.prompt(multiple) and "Your answer" in free.kind.prompt(free)
    assert multiple.kind.payload(multiple, Response(selected=(2,))) == {
        "selected": [2],
        "labels": ["y"],
    }


def test_complexity_sets_the_default_wait() -> None:
    from bot.core.questions import COMPLEXITY_MINUTES, timeout_minutes

    ask = parse_ask({"context": "c", "questions": [q(complexity="low"), q(complexity="high")]})
    assert timeout_minutes(ask) == COMPLEXITY_MINUTES["high"] > COMPLEXITY_MINUTES["low"]
    assert timeout_minutes(parse_ask({"context": "c", "questions": [q()]})) is None


# -- user and date questions: an owner and a due date beside a decision ---------------


def owner_and_due(**over: Any) -> dict[str, Any]:
    return {
        "context": "Sign-off",
        "questions": [
            q(recommended=1),
            {"question": "Owner", "type": "user", "required": False, "initial": "UALICE"},
            {"question": "Due", "type": "date", "required": False, "initial": "2026-11-15"},
            *over.get("more", []),
        ],
    }


def test_user_and_date_questions_validate_and_ride_beside_five_decisions() -> None:
    ask = parse_ask(owner_and_due(more=[q()] * 4))  # 5 deciding + 2 assignments
    assert [x.type.value for x in ask.questions[:3]] == ["single_choice", "user", "date"]
    assert problems(owner_and_due(more=[q()] * 5))[0] == (
        "questions: 6 questions, one call takes 1 to 5"
    )
    only = {"context": "c", "questions": [{"question": "Owner", "type": "user"}]}
    assert "go with a question that decides" in problems(only)[0]
    bad = [
        ({"question": "Owner", "type": "user", "initial": "Alice Park"}, "not a Slack user id"),
        ({"question": "Due", "type": "date", "initial": "2026-02-30"}, "not a date"),
        ({"question": "Due", "type": "date", "options": ["a", "b"]}, "takes no options"),
        ({"question": "Owner", "type": "user", "recommended": 1}, "`initial`"),
        (q(initial="UALICE"), "only a user or date question"),
    ]
    for question, words in bad:
        found = problems({"context": "c", "questions": [q(), question]})
        assert any(words in p for p in found), (question, found)


def test_user_and_date_elements_read_the_state_slack_sends() -> None:
    ask = parse_ask(owner_and_due())
    owner, due = ask.questions[1], ask.questions[2]
    user_el = owner.kind.element(owner, [], action_id="a", external=False)
    date_el = due.kind.element(due, [], action_id="a", external=False)
    assert (user_el["type"], user_el["initial_user"]) == ("users_select", "UALICE")
    assert (date_el["type"], date_el["initial_date"]) == ("datepicker", "2026-11-15")
    # a console login is recommended at the console, but is no Slack user to preselect
    login = parse_ask(owner_and_due()).questions[1].model_copy(update={"initial": "alice"})
    assert "initial_user" not in login.kind.element(login, [], action_id="a", external=False)

    # state values as Slack sends them (python-slack-sdk tests/slack_sdk/models/test_views.py)
    def values(user: Any, day: Any) -> dict[str, Any]:
        return {
            "closebot:q:1:n": {
                "answer": {"type": "radio_buttons", "selected_option": {"value": "1"}}
            },
            "closebot:q:2:n": {"answer": {"type": "users_select", "selected_user": user}},
            "closebot:q:3:n": {"answer": {"type": "datepicker", "selected_date": day}},
        }

    got = read_form(ask, values("UBEN", "2026-11-30"))
    assert (got[2].text, got[3].text) == ("UBEN", "2026-11-30")
    assert answer_payload(ask, got)["2"]["user"] == "UBEN"
    assert answer_payload(ask, got)["3"]["date"] == "2026-11-30"
    cleared = read_form(ask, values(None, None))  # emptied pickers: the recommended ones stand
    assert cleared[2].skipped and cleared[3].skipped
    for user, day in (("<!channel>", "2026-11-30"), ("UBEN", "2026-13-01"), ("UBEN", 20261130)):
        with pytest.raises(FormError):
            read_form(ask, values(user, day))
    # they never override anything: no "Why" is asked for another owner or date
    assert default_responses(ask)[2] == Response(text="UALICE")


def test_user_and_date_questions_at_the_console() -> None:
    ask = parse_ask(owner_and_due())
    owner, due = ask.questions[1], ask.questions[2]
    assert "Enter keeps UALICE" in owner.kind.prompt(owner)
    # an owner is an assignment, not an identity: a Slack id or an OS login, never a name
    assert parse_typed(owner, "uben") == Response(text="uben")
    assert parse_typed(owner, "UBEN") == Response(text="UBEN")
    assert parse_typed(owner, "") == Response(skipped=True)
    with pytest.raises(AnswerError, match="not a Slack user id"):
        parse_typed(owner, "Ben Ortiz")
    assert parse_typed(due, "2026-12-01") == Response(text="2026-12-01")
    with pytest.raises(AnswerError, match="YYYY-MM-DD"):
        parse_typed(due, "next friday")

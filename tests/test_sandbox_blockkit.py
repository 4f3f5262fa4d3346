"""The fake Web API refuses what Slack refuses: one test per Block Kit limit in SLACK.md.

Each limit is tried twice through a real WebClient: at the limit the message is
accepted, one past it Slack's `invalid_blocks` comes back naming the bad spot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.sandbox.slack_api import FakeSlack, fake_slack

Build = Callable[[int], list[dict[str, Any]]]


def mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}


def plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text}


def options(
    n: int, *, text: str = "option", description: str | None = None, value: str = ""
) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        option: dict[str, Any] = {"text": plain(text), "value": value or str(i)}
        if description is not None:
            option["description"] = plain(description)
        out.append(option)
    return out


def choice(kind: str, opts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "input",
            "block_id": "q1",
            "label": plain("Your choice"),
            "element": {"type": kind, "action_id": "answer", "options": opts},
        }
    ]


def button(**extra: Any) -> dict[str, Any]:
    return {"type": "button", "action_id": "go", "text": plain("Go"), **extra}


def actions(*elements: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "actions", "elements": list(elements)}]


def confirm(**override: str) -> dict[str, Any]:
    parts = {"title": "Sure?", "text": "Really.", "confirm": "Yes", "deny": "No", **override}
    return {k: plain(v) for k, v in parts.items()}


def text_input(**extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "input",
            "label": plain("Label"),
            "element": {"type": "plain_text_input", "action_id": "t"},
            **extra,
        }
    ]


# (what, build(n), the limit, the JSON pointer named one past it)
LIMITS: list[tuple[str, Build, int, str]] = [
    ("blocks per message", lambda n: [{"type": "divider"}] * n, 50, "/blocks"),
    (
        "section text",
        lambda n: [{"type": "section", "text": mrkdwn("x" * n)}],
        3000,
        "/blocks/0/text/text",
    ),
    (
        "section fields",
        lambda n: [{"type": "section", "fields": [mrkdwn("f")] * n}],
        10,
        "/blocks/0/fields",
    ),
    (
        "section field text",
        lambda n: [{"type": "section", "fields": [mrkdwn("x" * n)]}],
        2000,
        "/blocks/0/fields/0/text",
    ),
    (
        "header text",
        lambda n: [{"type": "header", "text": plain("x" * n)}],
        150,
        "/blocks/0/text/text",
    ),
    (
        "context elements",
        lambda n: [{"type": "context", "elements": [mrkdwn("c")] * n}],
        10,
        "/blocks/0/elements",
    ),
    (
        "actions elements",
        lambda n: actions(*[button(action_id=f"b{i}") for i in range(n)]),
        25,
        "/blocks/0/elements",
    ),
    ("input label", lambda n: text_input(label=plain("x" * n)), 2000, "/blocks/0/label/text"),
    ("input hint", lambda n: text_input(hint=plain("x" * n)), 2000, "/blocks/0/hint/text"),
    (
        "block_id",
        lambda n: [{"type": "divider", "block_id": "x" * n}],
        255,
        "/blocks/0/block_id",
    ),
    (
        "action_id",
        lambda n: actions(button(action_id="x" * n)),
        255,
        "/blocks/0/elements/0/action_id",
    ),
    (
        "radio_buttons options",
        lambda n: choice("radio_buttons", options(n)),
        10,
        "/blocks/0/element/options",
    ),
    (
        "checkboxes options",
        lambda n: choice("checkboxes", options(n)),
        10,
        "/blocks/0/element/options",
    ),
    (
        "static_select options",
        lambda n: choice("static_select", options(n)),
        100,
        "/blocks/0/element/options",
    ),
    (
        "multi_static_select options",
        lambda n: choice("multi_static_select", options(n)),
        100,
        "/blocks/0/element/options",
    ),
    (
        "option text",
        lambda n: choice("radio_buttons", options(2, text="x" * n)),
        75,
        "/blocks/0/element/options/0/text/text",
    ),
    (
        "option description",
        lambda n: choice("radio_buttons", options(2, description="x" * n)),
        75,
        "/blocks/0/element/options/0/description/text",
    ),
    (
        "option value",
        lambda n: choice("radio_buttons", options(1, value="x" * n)),
        150,
        "/blocks/0/element/options/0/value",
    ),
    (
        "button text",
        lambda n: actions(button(text=plain("x" * n))),
        75,
        "/blocks/0/elements/0/text/text",
    ),
    (
        "button value",
        lambda n: actions(button(value="x" * n)),
        2000,
        "/blocks/0/elements/0/value",
    ),
    (
        "confirm title",
        lambda n: actions(button(confirm=confirm(title="x" * n))),
        100,
        "/blocks/0/elements/0/confirm/title/text",
    ),
    (
        "confirm text",
        lambda n: actions(button(confirm=confirm(text="x" * n))),
        300,
        "/blocks/0/elements/0/confirm/text/text",
    ),
    (
        "confirm button",
        lambda n: actions(button(confirm=confirm(confirm="x" * n))),
        30,
        "/blocks/0/elements/0/confirm/confirm/text",
    ),
    (
        "confirm deny button",
        lambda n: actions(button(confirm=confirm(deny="x" * n))),
        30,
        "/blocks/0/elements/0/confirm/deny/text",
    ),
]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeSlack]:
    with fake_slack(token="xoxb-blocks") as served:
        yield served


@pytest.fixture(scope="module")
def client(fake: FakeSlack) -> WebClient:
    return WebClient(token="xoxb-blocks", base_url=fake.api_url)


def refusal(client: WebClient, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    with pytest.raises(SlackApiError) as caught:
        client.chat_postMessage(channel="CFIN", text="fallback", blocks=blocks)
    return dict(caught.value.response.data)  # type: ignore[arg-type]


@pytest.mark.parametrize(("what", "build", "limit", "pointer"), LIMITS, ids=[c[0] for c in LIMITS])
def test_each_block_kit_limit_is_enforced_with_a_pointer(
    client: WebClient, fake: FakeSlack, what: str, build: Build, limit: int, pointer: str
) -> None:
    accepted = client.chat_postMessage(channel="CFIN", text="fallback", blocks=build(limit))
    assert (
        accepted["ok"]
        and fake.messages[accepted["ts"]]["blocks"][0]["type"] == build(limit)[0]["type"]
    )
    answer = refusal(client, build(limit + 1))
    assert answer["error"] == "invalid_blocks", what
    assert any(e.endswith(f"[json-pointer:{pointer}]") for e in answer["errors"]), answer
    assert answer["response_metadata"]["messages"][0].startswith("[ERROR] ")


def test_a_message_too_big_as_a_whole_is_refused_and_the_refusal_is_reported(
    client: WebClient, fake: FakeSlack
) -> None:
    told: list[tuple[str, str]] = []
    fake.on_refusal = lambda method, body: told.append((method, body["error"]))
    try:
        blocks = [{"type": "section", "text": mrkdwn("y" * 2900)} for _ in range(5)]
        assert refusal(client, blocks)["error"] == "msg_blocks_too_long"
    finally:
        fake.on_refusal = None
    assert told == [("chat.postMessage", "msg_blocks_too_long")]


def test_what_slack_never_takes_is_named(client: WebClient) -> None:
    answer = refusal(
        client,
        [
            {"type": "divider", "block_id": "same"},
            {"type": "divider", "block_id": "same"},
            {"type": "carousel"},
            {"type": "section"},
            {"type": "input", "label": plain("no element")},
            {"type": "actions", "elements": [button(style="purple")]},
            {"type": "header", "text": mrkdwn("headers are plain text")},
        ],
    )
    errors = "\n".join(answer["errors"])
    for expected in (
        "duplicate block_id 'same' [json-pointer:/blocks/1/block_id]",
        "unsupported block type 'carousel' [json-pointer:/blocks/2/type]",
        "must provide text or fields [json-pointer:/blocks/3]",
        "[json-pointer:/blocks/4/element]",
        "must be one of primary, danger [json-pointer:/blocks/5/elements/0/style]",
        "must be one of plain_text [json-pointer:/blocks/6/text/type]",
    ):
        assert expected in errors


def test_the_bots_own_forms_pass(client: WebClient) -> None:
    from bot import blocks
    from bot.core.questions import parse_ask
    from tests.conftest import WI_QUESTION

    ask = parse_ask({"context": "Need a decision.", "questions": [WI_QUESTION] * 5})
    form = blocks.question_form(ask, question_id="toolu_1", who_may_answer="<@UALICE>", nonce="n")
    assert client.chat_postMessage(channel="CFIN", text="form", blocks=form)["ok"]


def test_a_person_and_a_date_are_picked_with_valid_initial_values(client: WebClient) -> None:
    def picker(element: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"type": "input", "label": plain("Owner"), "element": {"action_id": "a", **element}}
        ]

    good = [
        {"type": "users_select", "initial_user": "UBEN", "placeholder": plain("Choose a person")},
        {"type": "datepicker", "initial_date": "2026-11-15"},
        {"type": "users_select"},
        {"type": "datepicker"},
    ]
    for element in good:
        assert client.chat_postMessage(channel="CFIN", text="f", blocks=picker(element))["ok"]
    bad = [
        ({"type": "users_select", "initial_user": "Ben Ortiz"}, "initial_user", "valid user ID"),
        ({"type": "datepicker", "initial_date": "2026-02-30"}, "initial_date", "YYYY-MM-DD"),
        ({"type": "datepicker", "initial_date": "15/11/2026"}, "initial_date", "YYYY-MM-DD"),
    ]
    for element, field, words in bad:
        answer = refusal(client, picker(element))
        assert answer["error"] == "invalid_blocks"
        assert any(
            words in e and e.endswith(f"[json-pointer:/blocks/0/element/{field}]")
            for e in answer["errors"]
        ), answer["errors"]


def test_the_sign_off_form_with_its_owners_and_dates_passes(client: WebClient) -> None:
    from bot import blocks
    from bot.core.questions import parse_ask
    from tests.conftest import WI_QUESTION

    rows = [
        q
        for n in range(1, 9)
        for q in (
            {
                "question": f"{n}. item · owner",
                "type": "user",
                "initial": "UALICE",
                "required": False,
            },
            {
                "question": f"{n}. due date",
                "type": "date",
                "initial": "2026-11-15",
                "required": False,
            },
        )
    ]
    ask = parse_ask({"context": "Sign-off.", "questions": [WI_QUESTION, *rows]})
    # the card lists them (a table) and, on "Change owners or dates", shows their pickers
    for expanded in (False, True):
        form = blocks.question_form(
            ask, question_id="toolu_1", who_may_answer="<@UALICE>", nonce="n", expanded=expanded
        )
        assert client.chat_postMessage(channel="CFIN", text="form", blocks=form)["ok"]
        assert len(form) <= 50
        kinds = [b["element"]["type"] for b in form if b["type"] == "input"]
        assert kinds.count("users_select") == kinds.count("datepicker") == (8 if expanded else 0)


def test_a_table_of_more_than_10000_characters_is_refused_with_its_pointer() -> None:
    # docs.slack.dev/reference/block-kit/blocks/table-block: 10,000 characters across all
    # cells, however few the rows (here 40 rows of 3 cells of 90 characters: 10,800)
    from bot.sandbox.blockkit import problems

    def table(width: int) -> list[dict[str, Any]]:
        cells = [[{"type": "raw_text", "text": "x" * width} for _ in range(3)] for _ in range(40)]
        return [{"type": "table", "rows": cells}]

    assert problems(table(83)) == []  # 9,960 characters
    assert any("/blocks/0/rows" in p and "10001 characters" in p for p in problems(table(90)))


def test_a_plan_block_of_task_cards_is_checked_as_slack_documents_it() -> None:
    """docs.slack.dev/reference/block-kit/blocks/plan-block and .../task-card-block: a plan's
    title, its tasks task_card blocks with task_id and title, a known status, details and
    output each one rich_text."""
    from bot.sandbox.blockkit import problems

    rich = {
        "type": "rich_text",
        "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": "ok"}]}],
    }
    card = {"type": "task_card", "task_id": "step-1", "title": "Intake", "status": "complete"}
    good = {"type": "plan", "title": "Month-end close", "tasks": [{**card, "output": rich}]}
    assert problems([good]) == []
    bad = {
        "type": "plan",
        "title": "",
        "tasks": [
            {**card, "status": "waiting"},
            {"type": "task_card", "title": "no id"},
            {**card, "task_id": "step-3", "details": "plain text"},
            {"type": "section", "text": {"type": "mrkdwn", "text": "not a task"}},
        ],
    }
    found = problems([bad])
    assert any("/blocks/0/title" in f for f in found)
    assert any("/blocks/0/tasks/0/status" in f for f in found)
    assert any("/blocks/0/tasks/1/task_id" in f for f in found)
    assert any("/blocks/0/tasks/2/details" in f for f in found)
    assert any("/blocks/0/tasks/3/type" in f for f in found)

"""Block builders, checked against every limit in SLACK.md and for every form variant."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot import blocks
from bot.core.questions import Outcome, Response, parse_ask


def ask(*questions: dict[str, Any], context: str = "Why I ask.") -> Any:
    return parse_ask({"context": context, "questions": list(questions)})


def choice(n: int, **over: Any) -> dict[str, Any]:
    return {
        "question": "Pick?",
        "options": [{"label": f"Option {i}", "description": f"About {i}"} for i in range(1, n + 1)],
        **over,
    }


def form(a: Any, **kw: Any) -> list[dict[str, Any]]:
    return blocks.question_form(
        a, question_id="toolu_abc", who_may_answer="<@U1>", nonce="n1", **kw
    )


def element(f: list[dict[str, Any]], number: int = 1) -> dict[str, Any]:
    return next(
        b for b in f if b["type"] == "input" and b["block_id"].startswith(f"closebot:q:{number}:")
    )["element"]


def walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def assert_within_limits(f: list[dict[str, Any]]) -> None:
    assert blocks.fits(f)
    for node in walk(f):
        if node.get("type") == "section" and "text" in node:
            assert len(node["text"]["text"]) <= blocks.MAX_SECTION_TEXT
        if node.get("type") == "input":
            assert len(node["label"]["text"]) <= blocks.MAX_LABEL
        if node.get("type") == "context":
            assert len(node["elements"]) <= blocks.MAX_CONTEXT_ELEMENTS
        for key in ("block_id", "action_id"):
            if key in node:
                assert len(node[key]) <= blocks.MAX_ID
        if "options" in node and isinstance(node["options"], list):
            limit = (
                blocks.MAX_CHOICE_BUTTONS
                if node["type"] in ("radio_buttons", "checkboxes")
                else blocks.MAX_SELECT_OPTIONS
            )
            assert len(node["options"]) <= limit
            for o in node["options"]:
                assert (
                    len(o["text"]["text"]) <= blocks.MAX_OPTION_TEXT
                    and len(o["value"]) <= blocks.MAX_OPTION_VALUE
                )
                assert (
                    len(o.get("description", {}).get("text", "")) <= blocks.MAX_OPTION_DESCRIPTION
                )
        if node.get("type") == "button":
            assert (
                len(node["text"]["text"]) <= blocks.MAX_BUTTON_TEXT
                and len(node.get("value", "")) <= 2000
            )
        if node.get("type") == "button" and "confirm" in node:
            c = node["confirm"]
            assert len(c["title"]["text"]) <= 100 and len(c["text"]["text"]) <= 300
            assert len(c["confirm"]["text"]) <= 30 and len(c["deny"]["text"]) <= 30


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        (choice(2), "radio_buttons"),
        (choice(10), "radio_buttons"),
        (choice(11), "static_select"),
        (choice(100), "static_select"),
        (choice(10, type="multiple_choice"), "checkboxes"),
        (choice(11, type="multiple_choice"), "multi_static_select"),
        (choice(100, type="multiple_choice"), "multi_static_select"),
        ({"question": "Notes?", "type": "free_text"}, "plain_text_input"),
    ],
)
def test_each_question_type_gets_its_element(question: dict[str, Any], kind: str) -> None:
    f = form(ask(question))
    assert element(f)["type"] == kind
    assert_within_limits(f)


def details(a: Any) -> str:
    """The text of a card's Details modal."""
    return json.dumps(blocks.details_view(a, question_id="toolu_abc"), ensure_ascii=False)


def test_the_card_has_context_star_other_why_once_who_and_buttons() -> None:
    a = ask(
        choice(3, recommended=2, reasoning="The stub agrees.", allow_other=True, header="WI"),
        {"question": "Notes?", "type": "free_text", "required": False},
    )
    f = form(a)
    assert f[0]["text"]["text"] == "*🙋 Why I ask.*"  # no "what: …" head to name the items by
    # two questions: one table of them, a menu per row (the ⭐ preselected)
    (table,) = [b for b in f if b["type"] == "table"]
    assert [[c["text"] for c in row] for row in table["rows"]] == [
        ["Item", "Basis"],
        ["WI", "Pick?"],
        ["Question 2", "Notes?"],
    ]
    assert element(f)["type"] == "static_select"
    assert element(f)["options"][1]["text"]["text"] == "Option 2 ⭐"
    assert element(f)["options"][-1]["value"] == blocks.OTHER_VALUE  # "Other…": a typed answer
    assert element(f)["initial_option"] == element(f)["options"][1]
    # the reasoning is in the Details modal, one click away
    assert "⭐ *Recommended, preselected*: The stub agrees." in details(a)

    # Other and Why once per card, and only when they apply (issue 30): the card opens with
    # neither; its choice dispatches (a block_actions payload redraws the card with the box)
    def boxes(f: list[dict[str, Any]]) -> list[Any]:
        ids = [blocks.parse_block_id(b.get("block_id", "")) for b in f]
        return [i for i in ids if i and i[0] in ("o", "w")]

    assert boxes(f) == []
    choice_block = next(b for b in f if b.get("block_id", "").startswith("closebot:q:1:"))
    assert choice_block["dispatch_action"] is True
    assert boxes(form(a, picks={1: "2"})) == []  # the ⭐ again: nothing to add
    assert boxes(form(a, picks={1: blocks.OTHER_VALUE})) == [("o", 0)]  # a typed answer
    overridden = form(a, picks={1: "1"}, typed={"w": "the JIB says so"})
    assert boxes(overridden) == [("w", 0)]  # an override of the ⭐: Why, labelled required
    why = next(b for b in overridden if b.get("block_id", "").startswith("closebot:w:0:"))
    assert why["optional"] is False and "required if not the ⭐" in why["label"]["text"]
    assert why["element"]["initial_value"] == "the JIB says so"  # what was typed is kept
    assert element(overridden)["initial_option"]["value"] == "1"  # and what was picked
    notes = next(b for b in f if b["type"] == "input" and b["block_id"].startswith("closebot:q:2:"))
    assert notes["element"]["type"] == "plain_text_input" and notes["optional"] is True
    assert f[-2] == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": "Who may answer: <@U1>"}],
        "block_id": "closebot:v:0:n1",
    }
    submit, more, cancel = f[-1]["elements"]
    assert (submit["text"]["text"], submit["style"], submit["value"], submit["action_id"]) == (
        "Submit",
        "primary",
        "toolu_abc",
        "closebot_submit",
    )
    assert (more["text"]["text"], more["action_id"], more["value"]) == (
        "Details",
        blocks.DETAILS_ACTION,
        "toolu_abc",
    )
    assert cancel["text"]["text"] == "Cancel" and "confirm" in cancel


def test_a_card_of_one_question_shows_what_happened_and_what_the_star_books() -> None:
    a = ask(choice(3, recommended=2, header="Severance", reasoning="The rate is 5 %."))
    f = form(
        a,
        items=[
            {
                "item": "Whitfield 12-8H",
                "basis": "severance off the state rate",
                "billed": "",
                "expected": "",
                "difference": "$718.13",
            }
        ],
    )
    # the context said once under the title (a routine one, "1 item needs your decision", not)
    assert f[0]["text"]["text"] == (
        "*🙋 Severance*\n_Why I ask._\nWhitfield 12-8H · severance off the state rate"
    )
    assert f[1]["fields"] == [{"type": "mrkdwn", "text": "*At stake*\n$718.13"}]
    assert f[2]["text"]["text"] == "*⭐ books:* About 2"
    assert element(f)["type"] == "radio_buttons"
    assert [o["text"]["text"] for o in element(f)["options"]] == [
        "Option 1",
        "Option 2 ⭐",
        "Option 3",
    ]
    assert all("description" not in o for o in element(f)["options"])  # in Details
    # no "Other" where no typed answer is allowed; the question text itself only in Details
    assert not any((blocks.parse_block_id(b.get("block_id", "")) or ("",))[0] == "o" for b in f)
    assert "Pick?" not in json.dumps(f[:3]) and "Pick?" in details(a)


def test_why_is_only_for_an_override_of_an_accounting_decision() -> None:
    from bot.core.errors import AnswerError
    from bot.core.questions import question_whys, way_to_answer

    line_by_line = way_to_answer("Decide line by line")
    group = ask(
        {
            "question": "Five alike?",
            "options": ["Short-pay", "Pay", line_by_line],
            "recommended": 1,
            "allow_other": True,
        }
    )
    # line by line, or a typed answer: no Why needed
    assert question_whys(group, {1: Response(selected=(3,))}, None) == {}
    assert question_whys(group, {1: Response(other="Paid on the 3rd; see the stub")}, None) == {}
    with pytest.raises(AnswerError, match="say why in 'Why'"):
        question_whys(group, {1: Response(selected=(2,))}, None)
    # an optional review (a flux explanation) overrides nothing: no Why box, none needed
    flux = ask(choice(3, recommended=1, required=False))
    assert question_whys(flux.model_copy(), {1: Response(selected=(3,))}, None) == {}
    assert not any(b.get("block_id", "").startswith("closebot:w:") for b in form(flux))
    # only ways to answer besides the ⭐: no Why box either
    only = ask({"question": "Go?", "options": ["Go", line_by_line], "recommended": 1})
    assert not any(b.get("block_id", "").startswith("closebot:w:") for b in form(only))


def test_long_descriptions_are_shown_whole_once_never_cut() -> None:
    long = "Dr 1210 Joint Interest Receivable $2,335.00, Dr 1390 Protest Receivable $1,200.00 / Cr 4090 $3,535.00"
    a = ask(
        {
            "question": "Pick?",
            "options": [
                {"label": "Accept", "description": long},
                {"label": "Dispute", "description": "short"},
            ],
            "recommended": 2,
        }
    )
    options = element(form(a))["options"]
    assert [o["text"]["text"] for o in options] == ["Accept", "Dispute ⭐"]
    assert all("description" not in o for o in options)
    # each option's entry whole, once, in the Details modal
    text = details(a)
    assert text.count(long) == 1 and f"• *Accept*: {long}" in text and "*Dispute* ⭐: short" in text


def test_the_biggest_allowed_ask_still_fits_one_message() -> None:
    big = [
        {
            "question": "Q" * 500,
            "header": "H" * 24,
            "type": "multiple_choice",
            "options": [
                {"label": f"{i:03d}" + "L" * 72, "description": "D" * 150} for i in range(100)
            ],
            "recommended": 100,
            "reasoning": "R" * 1000,
            "allow_other": True,
        }
    ] * 5
    # at its biggest: an override chosen, so the card shows its Why box too
    f = form(ask(*big, context="C" * 1000), picks={1: ["1"]})
    assert_within_limits(f)
    assert (
        len([b for b in f if b["type"] == "input"]) == 7
    )  # 5 answers, one "Other" box (a menu this big cannot hold it) and one "Why" for the card
    assert {element(f, n)["type"] for n in range(1, 6)} == {"multi_external_select"}
    # a mid-sized form keeps its static menus, made compact
    mid = form(ask(*[choice(40, type="multiple_choice")] * 2))
    assert_within_limits(mid)
    assert element(mid, 1)["type"] == "multi_static_select"
    # the external menus search the stored options
    found = blocks.search_options(ask(big[0]).questions[0], "099")
    assert [o["value"] for o in found] == ["100"] and found[0]["text"]["text"].endswith("⭐")
    assert len(blocks.search_options(ask(big[0]).questions[0], "")) == 100


def test_model_text_is_escaped_so_it_cannot_ping_or_link() -> None:
    f = form(
        ask(
            choice(2, reasoning="<!channel> see <https://evil|here> & more", recommended=1),
            context="<@U999> <!here>",
        )
    )
    text = json.dumps(f)
    assert (
        "<!channel>" not in text
        and "<!here>" not in text
        and "<https://evil" not in text
        and "<@U999>" not in text
    )
    assert "&lt;@U999&gt; &lt;!here&gt;" in text
    shown = details(ask(choice(2, reasoning="<!channel> see & more", recommended=1)))
    assert "<!channel>" not in shown and "&lt;!channel&gt;" in shown and "&amp; more" in shown


def test_long_text_is_split_into_sections_never_rejected() -> None:
    text = "\n".join(f"line {i} " + "x" * 200 for i in range(100))
    out = blocks.text_blocks(text)
    assert len(out) > 1 and all(len(b["text"]["text"]) <= blocks.MAX_SECTION_TEXT for b in out)
    assert "".join(b["text"]["text"].replace("\n", "") for b in out) == text.replace("\n", "")
    huge = blocks.text_blocks("y" * 3000 * 60)
    assert len(huge) == blocks.MAX_BLOCKS and huge[-1]["text"]["text"].startswith("… (cut")


def test_status_message_shows_each_step_and_state() -> None:
    out = blocks.status_blocks(
        "Month-end close · October 2026 — waiting on you",
        [("Intake", "done"), ("WI/NRI validation", "waiting"), ("Posting", "pending")],
        note="n",
    )
    text = out[0]["text"]["text"]
    assert (
        "✅ Intake — done" in text
        and "🙋 WI/NRI validation — waiting on you" in text
        and "⚪ Posting — not run yet" in text
    )
    assert out[1]["type"] == "context"


def test_the_answered_form_is_read_only_and_says_who_how_and_when() -> None:
    a = ask(choice(3, header="WI"), {"question": "Notes?", "type": "free_text", "required": False})
    done = blocks.answered_form(
        a,
        Outcome(
            "answered",
            "user",
            "UALICE",
            "2026-10-31T12:00:00+00:00",
            {"1": {"labels": ["Option 2"], "selected": [2]}, "2": {"skipped": True}},
        ),
    )
    assert not [b for b in done if b["type"] in ("input", "actions")]
    text = json.dumps(done, ensure_ascii=False)
    assert "→ *Option 2*" in text and "(skipped)" in text
    assert "✅ <@UALICE> chose the answers above · <!date^1793448000^" in text
    assert "source:" not in text  # the stored source word stays in the decision log
    timed_out = json.dumps(
        blocks.answered_form(a, Outcome("answered", "timeout_default", "timeout", None, {})),
        ensure_ascii=False,
    )
    assert "Timed out: the recommended answers were applied · " in timed_out
    assert "timeout_default" not in timed_out
    single = blocks.answered_form(
        ask(choice(2)),
        Outcome(
            "answered", "user", "UALICE", None, {"1": {"labels": ["Option 1"], "selected": [1]}}
        ),
    )
    assert "✅ <@UALICE> chose *Option 1* · " in json.dumps(single, ensure_ascii=False)
    assert "🚫 Cancelled by <@UBOB>" in json.dumps(
        blocks.answered_form(a, Outcome("cancelled", "user", "UBOB", None, None)),
        ensure_ascii=False,
    )


def test_reading_a_submitted_form_maps_values_back_to_answers_whatever_the_nonce() -> None:
    a = ask(
        choice(3, allow_other=True),
        choice(12, type="multiple_choice"),
        {"question": "Notes?", "type": "free_text"},
    )
    values = {
        "closebot:q:1:old": {
            "answer": {"type": "radio_buttons", "selected_option": {"value": "2"}}
        },
        "closebot:o:1:old": {"other": {"type": "plain_text_input", "value": None}},
        "closebot:q:2:new": {
            "answer": {
                "type": "multi_static_select",
                "selected_options": [{"value": "1"}, {"value": "12"}],
            }
        },
        "closebot:q:3:x": {"answer": {"type": "plain_text_input", "value": "  see memo "}},
        "someone-else": {"x": {"value": "ignored"}},
    }
    assert blocks.read_form(a, values) == {
        1: Response(selected=(2,)),
        2: Response(selected=(1, 12)),
        3: Response(text="see memo"),
    }
    assert blocks.read_form(a, {})[1] == Response(skipped=True)
    with pytest.raises(blocks.FormError):
        blocks.read_form(a, {"closebot:q:1:x": {"answer": {"selected_option": {"value": "two"}}}})


def test_cut_and_escape() -> None:
    assert blocks.cut("abcdef", 4) == "abc…" and blocks.cut("abc", 4) == "abc"
    assert blocks.escape("a<b>&c") == "a&lt;b&gt;&amp;c"


def test_only_the_runs_own_people_become_mentions() -> None:
    out = blocks.text_blocks(
        "decided by UALICE (user); UEVIL and <@UALICE> and <!channel>", people={"UALICE"}
    )
    text = out[0]["text"]["text"]
    assert "decided by <@UALICE> (user)" in text and "UEVIL" in text and "<@UEVIL>" not in text
    # the bot's own mention of the run's people passes; it is never shown escaped
    assert "and <@UALICE> and" in text and "&lt;@" not in text and "&lt;!channel&gt;" in text


def test_with_names_people_read_as_names_and_only_whom_it_waits_on_is_mentioned() -> None:
    names = {"UALICE": "Alice <Park>", "UBEN": "Ben Ortiz", "UEVIL": "Eve"}.__getitem__
    text = blocks.text_blocks(
        "owner UALICE; <@UBEN> approved; <@UEVIL> wrote; UEVIL; <@UALICE> decides",
        people={"UALICE", "UBEN"},
        names=names,
        mention=["UALICE"],
    )[0]["text"]["text"]
    assert (
        text == "owner Alice &lt;Park&gt;; Ben Ortiz approved; Eve wrote; UEVIL; <@UALICE> decides"
    )
    # a name is escaped; a stranger's bare id is not looked up (not one of the run's people)


def test_confidence_is_shown_as_a_percentage() -> None:
    f = form(
        ask(
            {
                "question": "Accrue?",
                "options": [
                    {"label": "Accrue", "confidence": 0.85},
                    {"label": "Wait", "confidence": 0.15},
                ],
                "recommended": 1,
                "reasoning": "Production is reported.",
            }
        )
    )
    assert [o["text"]["text"] for o in element(f)["options"]] == ["Accrue ⭐ 85%", "Wait 15%"]
    assert "⭐ *Recommended, preselected* (85% confident): Production is reported." in details(
        ask(
            {
                "question": "Accrue?",
                "options": [
                    {"label": "Accrue", "confidence": 0.85},
                    {"label": "Wait", "confidence": 0.15},
                ],
                "recommended": 1,
                "reasoning": "Production is reported.",
            }
        )
    )

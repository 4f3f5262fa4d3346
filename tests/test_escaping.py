"""Every outgoing text and block is safe: no `<!channel>`, no link, no mention the bot did not mean."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.blocks import outgoing
from bot.sandbox.slack_api import FakeSlack
from tests.conftest import ScriptedModel, ask_input, text, tool_use
from tests.slack_harness import Harness

NASTY = [
    "<!channel>",
    "<!everyone>",
    "<!here|here>",
    "<!subteam^S123|@finance>",
    "<https://evil.example/login|Click to approve>",
    "<mailto:x@evil.example|mail>",
    "<#C999|secret>",
    "<@UMALLORY>",
    "&lt;!channel&gt;",
    "<<!channel>>",
]
ALLOWED_PEOPLE = {"UALICE", "UAPPROVER", "UAPPROVER2"}  # the starter and the harness's approvers
TOKEN = re.compile(r"<[^>]*>")


def slack_tokens(value: Any) -> list[str]:
    """Every `<…>` Slack would interpret, in every string of a Web API call's params
    (plain_text objects are shown as written, never interpreted)."""
    found: list[str] = []
    if isinstance(value, str):
        found += TOKEN.findall(value)
    elif isinstance(value, dict) and value.get("type") == "plain_text":
        pass
    elif isinstance(value, dict):
        for v in value.values():
            found += slack_tokens(v)
    elif isinstance(value, list):
        for v in value:
            found += slack_tokens(v)
    return found


def unsafe(token: str) -> bool:
    mention = re.fullmatch(r"<@([UW][A-Z0-9]+)>", token)
    if mention:
        return mention.group(1) not in ALLOWED_PEOPLE
    return not token.startswith("<!date^")  # the bot's own date formatting


@pytest.mark.parametrize("nasty", NASTY)
def test_model_text_answers_and_questions_never_ping_or_link(
    fake: FakeSlack, db_path: Path, nasty: str
) -> None:
    model = ScriptedModel()
    question = {
        "question": f"Book {nasty} at which WI?",
        "header": "WI",
        "options": [
            {"label": f"Accept {nasty}"[:75], "description": f"why {nasty}"[:150]},
            {"label": "Dispute"},
        ],
        "recommended": 1,
        "reasoning": f"Because {nasty}",
        "allow_other": True,
    }
    model.enqueue(
        text(f"Narration {nasty}"),
        tool_use("toolu_q", "ask_user_question", **ask_input(question, context=f"Ctx {nasty}")),
    )
    model.enqueue(text(f"Summary {nasty}"))
    model.enqueue(text(f"Reply {nasty}"))
    h = Harness(fake, db_path, model=model)
    try:
        run = h.start()
        h.submit("toolu_q", {}, other={1: f"typed {nasty}"})
        h.idle()
        h.say(run, f"note {nasty}")
        h.idle()
        h.say(run, f"stranger {nasty}", user="UMALLORY")  # a refusal notice quotes nobody's text
        h.idle()
        assert h.store.runs.get(run.id).status == "done"
        assert h.service.presenter.approvers | {"UALICE"} == ALLOWED_PEOPLE
        sent = [
            c.params
            for c in fake.calls
            if c.method in ("chat.postMessage", "chat.update", "chat.postEphemeral")
        ]
        bad = [(t, json.dumps(p)[:300]) for p in sent for t in slack_tokens(p) if unsafe(t)]
        assert bad == []
        # What was written is still shown, escaped: nothing is silently dropped.
        assert any(
            html.escape(nasty, quote=False) in json.dumps(p, ensure_ascii=False) for p in sent
        )
    finally:
        h.close()


def test_a_refusal_notice_mentions_the_starter_in_text_and_blocks(
    fake: FakeSlack, db_path: Path
) -> None:
    model = ScriptedModel()
    model.enqueue(
        text("q"),
        tool_use(
            "toolu_q",
            "ask_user_question",
            **ask_input({"question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}),
        ),
    )
    h = Harness(fake, db_path, model=model)
    try:
        h.start()
        h.submit("toolu_q", {1: 1}, user="UMALLORY")
        h.idle()
        (notice,) = [p for p in fake.to("chat.postEphemeral") if p["user"] == "UMALLORY"]
        assert notice["text"].startswith("Only <@UALICE> (who started this close)")
        assert notice["blocks"][0]["text"]["text"].startswith("Only <@UALICE> (who started")
    finally:
        h.close()


@given(st.text(), st.sets(st.sampled_from(["UALICE", "UBOB", "W0123", "not-an-id"])))
def test_outgoing_keeps_only_the_mentions_it_is_given_and_loses_no_text(
    raw: str, people: set[str]
) -> None:
    safe = outgoing(raw, people)
    for token in TOKEN.findall(safe):
        mention = re.fullmatch(r"<@([UW][A-Z0-9]{2,})>", token)
        assert mention and mention.group(1) in people
    restored = safe.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert restored == raw

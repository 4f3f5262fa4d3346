"""Thread messages reach the agent at the next step — the one that follows the pending
answer — never after posting; a pending approval form says who wrote, and an approval
given on the form as it was before is not taken."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.close.controls import APPROVAL_HEADER
from bot.sandbox.slack_api import FakeSlack
from tests.conftest import WI_QUESTION, ScriptedModel, ask_input, text, tool_use
from tests.slack_harness import Harness

APPROVAL = {
    "question": "Post batch B1 (content hash abc123) to the general ledger?",
    "header": APPROVAL_HEADER,
    "options": [{"label": "Approve and post"}, {"label": "Keep as draft"}],
    "recommended": 1,
    "reasoning": "The batch balances.",
}


def test_a_thread_message_during_a_pending_form_is_read_before_the_next_tool_call(
    fake: FakeSlack, db_path: Path
) -> None:
    model = ScriptedModel()
    model.enqueue(tool_use("toolu_q1", "ask_user_question", **ask_input(WI_QUESTION)))
    model.enqueue(tool_use("toolu_post", "no_such_tool"))  # the step after the answer
    model.enqueue(text("Understood: nothing posted."))
    h = Harness(fake, db_path, model=model)
    try:
        run = h.start()
        question_id = h.pending(run.id)
        assert h.say(run, "Do not post").status == 200
        h.idle()
        assert len(model.history) == 1  # nothing reached the model while the form waits
        h.submit(question_id, h.recommended_picks(question_id), user="UAPPROVER")
        h.idle()
        after_answer = model.history[1]["messages"][-1]
        assert after_answer["role"] == "user"
        assert [b["type"] for b in after_answer["content"]] == ["tool_result", "text"]
        assert "<@UALICE>: Do not post" in after_answer["content"][1]["text"]
        # read with the answer, before the model's next tool call; and only once
        seen = len(model.history[1]["messages"])
        later = [str(m["content"]) for m in model.history[2]["messages"][seen:]]
        assert not any("Do not post" in t for t in later)
        assert h.store.inbox.take(run.id) == []
    finally:
        h.close()


def form_blocks(fake: FakeSlack, ts: str) -> list[dict[str, Any]]:
    return list(fake.messages[ts].get("blocks") or [])


def test_an_approval_form_says_who_wrote_after_it_and_an_approval_on_the_old_form_is_refused(
    fake: FakeSlack, db_path: Path
) -> None:
    model = ScriptedModel()
    model.enqueue(tool_use("toolu_ok", "ask_user_question", **ask_input(APPROVAL)))
    model.enqueue(text("Held back as asked."))
    h = Harness(fake, db_path, model=model)
    try:
        run = h.start()
        question_id = h.pending(run.id)
        form_ts = h.store.questions.get(question_id).message_ts
        assert form_ts
        before = dict(fake.messages[form_ts])  # the form as the approver has it open
        assert h.say(run, "Do not post", user="UALICE").status == 200
        h.idle()
        assert fake.wait_for(
            lambda: any(
                "wrote to closebot in the thread after this form was posted" in str(b)
                for b in form_blocks(fake, form_ts)
            ),
            timeout=30,
        )
        shown = str(form_blocks(fake, form_ts))
        # who wrote, by name (users.info; the fake names a made-up colleague after the id)
        assert "Alice wrote to closebot in the thread" in shown and "Do not post" in shown
        assert "UALICE" not in shown
        # Approved on the form as it was before the message: not taken
        h.submit(question_id, h.recommended_picks(question_id), user="UAPPROVER", form=before)
        h.idle()
        assert h.store.questions.get(question_id).status == "pending"
        told = h.ephemerals_to("UAPPROVER")
        assert any(
            "wrote to closebot in the thread after this form was posted" in t for t in told
        ), told
        assert len(model.history) == 1  # posting waits
        # Approved on the form that shows it: taken, and the model hears the message with it
        h.submit(
            question_id,
            h.recommended_picks(question_id),
            user="UAPPROVER",
            form=dict(fake.messages[form_ts]),
        )
        h.idle()
        assert h.store.questions.get(question_id).status == "answered", h.ephemerals_to("UAPPROVER")
        after = model.history[1]["messages"][-1]["content"]
        assert [b["type"] for b in after] == ["tool_result", "text"]
        assert "Do not post" in after[1]["text"]
    finally:
        h.close()


def test_a_plain_reply_in_a_channel_thread_never_reaches_closebot_only_a_mention_does(
    fake: FakeSlack, db_path: Path
) -> None:
    """Least privilege (manifest.yml: no channels:history, no message.channels): Slack sends
    closebot no plain reply in a channel thread, so the approval guard neither sees nor
    claims one; a mention arrives (app_mention) and holds the approval back."""
    model = ScriptedModel()
    model.enqueue(tool_use("toolu_ok", "ask_user_question", **ask_input(APPROVAL)))
    model.enqueue(text("Held back as asked."))
    h = Harness(fake, db_path, model=model)
    try:
        run = h.start()
        question_id = h.pending(run.id)
        form_ts = h.store.questions.get(question_id).message_ts
        assert form_ts
        before = dict(fake.messages[form_ts])
        assert h.reply(run, "Do not post") is None  # Slack sends nothing
        h.idle()
        assert h.store.inbox.since(run.id, "") == []
        assert fake.messages[form_ts]["blocks"] == before["blocks"]  # no notice claims it
        assert h.reply(run, "Do not post", mention=True) is not None  # a mention arrives
        h.idle()
        assert fake.wait_for(
            lambda: "wrote to closebot in the thread" in str(form_blocks(fake, form_ts))
        )
        h.submit(question_id, h.recommended_picks(question_id), user="UAPPROVER", form=before)
        h.idle()
        assert h.store.questions.get(question_id).status == "pending"  # held back
    finally:
        h.close()

"""What makes a form an approval (issue 28): a form that asks to approve a named journal batch
goes to the approvers whatever header the model typed on it (the prepared approval, asked by
its ref, is toolset_approval.py's)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from bot.close import APPROVAL_HEADER, SECOND_APPROVAL_HEADER
from bot.close.controls import header_of
from bot.close.playbook import PlaybookModel
from bot.sandbox.slack_api import FakeSlack
from tests.slack_harness import Harness

# Headers a model might type on the approval forms, instead of the exact ones.
TYPED = {APPROVAL_HEADER: "Posting approval", SECOND_APPROVAL_HEADER: "Approval (2nd)"}


def retyped(value: Any, headers: dict[str, str]) -> Any:
    """`value` with each question header in `headers` replaced."""
    if isinstance(value, dict):
        return {
            k: headers.get(v, v) if k == "header" and isinstance(v, str) else retyped(v, headers)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [retyped(v, headers) for v in value]
    return value


class RetypingModel:
    """The playbook, except that it types its own headers on the approval forms (as Claude
    might: "Posting approval"); it reads its transcript back with the exact ones."""

    name = "retyping-playbook"

    def __init__(self) -> None:
        self.inner = PlaybookModel()

    def respond(self, **kw: Any) -> Any:
        back = {v: k for k, v in TYPED.items()}
        kw["messages"] = retyped(copy.deepcopy(kw["messages"]), back)
        reply = self.inner.respond(**kw)
        return type(reply)(
            content=retyped(reply.content, TYPED), stop_reason=reply.stop_reason, usage=reply.usage
        )


def test_a_claude_form_headed_posting_approval_still_goes_to_the_approvers(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path, model=RetypingModel())
    try:
        run = bot.start()
        approval = bot.answer_until(run.id, "Posting approval")
        assert header_of(bot.store.questions.get(approval)) == APPROVAL_HEADER
        dms = {p["channel"] for p in fake.to("chat.postMessage") if "UAPPROVER" in str(p)}
        assert dms, "the approvers were told"
        bot.submit(approval, {1: 1})  # the starter may not approve: segregation of duties
        bot.idle()
        assert bot.store.questions.get(approval).status == "pending"
        assert any("Segregation of duties" in n for n in bot.ephemerals_to("UALICE"))
        bot.submit(approval, {1: 1}, user="UAPPROVER")
        bot.idle()
        second = bot.pending(run.id)
        record = bot.store.questions.get(second)
        assert record.questions[0]["header"] == "Approval (2nd)"
        assert header_of(record) == SECOND_APPROVAL_HEADER
        bot.submit(second, {1: 1}, user="UAPPROVER")  # the same approver twice
        bot.idle()
        assert bot.store.questions.get(second).status == "pending"
        bot.submit(second, {1: 1}, user="UAPPROVER2")
        bot.idle()
        assert bot.store.questions.get(second).answered_by == "UAPPROVER2"
    finally:
        bot.close()

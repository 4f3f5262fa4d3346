"""A question's form in the thread: posted (with a group's detail as a CSV before it, and
found again rather than posted twice after a crash), redrawn when its deadline moves or a
thread message must show on it, turned read-only once settled, and reminded about."""

from __future__ import annotations

import dataclasses
import logging
import time
from datetime import timedelta
from typing import Any

from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.agent_loop import ask_of, outcome_of
from bot.blocks import outgoing
from bot.close import (
    APPROVAL_HEADERS,
    asked_groups,
    detail_file_name,
    detail_rows,
    group_summary,
    header_of,
    question_facts,
    who_may_answer,
)
from bot.core.decision_log import to_csv
from bot.core.questions import Ask, answer_text
from bot.slack.presenter.approval import ApprovalForm
from bot.slack.presenter.messages import HISTORY_LIMIT, Clicked, Messages, slack_error
from bot.store import QuestionRecord, Run

log = logging.getLogger(__name__)


class Forms:
    def __init__(
        self, messages: Messages, approval: ApprovalForm, *, reminder: timedelta | None
    ) -> None:
        self.messages = messages
        self.store = messages.store
        self.approval = approval
        self.reminder = reminder  # first reminder of a pending question; then daily

    # -- drawing a form -------------------------------------------------------------

    def form(
        self,
        record: QuestionRecord,
        run: Run,
        ask: Ask,
        *,
        nonce: str,
        attach: bool = False,
        expanded: bool = False,
        picks: blocks.Picks | None = None,
        typed: blocks.Typed | None = None,
        why: bool = False,
    ) -> list[dict[str, Any]]:
        """A question's form, the decision card; `attach`: the first time an approval form is
        posted, with the draft journal attached before it; `expanded`: with its owners' and
        due dates' pickers shown."""
        out = self.messages
        ask = self.named(ask, run)
        if header_of(record) in APPROVAL_HEADERS and len(ask.questions) == 1:
            return self.approval.form(record, run, ask, nonce=nonce, attach=attach, why=why)
        return blocks.question_form(
            ask,
            question_id=record.id,
            who_may_answer=out.safe(
                who_may_answer(run, out.approvers, brief=True), out.waits_on(run, record)
            ),
            nonce=nonce,
            deadline=blocks.deadline_note(ask, record.expires_at),
            items=question_facts(self.store, record),
            expanded=expanded,
            names=self.messages.names,
            picks=picks,
            typed=typed,
        )

    def details(self, question_id: str) -> dict[str, Any]:
        """The Details modal of a question's card: every question whole, each option with
        what it books, the reasoning."""
        record = self.store.questions.get(question_id)
        run = self.store.runs.get(record.run_id)
        return blocks.details_view(self.named(ask_of(record), run), question_id=record.id)

    def expand(self, question_id: str) -> None:
        """Redraw a pending card with its owners' and due dates' pickers (Change owners or
        dates); a settled one is left alone."""
        record = self.store.questions.get(question_id)
        if record.status != "pending" or not (record.channel and record.message_ts):
            return
        run = self.store.runs.get(record.run_id)
        ask = ask_of(record)
        form = self.form(
            record, run, ask, nonce=f"{record.id[-8:]}e{int(time.time())}", expanded=True
        )
        try:
            self.messages.client.chat_update(
                channel=record.channel,
                ts=record.message_ts,
                text=self.text(record, run, ask),
                blocks=form,
            )
        except SlackApiError as e:  # the card stays as it was; the recommended owners stand
            log.warning("question %s: pickers not shown: %s", record.id, slack_error(e))

    def pick(self, question_id: str, payload: dict[str, Any], via: Clicked | None) -> None:
        """A choice made on a pending card (a block_actions payload): the card redrawn with
        the Other or Why box it calls for (or without one it no longer needs), what was picked
        and typed kept, its block ids unchanged; nothing sent when it already shows the right
        boxes (blocks/boxes.py)."""
        record = self.store.questions.get(question_id)
        if record.status != "pending" or not (record.channel and record.message_ts):
            return
        run = self.store.runs.get(record.run_id)
        ask = ask_of(record)
        if header_of(record) in APPROVAL_HEADERS and len(ask.questions) == 1:
            return  # the approval card's choices are its buttons
        shown = (payload.get("message") or {}).get("blocks")
        _, nonce, boxes = blocks.form_parts(shown)
        picks, typed = blocks.read_picks((payload.get("state") or {}).get("values"))
        # a card showing its owners' and due dates' pickers (Reassign) keeps them
        assigning = {n for n, q in enumerate(ask.questions, start=1) if q.kind.assigns}
        expanded = any(n in assigning for n in picks) or any(
            (blocks.parse_block_id(str(b.get("block_id") or "")) or ("", 0))[1] in assigning
            for b in shown or []
            if isinstance(b, dict) and b.get("type") == "input"
        )
        form = self.form(
            record, run, ask, nonce=nonce or "0", expanded=expanded, picks=picks, typed=typed
        )
        if blocks.form_parts(form)[2] == boxes:
            return
        notice = self.approval.notice(record)  # a notice of thread messages stays on the form
        try:
            self.messages.redraw(
                channel=record.channel,
                ts=record.message_ts,
                text=self.text(record, run, ask),
                blocks=[notice, *form] if notice else form,
                via=via,
            )
        except SlackApiError as e:  # the Submit check still asks for a Why where one is due
            log.warning("question %s: box not shown: %s", record.id, slack_error(e))

    def ask_why(self, question_id: str, via: Clicked | None = None) -> None:
        """An approval's choice against the ⭐ pressed with no Why: the card (and each
        approver's copy) redrawn with its Why box, to say why and press it again."""
        record = self.store.questions.get(question_id)
        if record.status != "pending" or not (record.channel and record.message_ts):
            return
        run = self.store.runs.get(record.run_id)
        ask = ask_of(record)
        nonce = f"{record.id[-8:]}y{int(time.time())}"
        form = self.form(record, run, ask, nonce=nonce, why=True)
        notice = self.approval.notice(record)  # a notice of thread messages stays on the form
        form = [notice, *form] if notice else form
        text = self.text(record, run, ask)
        try:
            self.messages.redraw(
                channel=record.channel, ts=record.message_ts, text=text, blocks=form, via=via
            )
        except SlackApiError as e:  # the refusal said why; the next press is refused again
            log.warning("question %s: Why box not shown: %s", record.id, slack_error(e))
        self.approval.redraw_copies(record, text=text, form=form, via=via)

    def text(self, record: QuestionRecord, run: Run, ask: Ask) -> str:
        """A form's notification text: whom it waits on (mentioned) and the first question."""
        waits_on = self.messages.waits_on(run, record)
        who = ", ".join(f"<@{u}>" for u in waits_on)
        text = blocks.question_text(self.named(ask, run))
        return self.messages.safe(f"{who} — {text}" if who else text, waits_on)

    def named(self, ask: Ask, run: Run) -> Ask:
        """The form's text with the run's people by name: the model (or the playbook) writes
        the ids its tools gave it ('A different approver than U0B3N must approve')."""
        people = self.messages.people(run)
        names = self.messages.names

        def named(text: str | None) -> str | None:
            return blocks.name_ids(text, people, names, safe=False) if text else text

        return ask.model_copy(
            update={
                "context": named(ask.context),
                "questions": tuple(
                    q.model_copy(
                        update={"question": named(q.question), "reasoning": named(q.reasoning)}
                    )
                    for q in ask.questions
                ),
            }
        )

    # -- posting and redrawing ----------------------------------------------------------

    def post(self, record: QuestionRecord, *, nonce: str = "0", again: bool = False) -> None:
        """Post the question's form; `again` (a retry) first looks for one already posted."""
        run = self.store.runs.get(record.run_id)
        if not (run.channel and run.thread_ts):
            return
        if again and (ts := self.find(record)):
            self.store.questions.set_message(record.id, channel=run.channel, message_ts=ts)
            log.info("question %s: its form was already in the thread (%s)", record.id, ts)
            return
        ask = ask_of(record)
        self.attach_group_details(record, run)
        form = self.form(record, run, ask, nonce=f"{record.id[-8:]}{nonce}", attach=True)
        response = self.messages.client.chat_postMessage(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=self.text(record, run, ask),
            blocks=form,
        )
        with self.store.write():  # where the form went and its first reminder: one commit
            self.store.questions.set_message(
                record.id, channel=str(response["channel"]), message_ts=str(response["ts"])
            )
            if self.reminder and record.remind_at is None:
                self.store.questions.set_remind_at(record.id, self.store.now(after=self.reminder))
        if header_of(record) in APPROVAL_HEADERS:  # each approver told in their own DM
            self.approval.tell_approvers(
                record,
                run,
                channel=str(response["channel"]),
                ts=str(response["ts"]),
                text=self.text(record, run, ask),
                form=form,
            )

    def find(self, record: QuestionRecord) -> str | None:
        """The ts of this question's form if it is already in the thread (a process that died
        between posting it and recording where it went), found through conversations.replies."""
        run = self.store.runs.get(record.run_id)
        if not (run.channel and run.thread_ts):
            return None
        cursor = None
        for _ in range(20):  # 20 pages of 15 replies: 300, more than a close's thread
            try:
                page = self.messages.client.conversations_replies(
                    channel=run.channel, ts=run.thread_ts, limit=HISTORY_LIMIT, cursor=cursor
                )
            except SlackApiError as e:
                if e.response.get("error") != "missing_scope":
                    raise
                # Least privilege: without channels:history the thread cannot be read, so
                # the form is posted again (after a crash between posting and recording it,
                # the thread may show it twice; the first one still answers).
                log.info("question %s: thread not readable (missing_scope)", record.id)
                return None
            for message in page.get("messages") or []:
                for block in message.get("blocks") or []:
                    for element in block.get("elements") or []:
                        if (
                            element.get("action_id") == blocks.SUBMIT_ACTION
                            and element.get("value") == record.id
                        ):
                            return str(message["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return None
        return None

    def attach_group_details(self, record: QuestionRecord, run: Run) -> None:
        """Before a form that asks about a group of alike exceptions: every line of the group as
        a CSV in the thread (once per form, even when the form is posted again)."""
        found = asked_groups(self.store, record)
        if not found or any(
            e.detail.get("question_id") == record.id
            for e in self.store.audit.events(run.id, kind="group_detail_attached")
        ):
            return
        uploads = []
        for ref, group in found:
            columns, rows = detail_rows(group)
            uploads.append(
                {
                    "filename": detail_file_name(ref),
                    "title": f"Detail · {group_summary(group)}",
                    "content": to_csv(rows, columns),
                }
            )
        try:
            self.messages.client.files_upload_v2(
                channel=run.channel, thread_ts=run.thread_ts, file_uploads=uploads
            )
        except SlackApiError as e:  # the form still gives the count, the total and a few lines
            log.warning("question %s: group detail not attached: %s", record.id, slack_error(e))
            return
        self.store.audit.record(
            run_id=run.id,
            kind="group_detail_attached",
            actor=None,
            detail={"question_id": record.id, "groups": [ref for ref, _ in found]},
        )

    def refresh(self, question_id: str) -> None:
        """Redraw a pending form in place (its deadline moved); a settled one is left alone."""
        record = self.store.questions.get(question_id)
        run = self.store.runs.get(record.run_id)
        if record.status != "pending" or not (record.channel and record.message_ts):
            return
        ask = ask_of(record)
        form = self.form(record, run, ask, nonce=f"{record.id[-8:]}x{int(time.time())}")
        notice = self.approval.notice(record)  # a notice of thread messages stays on the form
        form = [notice, *form] if notice else form
        try:
            self.messages.client.chat_update(
                channel=record.channel,
                ts=record.message_ts,
                text=self.text(record, run, ask),
                blocks=form,
            )
        except SlackApiError as e:  # the old deadline shows; the new one still holds
            log.warning("question %s: form not redrawn: %s", record.id, slack_error(e))
        self.approval.redraw_copies(record, text=self.text(record, run, ask), form=form)

    def note_message(self, run_id: str) -> None:
        """A person wrote in the thread: a pending approval form says so at its top, and
        posting waits until it is approved on the form that shows it."""
        record = self.store.questions.pending(run_id)
        if record is None or not (record.channel and record.message_ts):
            return
        notice = self.approval.notice(record)
        if notice is None:
            return
        run = self.store.runs.get(run_id)
        ask = ask_of(record)
        form = self.form(record, run, ask, nonce=f"{record.id[-8:]}s{notice['block_id'][14:]}")
        try:
            self.messages.client.chat_update(
                channel=record.channel,
                ts=record.message_ts,
                text=self.text(record, run, ask),
                blocks=[notice, *form],
            )
        except SlackApiError as e:  # the Submit check still holds posting back
            log.warning("form %s: thread message not shown on it: %s", record.id, slack_error(e))
        self.approval.redraw_copies(record, text=self.text(record, run, ask), form=[notice, *form])

    # -- settled, and reminders ------------------------------------------------------------

    def settle(self, question_id: str, via: Clicked | None = None) -> bool:
        """Turn a settled form read-only: who chose what, how and when. False if Slack refused;
        the form is remembered as still looking live and the watchdog tries again. The copy a
        person answered on (`via`) is replaced through the interaction's response_url, not
        chat.update (messages.Clicked)."""
        names = self.messages.names
        record = self.store.questions.get(question_id)
        if not (record.channel and record.message_ts):
            return True
        ask = ask_of(record)
        outcome = outcome_of(record)
        if outcome.answers:  # an owner picked on the form is shown by name
            outcome = dataclasses.replace(
                outcome,
                answers={
                    k: {**v, "user": names(v["user"])}
                    if isinstance(v, dict) and v.get("user")
                    else v
                    for k, v in outcome.answers.items()
                },
            )
        name = names(record.answered_by)
        form = blocks.answered_form(ask, outcome, who=blocks.escape(name))
        chose = ""
        first = (record.answer or {}).get("1")
        if record.status == "answered" and len(ask.questions) == 1 and first:
            chose = f": {answer_text(first)}"
        done = "Put off" if record.status == "deferred" else record.status.capitalize()
        text = outgoing(f"{done} by {name}{chose}")
        try:
            self.messages.redraw(
                channel=record.channel, ts=record.message_ts, text=text, blocks=form, via=via
            )
        except SlackApiError as e:
            log.warning("form %s not shown as settled: %s", question_id, slack_error(e))
            return False
        self.approval.redraw_copies(record, text=text, form=form, via=via)
        self.store.questions.set_form_shown_settled(question_id)
        return True

    def remind(self, record: QuestionRecord) -> None:
        """Ping the people who may answer a question that is still open."""
        out = self.messages
        run = self.store.runs.get(record.run_id)
        ask = ask_of(record)
        waits_on = out.waits_on(run, record)
        who = (
            ", ".join(f"<@{u}>" for u in waits_on)
            if header_of(record) in APPROVAL_HEADERS and out.approvers
            else who_may_answer(run, out.approvers)
        )
        out.post(
            run.id,
            f"⏰ Still waiting on a decision from {who}: {ask.questions[0].question}",
            mention=waits_on,
        )

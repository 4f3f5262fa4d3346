"""The Slack presenter: a run's events become messages and updates in its thread."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.agent_loop import ask_of, outcome_of
from bot.audit import ENTRY_COLUMNS, decision_rows, to_csv
from bot.close.controls import APPROVAL_HEADERS, header_of
from bot.close.data import period_label
from bot.close.ledger import Ledger
from bot.close.master import money
from bot.store import QuestionRecord, Run, Store

log = logging.getLogger(__name__)


def who_may_answer(run: Run, approvers: frozenset[str]) -> str:
    """'<@U1> (started this close) or an approver: <@U2>, <@U3>'."""
    text = (
        f"<@{run.started_by}> (started this close)"
        if run.started_by
        else "the person who started this close"
    )
    if approvers:
        text += " or an approver: " + ", ".join(f"<@{a}>" for a in sorted(approvers))
    return text


def status_title(run: Run, status: str | None = None) -> str:
    state = status or run.status
    word = {
        "running": "in progress",
        "waiting": "waiting on you",
        "done": "finished",
        "failed": "stopped",
        "cancelled": "cancelled",
    }
    return f"Month-end close · {period_label(run.period)} — {word.get(state, state)}"


class SlackPresenter:
    """Posts to a run's thread; every call is one Web API request through the retrying client."""

    def __init__(
        self,
        *,
        client: WebClient,
        store: Store,
        steps: Sequence[str],
        approvers: frozenset[str] = frozenset(),
    ) -> None:
        self.client = client
        self.store = store
        self.steps = list(steps)
        self.approvers = approvers

    # -- thread set-up ---------------------------------------------------

    def open_thread(self, run_id: str) -> Run:
        """Post the root message and the status message; record where they are."""
        run = self.store.run(run_id)
        assert run.channel
        title = f"Month-end close · {period_label(run.period)} · started by <@{run.started_by}>"
        root = self.client.chat_postMessage(
            channel=run.channel, text=title, blocks=[blocks.section(f"*{title}*")]
        )
        thread_ts = root["ts"]
        self.store.set_run_thread(
            run_id, channel=root["channel"], thread_ts=thread_ts, status_ts=None
        )
        run = self.store.run(run_id)
        status = self.client.chat_postMessage(
            channel=root["channel"],
            thread_ts=thread_ts,
            text=status_title(run),
            blocks=self._status(run, run.steps),
        )
        self.store.set_run_thread(
            run_id, channel=root["channel"], thread_ts=thread_ts, status_ts=status["ts"]
        )
        return self.store.run(run_id)

    def _status(
        self, run: Run, steps: dict[str, str], note: str | None = None
    ) -> list[dict[str, Any]]:
        ordered = [(s, steps.get(s, "pending")) for s in self.steps]
        ordered += [(s, state) for s, state in steps.items() if s not in self.steps]
        return blocks.status_blocks(status_title(run), ordered, note)

    def update_status(self, run_id: str, note: str | None = None) -> None:
        run = self.store.run(run_id)
        if not (run.channel and run.status_ts):
            return
        self.client.chat_update(
            channel=run.channel,
            ts=run.status_ts,
            text=status_title(run),
            blocks=self._status(run, run.steps, note),
        )

    def post(
        self, run_id: str, text: str, block_list: list[dict[str, Any]] | None = None
    ) -> str | None:
        run = self.store.run(run_id)
        if not run.channel:
            return None
        people = {
            run.started_by or "",
            *self.approvers,
            *(q.answered_by or "" for q in self.store.questions(run_id)),
        }
        response = self.client.chat_postMessage(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=blocks.cut(text, 3000),
            blocks=block_list or blocks.text_blocks(text, people=people),
        )
        return str(response["ts"])

    def reply(self, *, channel: str, thread_ts: str | None, text: str) -> None:
        """A message outside any run (help for a mention in the channel)."""
        self.client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, text=text, blocks=blocks.notice_blocks(text)
        )

    def ephemeral(
        self,
        *,
        channel: str,
        user: str,
        thread_ts: str | None,
        text: str,
        people: Sequence[str | None] = (),
    ) -> None:
        """A notice only `user` sees; the mentions of `people` in it stay mentions."""
        self.client.chat_postEphemeral(
            channel=channel,
            user=user,
            thread_ts=thread_ts,
            text=text,
            blocks=blocks.notice_blocks(text, people=[*people, *self.approvers]),
        )

    # -- the Presenter protocol ------------------------------------------

    def text(self, run_id: str, text: str) -> None:
        try:
            self.post(run_id, text)
        except SlackApiError as e:  # narration is not worth stopping the close for
            log.warning("run %s: narration not posted: %s", run_id, e.response.get("error"))

    def progress(self, run_id: str, steps: dict[str, str]) -> None:
        try:
            self.update_status(run_id)
        except SlackApiError as e:  # the next step's update will carry the state
            log.warning("run %s: status not updated: %s", run_id, e.response.get("error"))

    def question(self, run_id: str, question: QuestionRecord) -> None:
        self.post_form(question)

    def finished(self, run_id: str, text: str) -> None:
        self.post(run_id, text or "Done.")
        self.update_status(run_id)
        self.upload_reports(run_id)
        self._react(run_id, "white_check_mark")

    def _react(self, run_id: str, name: str) -> None:
        """Mark the root message, so the channel sees at a glance which closes are finished."""
        run = self.store.run(run_id)
        if not (run.channel and run.thread_ts):
            return
        try:
            self.client.reactions_add(channel=run.channel, timestamp=run.thread_ts, name=name)
        except SlackApiError as e:
            if e.response.get("error") != "already_reacted":
                log.warning(
                    "run %s: could not add :%s: (%s)", run_id, name, e.response.get("error")
                )

    def failed(self, run_id: str, error: str) -> None:
        self.post(
            run_id,
            f"❌ The close stopped: {error}",
            blocks.error_blocks(f"The close stopped: {error}"),
        )
        self.update_status(
            run_id, note="Mention me in this thread with 'retry' to continue from where it stopped."
        )

    # -- forms -----------------------------------------------------------

    def post_form(self, record: QuestionRecord, *, nonce: str = "0") -> None:
        run = self.store.run(record.run_id)
        if not run.channel:
            return
        ask = ask_of(record)
        confirm = None
        if header_of(record) in APPROVAL_HEADERS:
            confirm = self._attach_draft(record)
        form = blocks.question_form(
            ask,
            question_id=record.id,
            who_may_answer=who_may_answer(run, self.approvers),
            nonce=f"{record.id[-8:]}{nonce}",
            deadline=blocks.deadline_note(ask, record.expires_at),
            confirm=confirm,
        )
        response = self.client.chat_postMessage(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=blocks.question_text(ask),
            blocks=form,
        )
        self.store.set_question_message(
            record.id, channel=str(response["channel"]), message_ts=str(response["ts"])
        )

    def _attach_draft(self, record: QuestionRecord) -> str | None:
        """Before an approval form: the draft journal CSV in the thread; the confirm dialog's text."""
        run = self.store.run(record.run_id)
        ledger = Ledger(self.store)
        batch = ledger.current_batch(run.id)
        if batch is None or batch["status"] != "draft":
            return None
        lines = ledger.lines(batch["id"])
        entries = len({line["entry_no"] for line in lines})
        try:
            self.client.files_upload_v2(
                channel=run.channel,
                thread_ts=run.thread_ts,
                file_uploads=[
                    {
                        "filename": f"journal-{batch['id']}-draft.csv",
                        "title": f"Draft journal entries · {batch['id']} · for approval",
                        "content": to_csv(lines, ENTRY_COLUMNS),
                    }
                ],
            )
        except SlackApiError as e:  # the form still carries the batch by account
            log.warning("run %s: draft CSV not attached: %s", run.id, e.response.get("error"))
        return f"Post {entries} entries, {money(Decimal(batch['total_debit']))}, batch {batch['id']}? Posting cannot be undone."

    def settle_form(self, question_id: str) -> None:
        """Turn a settled form read-only: who chose what, how and when."""
        record = self.store.question(question_id)
        if not (record.channel and record.message_ts):
            return
        ask = ask_of(record)
        form = blocks.answered_form(ask, outcome_of(record))
        self.client.chat_update(
            channel=record.channel,
            ts=record.message_ts,
            text=f"{record.status.capitalize()} by {blocks.person(record.answered_by)}",
            blocks=form,
        )

    # -- reports ---------------------------------------------------------

    def upload_reports(self, run_id: str) -> None:
        """The decision log and the journal entries as CSV files in the thread."""
        run = self.store.run(run_id)
        if not run.channel:
            return
        uploads = [
            {
                "filename": f"decisions-{run.period}-{run.id}.csv",
                "title": f"Decision log · {run.period}",
                "content": to_csv(decision_rows(self.store, run_id)),
            }
        ]
        batch = Ledger(self.store).current_batch(run_id)
        if batch:
            lines = Ledger(self.store).lines(batch["id"])
            uploads.append(
                {
                    "filename": f"journal-{batch['id']}.csv",
                    "title": f"Journal entries · {batch['id']} ({batch['status']})",
                    "content": to_csv(lines, ENTRY_COLUMNS),
                }
            )
        try:
            self.client.files_upload_v2(
                channel=run.channel, thread_ts=run.thread_ts, file_uploads=uploads
            )
        except SlackApiError as e:
            log.warning("run %s: could not upload reports: %s", run_id, e)
            self.post(
                run_id,
                f"I could not attach the CSV reports ({e.response.get('error')}); `closebot audit {run_id} --csv` prints them.",
            )

"""The Slack presenter: a run's events become messages and updates in its thread."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from bot import blocks
from bot.agent_loop import ask_of, outcome_of
from bot.audit import ENTRY_COLUMNS, decision_rows, to_csv
from bot.blocks import outgoing
from bot.close.controls import APPROVAL_HEADERS, header_of
from bot.close.data import period_label
from bot.close.ledger import Ledger
from bot.close.master import money
from bot.debounce import Debounce
from bot.identity import mention
from bot.questions import answer_text
from bot.store import QuestionRecord, Run, Store

log = logging.getLogger(__name__)

# Slack errors no retry can fix: the run is failed and the person told why.
CANNOT_POST = {
    "not_in_channel": "I'm not in this channel: invite me with `/invite @closebot`, then run `/close` again.",
    "channel_not_found": "I can't see this channel (a private channel or a DM I'm not in): invite me with `/invite @closebot`, then run `/close` again.",
    "is_archived": "This channel is archived; run `/close` in an active channel.",
    "restricted_action": "This workspace does not let me post in this channel; ask an admin, or run `/close` in another channel.",
}


def slack_error(e: Exception) -> str:
    """The Slack error code of a failed Web API call ('internal_error' for an HTTP failure)."""
    if isinstance(e, SlackApiError):
        return str(e.response.get("error") or f"http_{e.response.status_code}")
    return type(e).__name__


def who_may_answer(run: Run, approvers: frozenset[str]) -> str:
    """'<@U1> (started this close) or an approver: <@U2>, <@U3>'."""
    text = (
        f"<@{run.started_by}> (started this close)"
        if run.started_by
        else "the person who started this close"
    )
    if approvers:
        text += " or an approver: " + ", ".join(mention(a) for a in sorted(approvers))
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
    """Posts to a run's thread; every call is one Web API request through the retrying client.

    Every outgoing `text` and block goes through blocks.outgoing(): only the mentions the bot
    means to make (the run's own people) survive; `<!channel>` and links never do.
    """

    def __init__(
        self,
        *,
        client: WebClient,
        store: Store,
        steps: Sequence[str],
        approvers: frozenset[str] = frozenset(),
        reminder: timedelta | None = None,
    ) -> None:
        self.client = client
        self.store = store
        self.steps = list(steps)
        self.approvers = approvers
        self.reminder = reminder  # first reminder of a pending question; then daily
        # What each status message was last updated to (ts → text and blocks), so an update
        # that would change nothing is not sent. Memory only: after a restart, one repeat.
        self._shown: dict[str, str] = {}
        self._shown_lock = threading.Lock()
        # One status update of a run at a time, each reading the run when it holds the lock:
        # a folded update still in flight never lands after the final state (striped locks,
        # so their number stays bounded however many runs there are).
        self._status_locks = [threading.Lock() for _ in range(64)]
        # Runs whose status message shows a final state (finished, failed, stopped): a folded
        # update that was already on its way does not replace it (the failure's note stays).
        # A new turn's first step change clears the mark.
        self._final: set[str] = set()
        # A turn's many step changes become one status update at a time (bot/debounce.py).
        self._status_updates = Debounce(self._progress_now)

    def people(self, run: Run) -> set[str]:
        """Whom the bot may mention in this run's thread."""
        return {
            run.started_by or "",
            *self.approvers,
            *(q.answered_by or "" for q in self.store.questions(run.id)),
        }

    # -- thread set-up ---------------------------------------------------

    def open_thread(self, run_id: str) -> Run:
        """Post the root message and the status message; record where they are. Idempotent:
        a retry after a failure posts only what is missing."""
        run = self.store.run(run_id)
        assert run.channel
        if not run.thread_ts:
            title = outgoing(
                f"Month-end close · {period_label(run.period)} · started by <@{run.started_by}>",
                [run.started_by or ""],
            )
            root = self.client.chat_postMessage(
                channel=run.channel, text=title, blocks=[blocks.section(f"*{title}*")]
            )
            self.store.set_run_thread(
                run_id, channel=root["channel"], thread_ts=root["ts"], status_ts=None
            )
            run = self.store.run(run_id)
        if not run.status_ts:
            assert run.channel and run.thread_ts
            status = self.client.chat_postMessage(
                channel=run.channel,
                thread_ts=run.thread_ts,
                text=outgoing(status_title(run)),
                blocks=self._status(run, run.steps),
            )
            self.store.set_run_thread(
                run_id, channel=run.channel, thread_ts=run.thread_ts, status_ts=status["ts"]
            )
        return self.store.run(run_id)

    def _status(
        self, run: Run, steps: dict[str, str], note: str | None = None
    ) -> list[dict[str, Any]]:
        ordered = [(s, steps.get(s, "pending")) for s in self.steps]
        ordered += [(s, state) for s, state in steps.items() if s not in self.steps]
        live = run.status in ("running", "waiting") and not run.stop_requested_by
        return blocks.status_blocks(
            status_title(run), ordered, note, stop_run_id=run.id if live else None
        )

    def update_status(
        self, run_id: str, note: str | None = None, *, final: bool = False, folded: bool = False
    ) -> None:
        """Move the status message; `note` is plain text (mentions of the run's people kept).
        A `final` state (the turn ended) is not replaced by a `folded` update sent late."""
        with self._status_locks[hash(run_id) % len(self._status_locks)]:
            if folded and run_id in self._final:
                return
            if final:
                self._final.add(run_id)
            run = self.store.run(run_id)
            if not (run.channel and run.status_ts):
                return
            safe_note = outgoing(note, self.people(run)) if note else None
            text = outgoing(status_title(run))
            status_blocks = self._status(run, run.steps, safe_note)
            shown = json.dumps([run.channel, text, status_blocks], sort_keys=True)
            with self._shown_lock:
                if self._shown.get(run.status_ts) == shown:
                    return  # the message already shows exactly this
            self.client.chat_update(
                channel=run.channel, ts=run.status_ts, text=text, blocks=status_blocks
            )
            with self._shown_lock:
                self._shown[run.status_ts] = shown

    def post(
        self, run_id: str, text: str, block_list: list[dict[str, Any]] | None = None
    ) -> str | None:
        """Text (from the model, a person or the bot) in the run's thread."""
        run = self.store.run(run_id)
        if not (run.channel and run.thread_ts):
            return None
        people = self.people(run)
        response = self.client.chat_postMessage(
            channel=run.channel,
            thread_ts=run.thread_ts,
            text=blocks.cut(outgoing(text, people), 3000),
            blocks=block_list or blocks.text_blocks(text, people=people),
        )
        return str(response["ts"])

    def reply(self, *, channel: str, thread_ts: str | None, text: str) -> None:
        """A message outside any run (help for a mention in the channel)."""
        safe = outgoing(text)
        self.client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, text=safe, blocks=blocks.notice_blocks(safe)
        )

    def ephemeral(
        self,
        *,
        channel: str,
        user: str,
        thread_ts: str | None,
        text: str,
        people: Iterable[str] = (),
    ) -> None:
        """A private notice; `people` are the users it may mention (the reader is always one)."""
        safe = outgoing(text, [user, *people])
        self.client.chat_postEphemeral(
            channel=channel,
            user=user,
            thread_ts=thread_ts,
            text=safe,
            blocks=blocks.notice_blocks(safe),
        )

    def respond(self, response_url: str | None, text: str, people: Iterable[str] = ()) -> None:
        """A private answer through a slash command's response_url: it works where the bot
        cannot post (not in the channel)."""
        if not response_url:
            return
        safe = outgoing(text, people)
        try:
            WebhookClient(response_url, timeout=10).send(
                text=safe, response_type="ephemeral", blocks=blocks.notice_blocks(safe)
            )
        except Exception as e:  # the person sees nothing more; the run's state says why
            log.warning("response_url not reachable: %s", e)

    # -- the Presenter protocol ------------------------------------------

    def text(self, run_id: str, text: str) -> None:
        try:
            self.post(run_id, text)
        except SlackApiError as e:  # narration is not worth stopping the close for
            log.warning("run %s: narration not posted: %s", run_id, slack_error(e))

    def progress(self, run_id: str, steps: dict[str, str]) -> None:
        with self._status_locks[hash(run_id) % len(self._status_locks)]:
            self._final.discard(run_id)  # the run moves again
        self._status_updates.touch(run_id)

    def _progress_now(self, run_id: str, *, final: bool = False) -> None:
        try:
            self.update_status(run_id, final=final, folded=not final)
        except SlackApiError as e:  # the next step's update will carry the state
            log.warning("run %s: status not updated: %s", run_id, slack_error(e))

    def question(self, run_id: str, question: QuestionRecord) -> None:
        try:
            self.post_form(question)
        except SlackApiError as e:  # the question is stored; the watchdog posts its form
            log.warning(
                "run %s: form %s not posted (%s); it will be posted again",
                run_id,
                question.id,
                slack_error(e),
            )
        self._status_updates.flush(run_id)  # "waiting on you" shows with the form

    def finished(self, run_id: str, text: str) -> None:
        self.post(run_id, text or "Done.")
        self._status_updates.drop(run_id)
        self._progress_now(run_id, final=True)
        if not self.store.audit_events(run_id, kind="reports_uploaded"):
            self.upload_reports(run_id)
            self.store.audit(run_id=run_id, kind="reports_uploaded", actor=None)
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
                log.warning("run %s: could not add :%s: (%s)", run_id, name, slack_error(e))

    def failed(self, run_id: str, error: str) -> None:
        run = self.store.run(run_id)
        text = f"The close stopped: {error}"
        safe = outgoing(text, self.people(run))
        try:
            self.post(run_id, f"❌ {text}", blocks.retry_blocks(safe, run_id))
        except SlackApiError as e:
            log.warning("run %s: failure notice not posted: %s", run_id, slack_error(e))
        self._status_updates.drop(run_id)  # the failure's own update is the last word
        try:
            self.update_status(
                run_id,
                final=True,
                note="Press Retry (or write 'retry' in this thread) to continue from where it stopped.",
            )
        except SlackApiError as e:
            log.warning("run %s: status not updated: %s", run_id, slack_error(e))

    def stopped(self, run_id: str, by: str) -> None:
        for record in self.store.questions(run_id):
            if record.status == "cancelled" and record.source == "stop":
                self.settle_form(record.id)
        self._status_updates.drop(run_id)
        try:
            self.update_status(run_id, note=f"Stopped by <@{by}>.", final=True)
            self.post(run_id, f"⏹ <@{by}> stopped this close. Start a new one with `/close`.")
        except SlackApiError as e:
            log.warning("run %s: stop not shown: %s", run_id, slack_error(e))

    # -- forms -----------------------------------------------------------

    def find_form(self, record: QuestionRecord) -> str | None:
        """The ts of this question's form if it is already in the thread (a process that died
        between posting it and recording where it went), found through conversations.replies."""
        run = self.store.run(record.run_id)
        if not (run.channel and run.thread_ts):
            return None
        cursor = None
        for _ in range(20):  # 20 pages of 200 replies: far more than a close's thread
            page = self.client.conversations_replies(
                channel=run.channel, ts=run.thread_ts, limit=200, cursor=cursor
            )
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

    def post_form(self, record: QuestionRecord, *, nonce: str = "0", again: bool = False) -> None:
        """Post the question's form; `again` (a retry) first looks for one already posted."""
        run = self.store.run(record.run_id)
        if not (run.channel and run.thread_ts):
            return
        if again and (ts := self.find_form(record)):
            self.store.set_question_message(record.id, channel=run.channel, message_ts=ts)
            log.info("question %s: its form was already in the thread (%s)", record.id, ts)
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
            text=outgoing(blocks.question_text(ask)),
            blocks=form,
        )
        with self.store.write():  # where the form went and its first reminder: one commit
            self.store.set_question_message(
                record.id, channel=str(response["channel"]), message_ts=str(response["ts"])
            )
            if self.reminder and record.remind_at is None:
                self.store.set_remind_at(record.id, self.store.now(after=self.reminder))

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
            log.warning("run %s: draft CSV not attached: %s", run.id, slack_error(e))
        return f"Post {entries} entries, {money(Decimal(batch['total_debit']))}, batch {batch['id']}? Posting cannot be undone."

    def settle_form(self, question_id: str) -> bool:
        """Turn a settled form read-only: who chose what, how and when. False if Slack refused;
        the form is remembered as still looking live and the watchdog tries again."""
        record = self.store.question(question_id)
        if not (record.channel and record.message_ts):
            return True
        ask = ask_of(record)
        form = blocks.answered_form(ask, outcome_of(record))
        chose = ""
        first = (record.answer or {}).get("1")
        if record.status == "answered" and len(ask.questions) == 1 and first:
            chose = f": {answer_text(first)}"
        who = f"<@{record.answered_by}>" if record.answered_by else "closebot"
        try:
            self.client.chat_update(
                channel=record.channel,
                ts=record.message_ts,
                text=outgoing(
                    f"{record.status.capitalize()} by {who}{chose}", [record.answered_by or ""]
                ),
                blocks=form,
            )
        except SlackApiError as e:
            log.warning("form %s not shown as settled: %s", question_id, slack_error(e))
            return False
        self.store.set_form_shown_settled(question_id)
        return True

    def remind(self, record: QuestionRecord) -> None:
        """Ping the people who may answer a question that is still open."""
        run = self.store.run(record.run_id)
        ask = ask_of(record)
        self.post(
            run.id,
            f"⏰ Still waiting on a decision from {who_may_answer(run, self.approvers)}: "
            f"{ask.questions[0].question}",
        )

    def slack_auth(self) -> str:
        """'ok', or the error auth.test answers (a revoked token, an unreachable Slack)."""
        try:
            self.client.auth_test()
        except SlackApiError as e:
            return slack_error(e)
        except Exception as e:  # unreachable: connection refused, DNS, timeout
            return f"unreachable ({type(e).__name__})"
        return "ok"

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
            log.warning("run %s: could not upload reports: %s", run_id, slack_error(e))
            self.post(
                run_id,
                f"I could not attach the CSV reports ({slack_error(e)}); `closebot audit {run_id} --csv` prints them.",
            )

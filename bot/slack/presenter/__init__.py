"""The Slack presenter: a run's events become messages and updates in its thread.

SlackPresenter is the agent loop's Presenter (text, progress, question, finished, failed,
stopped, waiting) composed of one part per concern, each a module here: messages (safe text,
posts, private notices), thread (set-up), root (the close's message in the channel), plan
(the streamed steps), status (the status message and line), forms and approval (questions),
owners (open items by DM), reports (the CSV files), auth (auth.test), debounce (a turn's
many step changes folded into one update).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.close import APPROVAL_LIMIT
from bot.core.names import Names
from bot.slack.presenter.approval import ApprovalForm, entries_by_account, seen_block_id
from bot.slack.presenter.auth import Workspace
from bot.slack.presenter.debounce import Debounce
from bot.slack.presenter.forms import Forms
from bot.slack.presenter.messages import CANNOT_POST, Clicked, Messages, slack_error
from bot.slack.presenter.owners import OwnerDMs
from bot.slack.presenter.plan import PlanStream
from bot.slack.presenter.reports import Reports
from bot.slack.presenter.root import RootMessage, root_block_id, status_title
from bot.slack.presenter.status import Status
from bot.slack.presenter.thread import Thread
from bot.store import QuestionRecord, Run, Store

__all__ = [
    "CANNOT_POST",
    "Clicked",
    "SlackPresenter",
    "entries_by_account",
    "root_block_id",
    "seen_block_id",
    "slack_error",
    "status_title",
]

log = logging.getLogger(__name__)

NARRATION_CHARS = 200  # the model's line on the plan: one line, not a paragraph


class SlackPresenter:
    """Shows a run in its Slack thread: the Presenter protocol over the parts below.

    Every outgoing `text` and block goes through blocks.outgoing() (bot/slack/presenter/
    messages.py): only the mentions the bot means to make survive.
    """

    def __init__(
        self,
        *,
        client: WebClient,
        store: Store,
        steps: Sequence[str],
        approvers: frozenset[str] = frozenset(),
        approval_limit: Decimal = APPROVAL_LIMIT,
        reminder: timedelta | None = None,
        plan: bool = True,
        account_map: Path | None = None,
        data_dir: Path | None = None,
        names: Names | None = None,
    ) -> None:
        self.client = client
        self.store = store
        self.steps = list(steps)
        self.approvers = approvers
        self.names = names or Names(store)
        self.messages = Messages(
            client=client,
            store=store,
            names=self.names,
            approvers=approvers,
            approval_limit=approval_limit,
        )
        self.auth = Workspace(client)
        self.root = RootMessage(self.messages)
        # The status message as a plan streamed with chat.startStream; where Slack refuses the
        # stream, an ordinary message moved with chat.update (what the plan falls back to).
        self.plan = PlanStream(self.messages, self.auth, steps, enabled=plan)
        self.status = Status(self.messages, self.root, self.plan, steps)
        self.thread = Thread(self.messages, self.root, self.plan, self.status)
        self.approval = ApprovalForm(self.messages)
        self.forms = Forms(self.messages, self.approval, reminder=reminder)
        self.owners = OwnerDMs(self.messages)
        self.reports = Reports(self.messages, account_map=account_map, data_dir=data_dir)
        # A turn's many step changes become one status update at a time (debounce.py).
        self._status_updates = Debounce(self._progress_now)

    @property
    def on_state_change(self) -> Callable[[], None] | None:
        """Told when a run's state changes (the App Home tabs are published again)."""
        return self.status.on_state_change

    @on_state_change.setter
    def on_state_change(self, told: Callable[[], None] | None) -> None:
        self.status.on_state_change = told

    # -- the parts, as the work queue, the listeners and the desk ask for them ------

    def open_thread(self, run_id: str, *, again: bool = False) -> Run:
        return self.thread.open(run_id, again=again)

    def post_form(self, record: QuestionRecord, *, nonce: str = "0", again: bool = False) -> None:
        self.forms.post(record, nonce=nonce, again=again)

    def form_details(self, question_id: str) -> dict[str, Any]:
        return self.forms.details(question_id)

    def expand_form(self, question_id: str) -> None:
        self.forms.expand(question_id)

    def pick_on_form(self, question_id: str, payload: dict[str, Any], via: Clicked | None) -> None:
        self.forms.pick(question_id, payload, via)

    def ask_why_on_form(self, question_id: str, via: Clicked | None) -> None:
        self.forms.ask_why(question_id, via)

    def refresh_form(self, question_id: str) -> None:
        self.forms.refresh(question_id)

    def settle_form(self, question_id: str, via: Clicked | None = None) -> bool:
        return self.forms.settle(question_id, via)

    def note_message(self, run_id: str) -> None:
        self.forms.note_message(run_id)

    def remind(self, record: QuestionRecord) -> None:
        self.forms.remind(record)

    def unseen_messages(
        self, record: QuestionRecord, shown: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        return self.approval.unseen_messages(record, shown)

    def state_line(self, run: Run) -> str:
        return self.root.state_line(run)

    def set_status(self, run_id: str, step: str | None = None, *, again: bool = False) -> None:
        self.status.set_line(run_id, step, again=again)

    def clear_status(self, run_id: str) -> None:
        self.status.clear_line(run_id)

    def update_status(
        self, run_id: str, note: str | None = None, *, final: bool = False, folded: bool = False
    ) -> None:
        self.status.update(run_id, note, final=final, folded=folded)

    def draw_owed_plans(self) -> list[str]:
        """Draw the plans owed at a wait (status.PLAN_GAP): the watchdog's tick; their runs."""
        drawn = []
        for run_id, note in self.status.owed():
            try:
                with self.store.runs.acting_for(run_id):  # its workspace's token
                    self.update_status(run_id, note)
                drawn.append(run_id)
            except SlackApiError as e:  # owed still: the next tick tries again
                log.warning("run %s: plan not drawn: %s", run_id, slack_error(e))
        return drawn

    def tell_owners(self, run_id: str) -> None:
        self.owners.tell_owners(run_id)

    def upload_reports(self, run_id: str) -> None:
        self.reports.upload(run_id)

    def slack_auth(self) -> str:
        return self.auth.slack_auth()

    def revoke(self, reason: str | None) -> None:
        self.auth.revoke(reason)

    def safe(self, text: str, mention: Iterable[str] = (), *, run: Run | None = None) -> str:
        return self.messages.safe(text, mention, run=run)

    def plain(self, text: str, run: Run) -> str:
        return self.messages.plain(text, run)

    def post(
        self,
        run_id: str,
        text: str,
        block_list: list[dict[str, Any]] | None = None,
        *,
        mention: Iterable[str] = (),
    ) -> str | None:
        return self.messages.post(run_id, text, block_list, mention=mention)

    def reply(self, *, channel: str, thread_ts: str | None, text: str) -> None:
        self.messages.reply(channel=channel, thread_ts=thread_ts, text=text)

    def ephemeral(
        self,
        *,
        channel: str,
        user: str,
        thread_ts: str | None,
        text: str,
        people: Iterable[str] = (),
    ) -> None:
        self.messages.ephemeral(
            channel=channel, user=user, thread_ts=thread_ts, text=text, people=people
        )

    def respond(self, response_url: str | None, text: str, people: Iterable[str] = ()) -> None:
        self.messages.respond(response_url, text, people)

    # -- the Presenter protocol ------------------------------------------

    def text(self, run_id: str, text: str) -> None:
        """The model's narration between steps: one line on the plan's running step (or the
        status message's note), never a reply of its own — the thread stays quiet."""
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        if not line:
            return
        self.plan.narration[run_id] = blocks.cut(line, NARRATION_CHARS)
        self._status_updates.touch(run_id)

    def say(self, run_id: str, text: str) -> None:
        """A reply to a person in the run's thread (not narration)."""
        try:
            self.post(run_id, text)
        except SlackApiError as e:
            log.warning("run %s: reply not posted: %s", run_id, slack_error(e))

    def progress(self, run_id: str, steps: dict[str, str]) -> None:
        # (the status line, set once when the turn started, names this step and the ones after)
        self.status.moves_again(run_id)
        self._status_updates.touch(run_id)
        if self.plan.resting(run_id):  # the close works again after a wait: its plan now
            self._status_updates.flush(run_id)

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
        # "waiting on you" shows with the form, now: the plan's stream is stopped before the
        # wait (Slack would end it in five minutes) — even with no step change pending
        self._status_updates.touch(run_id)
        self._status_updates.flush(run_id)

    def finished(self, run_id: str, text: str) -> None:
        # the summary's point shows; the whole of it one click away (issue 30)
        self.messages.post(run_id, text or "Done.", fold="Full summary")
        self._status_updates.drop(run_id)
        self._progress_now(run_id, final=True)
        if not self.store.audit.events(run_id, kind="reports_uploaded"):
            self.upload_reports(run_id)
            self.store.audit.record(run_id=run_id, kind="reports_uploaded", actor=None)
        self.tell_owners(run_id)

    def waiting(self, run_id: str, text: str) -> None:
        """The turn ended on questions put off: the status message says what waits, and the
        close's message in the channel carries a Decide button for each (no new reply)."""
        self._status_updates.drop(run_id)
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        try:
            self.update_status(run_id, note=line or None, final=True)
        except SlackApiError as e:
            log.warning("run %s: waiting not shown: %s", run_id, slack_error(e))

    def retrying(self, run_id: str, text: str) -> None:
        """The model API could not answer: the thread says so and when the close tries again
        (by itself); the status message shows the wait."""
        self._status_updates.drop(run_id)
        self.say(run_id, text)
        try:
            self.update_status(run_id, note=text.split(". ")[0], final=True)
        except SlackApiError as e:
            log.warning("run %s: retry wait not shown: %s", run_id, slack_error(e))

    def failed(self, run_id: str, error: str) -> None:
        run = self.store.runs.get(run_id)
        if not run.thread_ts:  # no thread to say it in: the starter is told by DM
            try:
                self.thread.never_opened(run, error)
            except SlackApiError as e:
                log.warning("run %s: failure not told: %s", run_id, slack_error(e))
            return
        text = f"The close stopped: {error}"
        safe = self.safe(text, run=run)
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
        for record in self.store.questions.of_run(run_id):
            if record.status == "cancelled" and record.source == "stop":
                self.settle_form(record.id)
        self._status_updates.drop(run_id)
        try:
            self.update_status(run_id, note=f"Stopped by <@{by}>.", final=True)
            self.post(run_id, f"⏹ <@{by}> stopped this close. Start a new one with `/close`.")
        except SlackApiError as e:
            log.warning("run %s: stop not shown: %s", run_id, slack_error(e))

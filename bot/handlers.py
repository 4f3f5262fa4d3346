"""Bolt listeners: parse, authorize, claim, ack — then hand the work to the work queue.

No listener runs the agent or waits on a Web API call before it acks: with
process_before_response=True the HTTP answer leaves when the listener returns.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slack_bolt import Ack, App, BoltContext

from bot import blocks
from bot.agent_loop import ask_of
from bot.answers import Answers
from bot.close import data as close_data
from bot.close.controls import approval_refusal
from bot.errors import (
    AlreadyAnsweredError,
    AnswerError,
    BusyError,
    CloseBotError,
    NotAuthorizedError,
    NotFoundError,
    StorageError,
)
from bot.slack_work import SlackWork
from bot.store import QuestionRecord, Run, Store

log = logging.getLogger(__name__)

USAGE = "Usage: `/close [YYYY-MM]` — for example `/close 2026-10`. Without a period I close the latest one with data."


MAX_COMMAND_TEXT = 40  # "/close 2026-10" needs 7; longer text is refused, never echoed
BUSY = "The database is busy right now, so nothing was changed — please try again in a moment."
DB_DOWN = "I can't write to my database right now, so nothing was changed; please tell whoever runs closebot."


NO_WHY_BOX = "answered on a form from an earlier release, which had no Why box"


def _storage(e: StorageError) -> str:
    return BUSY if isinstance(e, BusyError) else DB_DOWN


@dataclass(frozen=True)
class Deps:
    store: Store
    work: SlackWork
    approvers: frozenset[str]
    data_dir: Path | None = None


def register(app: App, deps: Deps) -> None:
    """Attach every listener to `app`."""
    h = Listeners(deps)
    app.command("/close")(h.close_command)
    app.action(blocks.SUBMIT_ACTION)(h.submit)
    app.action(blocks.CANCEL_ACTION)(h.cancel)
    app.action(blocks.STOP_ACTION)(h.stop)
    app.action(blocks.RETRY_ACTION)(h.retry)
    app.options(blocks.ANSWER_ACTION)(h.menu_options)
    app.action(re.compile(".*"))(h.any_other_action)  # after the specific ones: first match wins
    app.event("app_mention")(h.mention)
    app.event("message")(h.message)


def _who(body: dict[str, Any]) -> tuple[str, str, str | None]:
    """(user, channel, thread_ts) of an interaction payload."""
    container = body.get("container") or {}
    user = (body.get("user") or {}).get("id") or ""
    channel = (body.get("channel") or {}).get("id") or container.get("channel_id", "")
    return str(user), str(channel), container.get("thread_ts")


class Listeners:
    """The listeners, as plain methods over the store and the work queue.

    Each runs its database calls inside store.quick(): a database locked by someone else
    costs the person a "busy, try again", never a missed 3-second ack.
    """

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.store = deps.store
        self.work = deps.work
        self.answers = Answers(
            deps.store,
            deps.approvers,
            vet=lambda record, run, user, answer: approval_refusal(
                deps.store, record, run, user, deps.approvers, answer
            ),
        )

    def close_command(self, ack: Ack, command: dict[str, Any]) -> None:
        """`/close [YYYY-MM]`: check the period, create the run, ack; the thread opens after."""
        text = (command.get("text") or "").strip()
        if len(text) > MAX_COMMAND_TEXT:
            ack(response_type="ephemeral", text=f"That is not a period.\n{USAGE}")
            return
        try:
            period = (
                close_data.check_period(text)
                if text
                else close_data.latest_period(self.deps.data_dir)
            )
            close_data.require_period(period, self.deps.data_dir)  # the files are checked in step 1
        except CloseBotError as e:
            ack(response_type="ephemeral", text=f"{e}\n{USAGE}")
            return
        run = None
        try:
            with self.store.quick(), self.store.write():  # one transaction: the run, leased
                run = self.store.create_run(
                    period=period,
                    mode="slack",
                    started_by=command["user_id"],
                    model=self.work.loop.model.name,
                    channel=command["channel_id"],
                )
                self.work.hold(run.id)  # leased from its first instruction to its last
        except StorageError as e:
            if run is not None:  # nothing was written: neither is its lease
                self.work.let_go(run.id)
            ack(response_type="ephemeral", text=_storage(e))
            return
        ack(
            response_type="ephemeral",
            text=f"Starting the {close_data.period_label(period)} close (run `{run.id}`); its thread opens in a moment.",
        )
        self.work.start_close(run.id, response_url=command.get("response_url"), held=True)

    def _notify(
        self,
        channel: str,
        user: str,
        thread_ts: str | None,
        text: str,
        people: tuple[str, ...] = (),
    ) -> None:
        presenter = self.work.presenter
        self.work.runner.side(
            lambda: presenter.ephemeral(
                channel=channel, user=user, thread_ts=thread_ts, text=text, people=people
            )
        )

    def _refused(self, e: NotAuthorizedError, what: str) -> tuple[str, tuple[str, ...]]:
        if e.reason:  # a control refused this answer (say, the second approver must differ)
            return f"{e.reason}; nothing was changed.", (e.started_by or "", *self.deps.approvers)
        starter = (
            f"<@{e.started_by}> (who started this close)"
            if e.started_by
            else "the person who started this close"
        )
        return f"Only {starter} or an approver can {what}; nothing was changed.", (
            e.started_by or "",
        )

    def _settle(self, ack: Ack, body: dict[str, Any], *, cancel: bool) -> None:
        """Submit or Cancel: authorize, read and check the form, claim atomically, ack, resume."""
        user, channel, thread_ts = _who(body)
        actions = body.get("actions") or []
        if not user or not actions or not isinstance(actions[0], dict):
            log.warning(
                "ignored a %s payload with no user or no action", "cancel" if cancel else "submit"
            )
            ack()
            return
        question_id = str(actions[0].get("value") or "")
        values = (body.get("state") or {}).get("values") or {}
        # A form an earlier release posted has no "Why" box: its answer is taken without one
        # (an override could never be recorded otherwise), and recorded as such.
        why_box = blocks.has_why_box((body.get("message") or {}).get("blocks"))
        try:
            with self.store.quick():
                record = self.answers.settle(
                    question_id,
                    user=user,
                    source="user",
                    read=None if cancel else (lambda ask: blocks.read_form(ask, values)),
                    rationale=blocks.read_rationale(values) if isinstance(values, dict) else None,
                    require_rationale=why_box,
                    evidence=None if why_box else {"form": NO_WHY_BOX},
                )
        except NotFoundError:
            ack()
            self._notify(
                channel, user, thread_ts, "I don't know this form any more; nothing was changed."
            )
            return
        except NotAuthorizedError as e:
            ack()
            text, people = self._refused(e, "answer this")
            self._notify(channel, user, thread_ts, text, people)
            return
        except (AnswerError, blocks.FormError) as e:
            ack()
            self._notify(
                channel, user, thread_ts, f"Not submitted: {e}. Your choices are still in the form."
            )
            return
        except AlreadyAnsweredError:
            ack()
            self._notify(channel, user, thread_ts, *_already(self.store.question(question_id)))
            return
        except StorageError as e:
            ack()
            self._notify(channel, user, thread_ts, _storage(e))
            return
        ack()
        self.work.answered(record.run_id, question_id)

    def submit(self, ack: Ack, body: dict[str, Any]) -> None:
        self._settle(ack, body, cancel=False)

    def cancel(self, ack: Ack, body: dict[str, Any]) -> None:
        self._settle(ack, body, cancel=True)

    def _control(self, ack: Ack, body: dict[str, Any], *, what: str) -> Run | None:
        """Stop and Retry: the run of the button, if the person may steer it (else a notice)."""
        ack()
        user, channel, thread_ts = _who(body)
        actions = body.get("actions") or []
        if not user or not actions or not isinstance(actions[0], dict):
            return None
        try:
            with self.store.quick():
                run = self.store.run(str(actions[0].get("value") or ""))
                self.answers.authorize(run, user, action=what, detail={})
        except NotFoundError:
            self._notify(channel, user, thread_ts, "I don't know this close; nothing was changed.")
            return None
        except NotAuthorizedError as e:
            self._notify(channel, user, thread_ts, *self._refused(e, f"{what} this close"))
            return None
        except StorageError as e:
            self._notify(channel, user, thread_ts, _storage(e))
            return None
        return run

    def stop(self, ack: Ack, body: dict[str, Any]) -> None:
        run = self._control(ack, body, what="stop")
        if run is None:
            return
        user, channel, thread_ts = _who(body)
        if run.status not in ("running", "waiting"):
            self._notify(channel, user, thread_ts, f"This close is already {status_word(run)}.")
            return
        try:
            with self.store.quick():
                self.work.stop(run.id, by=user)
        except StorageError as e:
            self._notify(channel, user, thread_ts, _storage(e))

    def retry(self, ack: Ack, body: dict[str, Any]) -> None:
        run = self._control(ack, body, what="retry")
        if run is None:
            return
        user, channel, thread_ts = _who(body)
        if run.status != "failed":
            self._notify(
                channel, user, thread_ts, f"Nothing to retry: this close is {status_word(run)}."
            )
            return
        self.work.retry(run.id)

    def menu_options(self, ack: Ack, body: dict[str, Any]) -> None:
        """Options of a large question's external select, searched from the store."""
        container = body.get("container") or {}
        try:
            with self.store.quick():
                record = self.store.question_for_message(
                    channel=str(container.get("channel_id", "")),
                    message_ts=str(container.get("message_ts", "")),
                )
        except StorageError:
            ack(options=[])
            return
        parsed = blocks.parse_block_id(body.get("block_id", ""))
        if record is None or parsed is None or not 1 <= parsed[1] <= len(record.questions):
            ack(options=[])
            return
        question = ask_of(record).questions[parsed[1] - 1]
        ack(options=blocks.search_options(question, body.get("value") or ""))

    def any_other_action(self, ack: Ack) -> None:
        """Radio buttons, selects and the like need an ack and nothing more."""
        ack()

    def mention(
        self, ack: Ack, event: dict[str, Any], body: dict[str, Any], context: BoltContext
    ) -> None:
        ack()
        self._conversation(event, body, context, mentioned=True)

    def message(
        self, ack: Ack, event: dict[str, Any], body: dict[str, Any], context: BoltContext
    ) -> None:
        ack()
        if event.get("bot_id") or event.get("subtype") or not event.get("thread_ts"):
            return  # bots (ourselves included), edits, joins, and messages outside threads
        if context.bot_user_id and f"<@{context.bot_user_id}>" in (event.get("text") or ""):
            return  # the app_mention event carries this one
        self._conversation(event, body, context, mentioned=False)

    def _conversation(
        self, event: dict[str, Any], body: dict[str, Any], context: BoltContext, *, mentioned: bool
    ) -> None:
        """A person wrote to the bot: continue the run of that thread, or say how to start one."""
        thread_ts = event.get("thread_ts")
        channel = str(event.get("channel", ""))
        user = str(event.get("user") or "")
        text = re.sub(rf"<@{context.bot_user_id}>\s*", "", str(event.get("text") or "")).strip()
        try:
            with self.store.quick():
                if not self.store.first_sighting(
                    str(body.get("event_id") or f"{channel}:{event.get('ts')}")
                ):
                    return  # a Slack retry of an event already handled
                run = (
                    self.store.run_for_thread(channel=channel, thread_ts=str(thread_ts))
                    if thread_ts
                    else None
                )
                if run is None:
                    if mentioned:
                        presenter = self.work.presenter
                        self.work.runner.side(
                            lambda: presenter.reply(
                                channel=channel, thread_ts=event.get("ts"), text=f"Hi! {USAGE}"
                            )
                        )
                    return
                self.answers.authorize(run, user, action="steer", detail={"text": text[:200]})
                self.work.message(run.id, user=user or None, text=text or "(empty message)")
        except NotAuthorizedError as e:
            self._notify(channel, user, thread_ts, *self._refused(e, "steer it"))
        except StorageError as e:
            self._notify(
                channel,
                user,
                thread_ts,
                "I could not read your message (the database is busy or read-only); please send it again in a moment."
                if isinstance(e, BusyError)
                else DB_DOWN,
            )


def _already(record: QuestionRecord) -> tuple[str, tuple[str, ...]]:
    who = f" by <@{record.answered_by}>" if record.answered_by else ""
    return f"This question was already {record.status}{who}; nothing was changed.", (
        record.answered_by or "",
    )


def status_word(run: Run) -> str:
    return {"done": "finished", "failed": "stopped by an error", "cancelled": "stopped"}.get(
        run.status, run.status
    )

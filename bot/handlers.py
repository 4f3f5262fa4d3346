"""Bolt listeners: parse, authorize, claim, ack — then hand the work to the runner.

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
from bot.close import data as close_data
from bot.close.controls import approval_refusal
from bot.errors import AlreadyAnsweredError, AnswerError, CloseBotError, NotFoundError
from bot.questions import answer_payload, check_rationale
from bot.runner import Runner
from bot.store import QuestionRecord, Store

log = logging.getLogger(__name__)

USAGE = "Usage: `/close [YYYY-MM]` — for example `/close 2026-10`. Without a period I close the latest one with data."


@dataclass(frozen=True)
class Deps:
    store: Store
    runner: Runner
    approvers: frozenset[str]
    data_dir: Path | None = None


def register(app: App, deps: Deps) -> None:
    """Attach every listener to `app`."""
    h = Listeners(deps)
    app.command("/close")(h.close_command)
    app.action(blocks.SUBMIT_ACTION)(h.submit)
    app.action(blocks.CANCEL_ACTION)(h.cancel)
    app.options(blocks.ANSWER_ACTION)(h.menu_options)
    app.action(re.compile(".*"))(h.any_other_action)  # after the specific ones: first match wins
    app.event("app_mention")(h.mention)
    app.event("message")(h.message)


class Listeners:
    """The listeners, as plain methods over the store and the runner."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.store = deps.store
        self.runner = deps.runner

    def close_command(self, ack: Ack, command: dict[str, Any]) -> None:
        """`/close [YYYY-MM]`: check the period, create the run, ack; the runner opens the thread."""
        text = (command.get("text") or "").strip()
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
        run = self.store.create_run(
            period=period,
            mode="slack",
            started_by=command["user_id"],
            model=self.runner.loop.model.name,
            channel=command["channel_id"],
        )
        ack(
            response_type="ephemeral",
            text=f"Starting the {close_data.period_label(period)} close (run `{run.id}`) — follow it in the thread.",
        )
        self.runner.start_close(run.id)

    def _notify(
        self,
        channel: str,
        user: str,
        thread_ts: str | None,
        text: str,
        people: tuple[str | None, ...] = (),
    ) -> None:
        presenter = self.runner.presenter
        self.runner.side(
            lambda: presenter.ephemeral(
                channel=channel, user=user, thread_ts=thread_ts, text=text, people=people
            )
        )

    def _settle(self, ack: Ack, body: dict[str, Any], *, cancel: bool) -> None:
        """Submit or Cancel: authorize, read and check the form, claim atomically, ack, resume."""
        store = self.store
        user = (body.get("user") or {}).get("id")
        actions = body.get("actions") or []
        if not user or not actions:
            log.warning(
                "ignored a %s payload with no user or no action", "cancel" if cancel else "submit"
            )
            ack()
            return
        container = body.get("container") or {}
        channel = (body.get("channel") or {}).get("id") or container.get("channel_id", "")
        thread_ts = container.get("thread_ts")
        question_id = str(actions[0].get("value") or "")
        try:
            record = store.question(question_id)
        except NotFoundError:
            ack()
            self._notify(
                channel, user, thread_ts, "I don't know this form any more; nothing was changed."
            )
            return
        if record.status != "pending":
            ack()
            self._notify(channel, user, thread_ts, _already(record), (record.answered_by,))
            return
        run = store.run(record.run_id)
        if user != run.started_by and user not in self.deps.approvers:
            store.audit(
                run_id=run.id,
                kind="answer_refused",
                actor=user,
                detail={"question_id": question_id, "reason": "not authorized"},
            )
            ack()
            self._notify(
                channel,
                user,
                thread_ts,
                f"Only <@{run.started_by}> (who started this close) or an approver can answer this; nothing was changed.",
                (run.started_by,),
            )
            return
        try:
            if cancel:
                store.cancel_question(question_id, cancelled_by=user, source="user")
            else:
                ask = ask_of(record)
                values = (body.get("state") or {}).get("values") or {}
                responses = blocks.read_form(ask, values)
                answer = answer_payload(ask, responses)
                rationale = blocks.read_rationale(values)
                overridden = check_rationale(ask, responses, rationale)
                refusal = approval_refusal(store, record, run, user, self.deps.approvers, answer)
                if refusal:
                    store.audit(
                        run_id=run.id,
                        kind="answer_refused",
                        actor=user,
                        detail={"question_id": question_id, "reason": refusal},
                    )
                    ack()
                    self._notify(channel, user, thread_ts, f"{refusal}; nothing was changed.")
                    return
                store.claim_answer(
                    question_id,
                    answer=answer,
                    answered_by=user,
                    source="user",
                    rationale=rationale,
                    overridden=bool(overridden),
                )
        except (AnswerError, blocks.FormError) as e:
            ack()
            self._notify(
                channel, user, thread_ts, f"Not submitted: {e}. Your choices are still in the form."
            )
            return
        except AlreadyAnsweredError:
            ack()
            settled = store.question(question_id)
            self._notify(channel, user, thread_ts, _already(settled), (settled.answered_by,))
            return
        ack()
        self.runner.answered(run.id, question_id)

    def submit(self, ack: Ack, body: dict[str, Any]) -> None:
        self._settle(ack, body, cancel=False)

    def cancel(self, ack: Ack, body: dict[str, Any]) -> None:
        self._settle(ack, body, cancel=True)

    def menu_options(self, ack: Ack, body: dict[str, Any]) -> None:
        """Options of a large question's external select, searched from the store."""
        container = body.get("container") or {}
        record = self.store.question_for_message(
            channel=container.get("channel_id", ""), message_ts=container.get("message_ts", "")
        )
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
        if not self.store.first_sighting(
            body.get("event_id") or f"{event.get('channel')}:{event.get('ts')}"
        ):
            return  # a Slack retry of an event already handled
        thread_ts = event.get("thread_ts")
        channel = event.get("channel", "")
        text = re.sub(rf"<@{context.bot_user_id}>\s*", "", event.get("text") or "").strip()
        run = self.store.run_for_thread(channel=channel, thread_ts=thread_ts) if thread_ts else None
        if run is None:
            if mentioned:
                presenter = self.runner.presenter
                self.runner.side(
                    lambda: presenter.reply(
                        channel=channel, thread_ts=event.get("ts"), text=f"Hi! {USAGE}"
                    )
                )
            return
        self.runner.message(run.id, user=event.get("user"), text=text or "(empty message)")


def _already(record: QuestionRecord) -> str:
    who = f" by {blocks.person(record.answered_by)}" if record.answered_by else ""
    return f"This question was already {record.status}{who}; nothing was changed."

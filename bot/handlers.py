"""Bolt listeners: parse, authorize, claim, ack — then hand the work to the runner.

No listener runs the agent or waits on a Web API call before it acks: with
process_before_response=True the HTTP answer leaves when the listener returns.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from slack_bolt import Ack, App, BoltContext

from bot import blocks
from bot.agent_loop import ask_of
from bot.close import data as close_data
from bot.errors import AlreadyAnsweredError, AnswerError, CloseBotError, NotFoundError
from bot.questions import answer_payload
from bot.runner import Runner
from bot.store import QuestionRecord, Store

log = logging.getLogger(__name__)

USAGE = "Usage: `/close [YYYY-MM]` — for example `/close 2026-10`. Without a period I close the latest one with data."


@dataclass(frozen=True)
class Deps:
    store: Store
    runner: Runner
    approvers: frozenset[str]
    data_dir: Any = None


def register(app: App, deps: Deps) -> None:
    """Attach every listener to `app`."""
    store, runner = deps.store, deps.runner

    @app.command("/close")
    def close_command(ack: Ack, command: dict[str, Any]) -> None:
        text = (command.get("text") or "").strip()
        try:
            period = (
                close_data.check_period(text) if text else close_data.latest_period(deps.data_dir)
            )
            close_data.load(period, deps.data_dir)
        except CloseBotError as e:
            ack(response_type="ephemeral", text=f"{e}\n{USAGE}")
            return
        run = store.create_run(
            period=period,
            mode="slack",
            started_by=command["user_id"],
            model=runner.loop.model.name,
            channel=command["channel_id"],
        )
        ack(
            response_type="ephemeral",
            text=f"Starting the {close_data.period_label(period)} close (run `{run.id}`) — follow it in the thread.",
        )
        runner.start_close(run.id)

    def notify(channel: str, user: str, thread_ts: str | None, text: str) -> None:
        runner.side(
            lambda: runner.presenter.ephemeral(
                channel=channel, user=user, thread_ts=thread_ts, text=text
            )
        )

    def settle(ack: Ack, body: dict[str, Any], *, cancel: bool) -> None:
        user = body["user"]["id"]
        channel = (body.get("channel") or {}).get("id") or body.get("container", {}).get(
            "channel_id", ""
        )
        thread_ts = body.get("container", {}).get("thread_ts")
        question_id = body["actions"][0].get("value", "")
        try:
            record = store.question(question_id)
        except NotFoundError:
            ack()
            notify(
                channel, user, thread_ts, "I don't know this form any more; nothing was changed."
            )
            return
        if record.status != "pending":
            ack()
            notify(channel, user, thread_ts, _already(record))
            return
        run = store.run(record.run_id)
        if user != run.started_by and user not in deps.approvers:
            store.audit(
                run_id=run.id,
                kind="answer_refused",
                actor=user,
                detail={"question_id": question_id, "reason": "not authorized"},
            )
            ack()
            notify(
                channel,
                user,
                thread_ts,
                f"Only <@{run.started_by}> (who started this close) or an approver can answer this; nothing was changed.",
            )
            return
        try:
            if cancel:
                store.cancel_question(question_id, cancelled_by=user, source="user")
            else:
                ask = ask_of(record)
                responses = blocks.read_form(ask, body.get("state", {}).get("values", {}))
                store.claim_answer(
                    question_id,
                    answer=answer_payload(ask, responses),
                    answered_by=user,
                    source="user",
                )
        except (AnswerError, blocks.FormError) as e:
            ack()
            notify(
                channel, user, thread_ts, f"Not submitted: {e}. Your choices are still in the form."
            )
            return
        except AlreadyAnsweredError:
            ack()
            notify(channel, user, thread_ts, _already(store.question(question_id)))
            return
        ack()
        runner.answered(run.id, question_id)

    @app.action(blocks.SUBMIT_ACTION)
    def submit(ack: Ack, body: dict[str, Any]) -> None:
        settle(ack, body, cancel=False)

    @app.action(blocks.CANCEL_ACTION)
    def cancel(ack: Ack, body: dict[str, Any]) -> None:
        settle(ack, body, cancel=True)

    @app.options(blocks.ANSWER_ACTION)
    def menu_options(ack: Ack, body: dict[str, Any]) -> None:
        """Options of a large question's external select, searched from the store."""
        container = body.get("container") or {}
        record = store.question_for_message(
            channel=container.get("channel_id", ""), message_ts=container.get("message_ts", "")
        )
        parsed = blocks.parse_block_id(body.get("block_id", ""))
        if record is None or parsed is None or not 1 <= parsed[1] <= len(record.questions):
            ack(options=[])
            return
        question = ask_of(record).questions[parsed[1] - 1]
        ack(options=blocks.search_options(question, body.get("value") or ""))

    @app.action(re.compile(".*"))
    def any_other_action(ack: Ack) -> None:
        ack()  # radio buttons, selects and the like need an ack and nothing more

    def conversation(
        event: dict[str, Any], body: dict[str, Any], context: BoltContext, *, mentioned: bool
    ) -> None:
        if not store.first_sighting(
            body.get("event_id") or f"{event.get('channel')}:{event.get('ts')}"
        ):
            return  # a Slack retry of an event already handled
        thread_ts = event.get("thread_ts")
        channel = event.get("channel", "")
        text = re.sub(rf"<@{context.bot_user_id}>\s*", "", event.get("text") or "").strip()
        run = store.run_for_thread(channel=channel, thread_ts=thread_ts) if thread_ts else None
        if run is None:
            if mentioned:
                runner.side(
                    lambda: runner.presenter.reply(
                        channel=channel, thread_ts=event.get("ts"), text=f"Hi! {USAGE}"
                    )
                )
            return
        runner.message(run.id, user=event.get("user"), text=text or "(empty message)")

    @app.event("app_mention")
    def mention(
        ack: Ack, event: dict[str, Any], body: dict[str, Any], context: BoltContext
    ) -> None:
        ack()
        conversation(event, body, context, mentioned=True)

    @app.event("message")
    def message(
        ack: Ack, event: dict[str, Any], body: dict[str, Any], context: BoltContext
    ) -> None:
        ack()
        if event.get("bot_id") or event.get("subtype") or not event.get("thread_ts"):
            return  # bots (ourselves included), edits, joins, and messages outside threads
        if context.bot_user_id and f"<@{context.bot_user_id}>" in (event.get("text") or ""):
            return  # the app_mention event carries this one
        conversation(event, body, context, mentioned=False)


def _already(record: QuestionRecord) -> str:
    by = record.answered_by or ""
    who = (
        f" by <@{by}>"
        if re.match(r"^[UW][A-Z0-9]+$", by)
        else (f" by {blocks.escape(by)}" if by else "")
    )
    return f"This question was already {record.status}{who}; nothing was changed."

"""A large question's external select: its options, searched from the store."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App

from bot import blocks
from bot.agent_loop import ask_of
from bot.core.errors import StorageError
from bot.slack.listeners.shared import Deps, bind


def register(app: App, deps: Deps) -> None:
    app.options(blocks.ANSWER_ACTION)(bind(menu_options, deps))


def menu_options(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """Options of a large question's external select, searched from the store."""
    container = body.get("container") or {}
    try:
        with deps.store.quick():
            record = deps.store.questions.for_message(
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

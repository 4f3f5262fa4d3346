"""The assistant pane, through Bolt's Assistant middleware: its thread's start (suggested
prompts), context changes (acknowledged; closebot keeps no pane context) and the person's
messages (a close's own thread, or the DM's answers)."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App, Assistant, BoltContext

from bot.slack.listeners import events, home
from bot.slack.listeners.shared import Deps, bind


def register(app: App, deps: Deps) -> None:
    assistant = Assistant()
    assistant.thread_started(bind(assistant_started, deps))
    assistant.thread_context_changed(assistant_context_changed)
    assistant.user_message(bind(assistant_message, deps))
    app.use(assistant)


def assistant_started(deps: Deps, ack: Ack, payload: dict[str, Any]) -> None:
    ack()
    thread = payload.get("assistant_thread") or {}
    channel, thread_ts, desk = thread.get("channel_id"), thread.get("thread_ts"), deps.desk
    if channel and thread_ts and desk is not None:
        deps.work.runner.side(lambda: desk.suggest(channel=channel, thread_ts=thread_ts))


def assistant_context_changed(ack: Ack) -> None:
    ack()  # the pane's channel context: closebot's answers do not depend on it


def assistant_message(
    deps: Deps, ack: Ack, event: dict[str, Any], body: dict[str, Any], context: BoltContext
) -> None:
    ack()
    if events.run_thread(deps, event):  # a close started from the pane: its own thread
        events.conversation(deps, event, body, context, mentioned=False)
        return
    home.dm(deps, event, body)

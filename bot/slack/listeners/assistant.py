"""The assistant pane, through Bolt's Assistant middleware: its thread's start (acknowledged;
the suggested prompts go on the Messages tab's open, listeners/home.py), context changes (acknowledged; closebot keeps no pane context) and the person's
messages (a close's own thread, or the DM's answers)."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App, Assistant, BoltContext

from bot.slack.listeners import events, home
from bot.slack.listeners.shared import Deps, bind


def register(app: App, deps: Deps) -> None:
    assistant = Assistant()
    assistant.thread_started(assistant_started)
    assistant.thread_context_changed(assistant_context_changed)
    assistant.user_message(bind(assistant_message, deps))
    app.use(assistant)


def assistant_started(ack: Ack) -> None:
    """Acknowledged only: under `agent_view` (manifest.yml) prompts set with the thread's
    thread_ts are silently dropped by Slack; they are set when the Messages tab opens
    (`app_home_opened`, tab "messages": listeners/home.py)."""
    ack()


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

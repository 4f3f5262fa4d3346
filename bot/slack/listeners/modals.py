"""A decision card's two buttons beside Submit: Details opens the card's detail in a modal
(views.open with the click's trigger_id, which Slack honours for 3 seconds, once:
docs.slack.dev/surfaces/modals#opening), and Reassign ("Change owners or dates") redraws the card with
its pickers. Neither answers or changes anything, so anyone who can see the card may use them."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App
from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.core.errors import CloseBotError
from bot.slack.listeners.shared import Deps, bind, notify, who

log = logging.getLogger(__name__)


def register(app: App, deps: Deps) -> None:
    app.action(blocks.DETAILS_ACTION)(bind(details, deps))
    app.action(blocks.EXPAND_ACTION)(bind(expand, deps))


def _question_id(body: dict[str, Any]) -> str:
    actions = body.get("actions") or []
    first = actions[0] if actions and isinstance(actions[0], dict) else {}
    return str(first.get("value") or "")


def details(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """Details: ack, then open the modal at once on the fast pool (the trigger lasts 3 s)."""
    ack()
    question_id, trigger_id = _question_id(body), str(body.get("trigger_id") or "")
    user, channel, thread_ts = who(body)
    presenter = deps.work.presenter
    if not question_id or not trigger_id:
        return

    def open_() -> None:
        try:
            view = presenter.form_details(question_id)
            presenter.messages.client.views_open(trigger_id=trigger_id, view=view)
        except (CloseBotError, SlackApiError) as e:
            log.warning("question %s: details not opened: %s", question_id, e)
            notify(deps, channel, user, thread_ts, "The details could not be opened; try again.")

    deps.work.runner.fast(open_)


def expand(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """Change owners or dates: the card is redrawn with each owner's and due date's picker."""
    ack()
    question_id = _question_id(body)
    if question_id:
        presenter = deps.work.presenter
        deps.work.runner.fast(lambda: presenter.expand_form(question_id))

"""Settings in Slack: the Home tab's "Change settings" opens the modal (views.open with the
click's trigger_id, honoured for 3 seconds, once: docs.slack.dev/surfaces/modals#opening),
and its Save (view_submission) is checked and stored before the ack — a refused value is
answered in the modal itself (`response_action: errors`, docs.slack.dev/surfaces/modals
#displaying_errors). Who may is asked again on Save: a modal proves nothing."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import Ack, App
from slack_sdk.errors import SlackApiError

from bot.core.errors import StorageError
from bot.slack.listeners.shared import Deps, bind
from bot.slack.settings import CALLBACK_ID, OPEN_ACTION

log = logging.getLogger(__name__)


def register(app: App, deps: Deps) -> None:
    app.action(OPEN_ACTION)(bind(open_settings, deps))
    app.view(CALLBACK_ID)(bind(save_settings, deps))


def open_settings(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    ack()
    settings, trigger = deps.settings, str(body.get("trigger_id") or "")
    user = str((body.get("user") or {}).get("id") or "")
    if settings is None or not trigger or not user:
        return

    def open_() -> None:
        try:
            if not settings.may_change(user):
                return  # the button is shown to admins only; a forged click opens nothing
            settings.client.views_open(trigger_id=trigger, view=settings.modal(settings.team()))
        except SlackApiError as e:
            log.warning("settings not opened for %s: %s", user, e.response.get("error"))

    deps.work.runner.fast(open_)


def save_settings(deps: Deps, ack: Ack, body: dict[str, Any], view: dict[str, Any]) -> None:
    settings = deps.settings
    user = str((body.get("user") or {}).get("id") or "")
    if settings is None or not user:
        ack()
        return
    values = ((view.get("state") or {}).get("values")) or {}
    try:
        errors = settings.save(user, str(view.get("private_metadata") or ""), values)
    except (StorageError, SlackApiError) as e:
        log.warning("settings not saved for %s: %s", user, e)
        errors = {"approvers": "The settings could not be saved just now; try again."}
    if errors:
        ack(response_action="errors", errors=errors)
    else:
        ack()

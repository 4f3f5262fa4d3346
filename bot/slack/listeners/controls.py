"""A close's own buttons: Stop and Retry on its status, Decide (a question put off comes
back as a fresh form) and Change a decision on its message in the channel; and Slack's own
Stop on the close's streamed plan (`agent_session_stopped`), which stops it as Stop does."""

from __future__ import annotations

import re
from typing import Any

from slack_bolt import Ack, App

from bot import blocks
from bot.close import ask_change
from bot.core.errors import (
    AlreadyAnsweredError,
    CloseBotError,
    NotAuthorizedError,
    NotFoundError,
    StorageError,
)
from bot.slack.close_start import storage_text
from bot.slack.listeners.shared import Deps, bind, notify, refused, status_word, who
from bot.store import Run


def register(app: App, deps: Deps) -> None:
    app.action(blocks.STOP_ACTION)(bind(stop, deps))
    app.action(blocks.RETRY_ACTION)(bind(retry, deps))
    app.action(re.compile(rf"^{blocks.DECIDE_ACTION}(_\d+)?$"))(bind(decide, deps))
    app.action(blocks.CHANGE_ACTION)(bind(change, deps))
    app.event("agent_session_stopped")(bind(slack_stop, deps))


def decide(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """Decide on the close's message: a question put off comes back as a fresh form."""
    ack()
    user, channel, thread_ts = who(body)
    actions = body.get("actions") or []
    if not user or not actions or not isinstance(actions[0], dict):
        return
    question_id = str(actions[0].get("value") or "")
    store = deps.store
    try:
        with store.quick():
            record = store.questions.get(question_id)
            run = store.runs.get(record.run_id)
            deps.answers.authorize(run, user, action="decide", detail={"question_id": question_id})
            if record.status != "deferred":
                notify(
                    deps,
                    channel,
                    user,
                    thread_ts,
                    f"This question is already {record.status}; nothing was changed.",
                )
                return
            if not deps.work.loop.parked(run.id):
                notify(
                    deps,
                    channel,
                    user,
                    thread_ts,
                    "The close is still working; Decide brings this question back once it waits on you.",
                )
                return
            store.questions.reopen(question_id, by=user)
    except NotFoundError:
        notify(deps, channel, user, thread_ts, "I don't know this question; nothing was changed.")
        return
    except NotAuthorizedError as e:
        notify(deps, channel, user, thread_ts, *refused(deps, e, "decide it"))
        return
    except AlreadyAnsweredError as e:
        notify(deps, channel, user, thread_ts, f"{e}; nothing was changed.")
        return
    except StorageError as e:
        notify(deps, channel, user, thread_ts, storage_text(e))
        return
    deps.work.ask_again(run.id, question_id)


def change(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """'Change a decision': the chosen decision is asked again; a pending approval is
    withdrawn, and the batch is drafted again once it is answered."""
    ack()
    user, channel, thread_ts = who(body)
    actions = body.get("actions") or []
    if not user or not actions or not isinstance(actions[0], dict):
        return
    value = str((actions[0].get("selected_option") or {}).get("value") or "")
    question_id = value.partition(":")[0]
    store = deps.store
    try:
        with store.quick():
            run = store.runs.get(store.questions.get(question_id).run_id)
            deps.answers.authorize(run, user, action="change", detail={"decision": value})
            record, withdrawn = ask_change(store, run.id, value, by=user)
    except NotFoundError:
        notify(deps, channel, user, thread_ts, "I don't know this decision; nothing was changed.")
        return
    except NotAuthorizedError as e:
        notify(deps, channel, user, thread_ts, *refused(deps, e, "change its decisions"))
        return
    except CloseBotError as e:
        if isinstance(e, StorageError):
            notify(deps, channel, user, thread_ts, storage_text(e))
        else:
            notify(deps, channel, user, thread_ts, f"Not changed: {e}.")
        return
    deps.work.ask_again(run.id, record.id, withdrawn=withdrawn)


def _control(deps: Deps, ack: Ack, body: dict[str, Any], *, what: str) -> Run | None:
    """Stop and Retry: the run of the button, if the person may steer it (else a notice)."""
    ack()
    user, channel, thread_ts = who(body)
    actions = body.get("actions") or []
    if not user or not actions or not isinstance(actions[0], dict):
        return None
    try:
        with deps.store.quick():
            run = deps.store.runs.get(str(actions[0].get("value") or ""))
            deps.answers.authorize(run, user, action=what, detail={})
    except NotFoundError:
        notify(deps, channel, user, thread_ts, "I don't know this close; nothing was changed.")
        return None
    except NotAuthorizedError as e:
        notify(deps, channel, user, thread_ts, *refused(deps, e, f"{what} this close"))
        return None
    except StorageError as e:
        notify(deps, channel, user, thread_ts, storage_text(e))
        return None
    return run


def stop(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    run = _control(deps, ack, body, what="stop")
    if run is None:
        return
    user, channel, thread_ts = who(body)
    _stop(deps, run, user, channel, thread_ts)


def slack_stop(deps: Deps, ack: Ack, event: dict[str, Any]) -> None:
    """A person pressed Slack's own Stop while the close's plan streamed: Slack has stopped the
    stream (docs.slack.dev/reference/events/agent_session_stopped: "stop any in-progress work
    for the given channel and thread"). The close stops, by the same path as its Stop button
    and with the same check of who may stop it; the plan's next update finds the stream ended
    and mends it (bot/slack/presenter/status.py)."""
    ack()
    user, channel = str(event.get("user") or ""), str(event.get("channel") or "")
    thread_ts = event.get("thread_ts")
    if not (user and channel and thread_ts):
        return
    try:
        with deps.store.quick():
            run = deps.store.runs.for_thread(channel=channel, thread_ts=str(thread_ts))
            if run is None:
                return  # not a close's thread
            deps.answers.authorize(run, user, action="stop", detail={"by": "slack_stop"})
    except NotAuthorizedError as e:
        notify(deps, channel, user, thread_ts, *refused(deps, e, "stop this close"))
        return
    except StorageError as e:
        notify(deps, channel, user, thread_ts, storage_text(e))
        return
    _stop(deps, run, user, channel, thread_ts)


def _stop(deps: Deps, run: Run, user: str, channel: str, thread_ts: str | None) -> None:
    if run.status not in ("running", "waiting"):
        notify(deps, channel, user, thread_ts, f"This close is already {status_word(run)}.")
        return
    try:
        with deps.store.quick():
            deps.work.stop(run.id, by=user)
    except StorageError as e:
        notify(deps, channel, user, thread_ts, storage_text(e))


def retry(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    run = _control(deps, ack, body, what="retry")
    if run is None:
        return
    user, channel, thread_ts = who(body)
    if run.status != "failed":
        notify(
            deps, channel, user, thread_ts, f"Nothing to retry: this close is {status_word(run)}."
        )
        return
    deps.work.retry(run.id)

"""Messages and workspace events: a mention or a reply in a close's thread (it reaches the
run, or "status" / "what's open?" is answered to the asker alone), the `message` event's
routing (a dropped file, the DM, a thread), and a token taken back."""

from __future__ import annotations

import re
from typing import Any

from slack_bolt import Ack, App, BoltContext

from bot.close import Intent, intent
from bot.core.answers import may_steer
from bot.core.errors import BusyError, NotAuthorizedError, StorageError
from bot.slack.close_start import USAGE, storage_text
from bot.slack.listeners import files as file_listeners
from bot.slack.listeners import home
from bot.slack.listeners.shared import Deps, bind, notify, refused
from bot.store import Run

# Thread messages that reach the agent: plain replies, replies also sent to the channel, and
# files shared in the thread (their text and names; the files themselves are read elsewhere).
READ_SUBTYPES = (None, "thread_broadcast", "file_share")
ASKED_ANY_TIME = ("status", "waiting", "open", "decided")  # answered without the agent


def register(app: App, deps: Deps) -> None:
    app.event("app_mention")(bind(mention, deps))
    app.event("message")(bind(message, deps))
    app.event("tokens_revoked")(bind(tokens_revoked, deps))
    app.event("app_uninstalled")(bind(app_uninstalled, deps))


def mention(
    deps: Deps, ack: Ack, event: dict[str, Any], body: dict[str, Any], context: BoltContext
) -> None:
    ack()
    conversation(deps, event, body, context, mentioned=True)


def message(
    deps: Deps, ack: Ack, event: dict[str, Any], body: dict[str, Any], context: BoltContext
) -> None:
    ack()
    if event.get("subtype") == "file_share" and not event.get("bot_id"):
        for f in event.get("files") or []:
            if isinstance(f, dict) and f.get("id"):
                file_listeners.dropped(
                    deps,
                    str(f["id"]),
                    str(event.get("channel") or ""),
                    event.get("thread_ts"),
                    str(event.get("user") or ""),
                )
        if not (event.get("text") or "").strip():
            return  # a file alone: closebot answers it (bot/slack/files.py)
    if event.get("bot_id") or event.get("subtype") not in READ_SUBTYPES:
        return  # bots (ourselves included), edits, joins
    if event.get("channel_type") == "im" and not run_thread(deps, event):
        home.dm(deps, event, body)  # the DM with closebot (its Messages tab)
        return
    if not event.get("thread_ts"):
        return  # messages outside threads
    if context.bot_user_id and f"<@{context.bot_user_id}>" in (event.get("text") or ""):
        return  # the app_mention event carries this one
    conversation(deps, event, body, context, mentioned=False)


def run_thread(deps: Deps, event: dict[str, Any]) -> bool:
    """Whether the message is in a close's thread."""
    thread_ts = event.get("thread_ts")
    if not thread_ts:
        return False
    with deps.store.quick():
        return (
            deps.store.runs.for_thread(channel=str(event.get("channel")), thread_ts=thread_ts)
            is not None
        )


def conversation(
    deps: Deps,
    event: dict[str, Any],
    body: dict[str, Any],
    context: BoltContext,
    *,
    mentioned: bool,
) -> None:
    """A person wrote to the bot: continue the run of that thread, or say how to start one."""
    store, work = deps.store, deps.work
    thread_ts = event.get("thread_ts")
    channel = str(event.get("channel", ""))
    user = str(event.get("user") or "")
    text = re.sub(rf"<@{context.bot_user_id}>\s*", "", str(event.get("text") or "")).strip()
    files = [f for f in event.get("files") or [] if isinstance(f, dict)]
    if files:  # a file shared in the thread reaches the agent like any reply
        names = ", ".join(str(f.get("name") or f.get("title") or f.get("id")) for f in files)
        text = f"{text}\n(shared {len(files)} file{'s' if len(files) > 1 else ''}: {names})".strip()
    try:
        with store.quick():
            if not store.replay.first_sighting(
                str(body.get("event_id") or f"{channel}:{event.get('ts')}")
            ):
                return  # a Slack retry of an event already handled
            run = (
                store.runs.for_thread(channel=channel, thread_ts=str(thread_ts))
                if thread_ts
                else None
            )
            if run is None:
                if mentioned:
                    presenter = work.presenter
                    work.runner.side(
                        lambda: presenter.reply(
                            channel=channel,
                            # a mention inside a thread is answered in that thread
                            thread_ts=event.get("thread_ts") or event.get("ts"),
                            text=f"Hi! {USAGE}",
                        )
                    )
                return
            asked = intent(text)
            # a burst is answered once per person, thread and kind of answer (issue 31)
            thread = f"{channel}:{thread_ts}"

            def first(kind: str) -> bool:
                return deps.window.admit(run_id=run.id, thread=thread, user=user, kind=kind)

            if asked.kind in ASKED_ANY_TIME and deps.desk is not None:
                if first(asked.kind):
                    _asked(deps, asked, run, user=user, channel=channel, thread_ts=thread_ts)
                return  # answered privately, at once, form pending or not
            if not may_steer(run, user, deps.approvers) and not first("refused"):
                return  # refused, told and audited once for this burst already
            deps.answers.authorize(run, user, action="steer", detail={"text": text[:200]})
            work.message(
                run.id, user=user or None, text=text or "(empty message)", answer=first("kept")
            )
    except NotAuthorizedError as e:
        notify(deps, channel, user, thread_ts, *refused(deps, e, "steer it"))
    except StorageError as e:
        if (
            isinstance(e, BusyError)
            and thread_ts
            and not deps.window.admit(
                run_id=None, thread=f"{channel}:{thread_ts}", user=user, kind="busy"
            )
        ):
            return  # told once for this burst
        notify(
            deps,
            channel,
            user,
            thread_ts,
            "I could not read your message (the database is busy or read-only); please send it again in a moment."
            if isinstance(e, BusyError)
            else storage_text(e),
        )


def _asked(
    deps: Deps, asked: Intent, run: Run, *, user: str, channel: str, thread_ts: str | None
) -> None:
    """`status`, `what's open?`, `who decided X?` in a close's thread: answered to the
    asker alone, whatever the run is doing (the thread stays quiet)."""
    desk, presenter = deps.desk, deps.work.presenter
    assert desk is not None
    run_id = run.id

    def answer() -> None:
        text = (
            presenter.state_line(deps.store.runs.get(run_id))
            if asked.kind == "status"
            else desk.answer(asked, user)
        )
        desk.tell(
            channel=channel,
            thread_ts=thread_ts,
            user=user,
            # people by name: the answer is the asker's alone, and notifies nobody
            text=presenter.safe(text, run=run) if asked.kind == "status" else text,
        )

    deps.work.runner.side(answer)


def tokens_revoked(deps: Deps, ack: Ack, event: dict[str, Any]) -> None:
    """The workspace took back the bot's token: every run waits until a token works again."""
    ack()
    if "bot" in (event.get("tokens") or {}) or not event.get("tokens"):
        deps.work.runner.side(lambda: _pause(deps, "tokens_revoked"))


def app_uninstalled(deps: Deps, ack: Ack) -> None:
    ack()
    deps.work.runner.side(lambda: _pause(deps, "app_uninstalled"))


def _pause(deps: Deps, reason: str) -> None:
    deps.work.pause_workspace(reason)

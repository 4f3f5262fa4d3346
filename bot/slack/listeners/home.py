"""closebot outside a close's thread: the App Home's Home tab, and the DM (its Messages
tab, and the assistant pane's messages) — "close October" starts a close there (the one
start, bot/slack/close_start.py), anything else is answered by the desk."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App

from bot.close import Intent, intent
from bot.core.errors import StorageError
from bot.slack.blocks import period as period_blocks
from bot.slack.close_start import NO_CLOSE_CHANNEL, open_periods, storage_text
from bot.slack.listeners.shared import (
    DM_START_REFUSED,
    Deps,
    bind,
    may_start_from_dm,
    requester_team,
)


def register(app: App, deps: Deps) -> None:
    app.event("app_home_opened")(bind(home_opened, deps))


def home_opened(deps: Deps, ack: Ack, event: dict[str, Any]) -> None:
    """The App Home opened: the Home tab is published for the viewer; the Messages tab (the
    agent's chat, `agent_view`) gets its suggested prompts, set on the DM with no thread_ts
    (docs.slack.dev/ai/agent-entry-and-interaction; SLACK.md "Agent entry")."""
    ack()
    user, desk = str(event.get("user") or ""), deps.desk
    tab, channel = event.get("tab", "home"), str(event.get("channel") or "")
    if tab == "home" and user and desk is not None:
        deps.work.runner.side(lambda: desk.publish_home(user))
    elif tab == "messages" and channel and desk is not None:
        deps.work.runner.side(lambda: desk.suggest(channel=channel))


def dm(deps: Deps, event: dict[str, Any], body: dict[str, Any]) -> None:
    """A message to closebot in its DM or the assistant pane: start a close, or answer."""
    desk, user = deps.desk, str(event.get("user") or "")
    channel, thread_ts = str(event.get("channel") or ""), event.get("thread_ts")
    if desk is None or not user or not channel:
        return
    try:
        with deps.store.quick():
            if not deps.store.replay.first_sighting(
                str(body.get("event_id") or f"{channel}:{event.get('ts')}")
            ):
                return
    except StorageError:
        return
    asked = intent(str(event.get("text") or ""))
    if asked.kind == "close":
        close_from_dm(
            deps,
            asked,
            user=user,
            channel=channel,
            thread_ts=thread_ts,
            team=requester_team(body, event),
        )
        return
    team = requester_team(body, event)  # another team's person is shown no close (issue 31)
    deps.work.runner.side(
        lambda: desk.reply(
            channel=channel, thread_ts=thread_ts, user=user, text=desk.answer(asked, user, team)
        )
    )


def close_from_dm(
    deps: Deps,
    asked: Intent,
    *,
    user: str,
    channel: str,
    thread_ts: str | None,
    team: str | None = None,
) -> None:
    """ "close October": the /close flow from the DM; which period, when that is unclear.
    The close itself runs in the team's close channel (CloseStarter.team_channel)."""
    desk, runner = deps.desk, deps.work.runner
    assert desk is not None

    def say(text: str) -> None:
        desk.reply(channel=channel, thread_ts=thread_ts, user=user, text=text)

    def now(text: str | None) -> None:
        if text:
            runner.side(lambda: say(text))

    if not may_start_from_dm(deps, user, asked.arg or ""):
        now(DM_START_REFUSED)
        return

    period, periods = desk.desk.period_for(asked.arg)
    try:
        with deps.store.quick():
            open_ = [] if asked.arg else open_periods(deps.store, deps.data_dir)
    except StorageError as e:
        now(storage_text(e))
        return
    if period is None and len(open_) == 1:
        period = open_[0].period
    if period is None and len(open_) > 1:  # which one? a form, the earliest recommended
        runner.side(
            lambda: desk.post_blocks(
                channel=channel,
                thread_ts=thread_ts,
                text="Which period do you want to close?",
                blocks=period_blocks.which_period_form(open_),
            )
        )
        return
    if period is None:
        named = ", ".join(f"`close {p}`" for p in periods) or "none: add a period's files"
        now(f"Which period? Periods with data: {named}.")
        return
    # The close runs where its approvers can act: the team's close channel, never this DM
    # (approvers cannot see it, and the starter may not approve their own close).
    where = deps.starts.team_channel()
    if where is None:
        now(NO_CLOSE_CHANNEL.format(period=period))
        return
    deps.starts.start(
        period, user=user, channel=where, now=now, later=say, elsewhere=True, team=team
    )

"""`/close [YYYY-MM]` and its which-period form: which period is meant, then the one start
(bot/slack/close_start.py)."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App

from bot import blocks
from bot.blocks import outgoing
from bot.close import check_period, has_data, latest_period, period_label
from bot.core.errors import CloseBotError, StorageError
from bot.slack.blocks import period as period_blocks
from bot.slack.close_start import (
    NO_CLOSE_CHANNEL,
    USAGE,
    ack_now,
    open_periods,
    responder,
    storage_text,
)
from bot.slack.listeners.shared import (
    DM_START_REFUSED,
    Deps,
    bind,
    may_start_from_dm,
    requester_team,
)

MAX_COMMAND_TEXT = 40  # "/close 2026-10" needs 7; longer text is refused, never echoed


def register(app: App, deps: Deps) -> None:
    app.command("/close")(bind(close_command, deps))
    app.action(period_blocks.PERIOD_ACTION)(bind(period_picked, deps))


def close_command(deps: Deps, ack: Ack, command: dict[str, Any]) -> None:
    """`/close [YYYY-MM]`: check the period, claim it, ack; the thread opens after."""
    store, data_dir = deps.store, deps.data_dir
    text = (command.get("text") or "").strip()
    user, channel = str(command["user_id"]), str(command["channel_id"])
    response_url = command.get("response_url")
    if len(text) > MAX_COMMAND_TEXT:
        ack(response_type="ephemeral", text=f"That is not a period.\n{USAGE}")
        return
    try:
        with store.quick():
            if text:
                period = check_period(text)
            else:
                open_ = open_periods(store, data_dir)
                if len(open_) > 1:  # which one? the earliest not posted, recommended
                    ack(
                        response_type="ephemeral",
                        text="Which period do you want to close?",
                        blocks=period_blocks.which_period_form(open_),
                    )
                    return
                period = open_[0].period if open_ else latest_period(store, data_dir)
            waiting = not has_data(store, period, data_dir)
    except StorageError as e:
        ack(response_type="ephemeral", text=storage_text(e))
        return
    except CloseBotError as e:
        ack(response_type="ephemeral", text=f"{e}\n{USAGE}")
        return
    files = deps.files
    if waiting and files is not None:
        # no data yet: a thread for the period's files; the close starts when all are in
        ack(
            response_type="ephemeral",
            text=f"I have no data for {period_label(period)} yet: drop its files into the thread I'm opening.",
        )
        deps.work.runner.side(lambda: files.open_waiting(channel=channel, period=period, user=user))
        return
    if waiting:
        ack(response_type="ephemeral", text=f"No close data for {period}.\n{USAGE}")
        return
    # where the period's close is, when it is taken, follows through the response_url
    deps.starts.start(
        period,
        user=user,
        channel=channel,
        now=ack_now(ack),
        later=responder(response_url),
        response_url=response_url,
        team=requester_team(command),
    )


def period_picked(deps: Deps, ack: Ack, body: dict[str, Any]) -> None:
    """The which-period form's Submit: start the chosen period's close (or point to it)."""
    ack()
    user = str((body.get("user") or {}).get("id") or "")
    container = body.get("container") or {}
    channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
    response_url = body.get("response_url")
    url = response_url if isinstance(response_url, str) else None
    say = responder(url, replace=True)
    period = period_blocks.picked_period((body.get("state") or {}).get("values"))
    if not user or not channel or period is None:
        say("Pick a period, then Submit; nothing was started.")
        return
    try:
        with deps.store.quick():
            known = has_data(deps.store, period, deps.data_dir)
    except StorageError as e:
        say(outgoing(storage_text(e)))
        return
    if not known:
        say(f"No close data for {blocks.escape(period)}; nothing was started.")
        return

    def now(text: str | None) -> None:
        if text:
            say(outgoing(text))

    elsewhere = channel.startswith("D")  # the form was asked in the DM
    if elsewhere:  # the close runs where its approvers can act, started by someone allowed
        if not may_start_from_dm(deps, user, period):
            say(DM_START_REFUSED)
            return
        where = deps.starts.team_channel()
        if where is None:
            say(NO_CLOSE_CHANNEL.format(period=period))
            return
        channel = where
    deps.starts.start(
        period,
        user=user,
        channel=channel,
        now=now,
        later=say,
        response_url=url,
        elsewhere=elsewhere,
        team=requester_team(body),
    )

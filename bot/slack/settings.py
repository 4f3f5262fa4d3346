"""Settings in Slack (issue 32): closebot's Home tab shows a Settings section to workspace
admins and owners (users.info's is_admin / is_owner: docs.slack.dev/reference/objects/
user-object) and to the settings owners named at install (CLOSEBOT_SETTINGS_OWNERS). Its
button opens a modal (views.open) with the approvers (a multi_users_select), the approval
limit (a number_input), the finance channel (a conversations_select) and the data folder.
Saving checks each value as the environment's would be checked, stores what changed for the
workspace (`store.settings`, each change audited: who, old → new) and puts it into effect
for the next close (settings_apply.py). The environment's values stay the defaults.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.blocks import escape
from bot.core import tenancy
from bot.core.config import SLACK_SETTABLE, Settings
from bot.core.errors import ConfigError
from bot.core.identity import SLACK_USER_ID
from bot.slack.settings_apply import retarget
from bot.store import Store

log = logging.getLogger(__name__)

OPEN_ACTION = "closebot_settings_open"
CALLBACK_ID = "closebot_settings"
# the modal's input blocks, by the variable each sets
BLOCKS = {
    "CLOSEBOT_APPROVERS": "approvers",
    "CLOSEBOT_APPROVAL_LIMIT": "approval_limit",
    "CLOSEBOT_CLOSE_CHANNEL": "close_channel",
    "CLOSEBOT_DATA": "data_dir",
}
VALUE = "value"  # every input's action_id


class SlackSettings:
    """Who may change the settings, the Home tab's section, the modal, and saving it."""

    def __init__(
        self,
        *,
        client: WebClient,
        store: Store,
        defaults: Settings,
        parts: Iterable[Any] = (),
        on_change: Callable[[], None] | None = None,
        later: Callable[[Callable[[], None]], Any] | None = None,
        user_of: Callable[[str], dict[str, Any]] | None = None,
    ) -> None:
        self.client = client
        # users.info, shared with the names and teams (bot/slack/people.py: asked once a while)
        self.user_of = user_of or (lambda user: self.client.users_info(user=user).get("user") or {})
        self.store = store
        self.defaults = defaults  # the environment's
        self.parts = list(parts)  # what the running bot is made of (retargeted on a change)
        self.on_change = on_change  # e.g. the Home tabs republished
        # how a saved change is put into effect after the ack (the runner's fast pool)
        self.later = later or (lambda job: job())
        self.applied = defaults  # the settings the running bot's parts hold now
        self._own_team: str | None = None
        self._lock = threading.Lock()

    # -- whose and which ---------------------------------------------------------------

    def team(self) -> str:
        """The workspace the work in hand is for: the request's (many workspaces), else the
        bot token's own (auth.test, asked once)."""
        tenant = tenancy.current()
        if tenant is not None and tenant.team_id:
            return tenant.team_id
        with self._lock:
            if self._own_team is None:
                self._own_team = str(self.client.auth_test().get("team_id") or "")
            return self._own_team

    def current(self, team: str) -> Settings:
        """The workspace's settings: the environment's with what its admins set in Slack."""
        return self.store.settings.effective(team, self.defaults)

    def may_change(self, user: str) -> bool:
        """A settings owner named at install, or a workspace admin or owner (users.info,
        kept ten minutes)."""
        if user in self.defaults.settings_owners:
            return True
        try:
            person = self.user_of(user)
        except SlackApiError as e:
            log.warning("settings: who %s is not known (%s)", user, e.response.get("error"))
            return False
        return bool(
            person.get("is_admin") or person.get("is_owner") or person.get("is_primary_owner")
        )

    # -- taking effect -------------------------------------------------------------------

    def start(self) -> None:
        """At the bot's start: what its workspace set in Slack before, in effect (asks
        auth.test for the workspace only when something was set)."""
        if not self.defaults.many_workspaces and self.store.settings.any_set():
            self.apply(self.team())

    def apply(self, team: str) -> None:
        """Put the workspace's settings into the running bot's parts (one workspace per
        process; with many, each request reads its own through `current`)."""
        if self.defaults.many_workspaces:
            return
        new = self.current(team)
        with self._lock:
            changed = retarget(self.parts, self.applied, new)
            self.applied = new
        log.info("settings of %s in effect (%d part(s) updated)", team, changed)

    # -- the Home tab ---------------------------------------------------------------------

    def home_blocks(self, user: str) -> list[dict[str, Any]]:
        """The Settings section of `user`'s Home tab: nothing unless they may change them."""
        try:
            if not self.may_change(user):
                return []
            team = self.team()
        except SlackApiError as e:
            log.warning("settings: not shown to %s (%s)", user, e.response.get("error"))
            return []
        now = self.current(team)
        stored = self.store.settings.of(team)

        def source(var: str) -> str:
            return " _(set in Slack)_" if var in stored else ""

        approvers = sorted(a for a in now.approvers if SLACK_USER_ID.match(a))
        lines = [
            "*Approvers*: "
            + (
                ", ".join(f"<@{a}>" for a in approvers)
                or "none — whoever starts a close approves it"
            )
            + source("CLOSEBOT_APPROVERS"),
            f"*Approval limit*: ${now.approval_limit:,.2f} — an entry above it needs a second "
            "approver" + source("CLOSEBOT_APPROVAL_LIMIT"),
            "*Finance channel*: "
            + (f"<#{now.close_channel}>" if now.close_channel else "not set")
            + source("CLOSEBOT_CLOSE_CHANNEL"),
            "*Data folder*: "
            + (f"`{escape(str(now.data_dir))}`" if now.data_dir else "the shipped sample")
            + source("CLOSEBOT_DATA"),
        ]
        return [
            {"type": "divider"},
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": "*Settings*\n" + "\n".join(lines)},
                "accessory": {
                    "type": "button",
                    "action_id": OPEN_ACTION,
                    "text": blocks.plain("Change settings", 75),
                    "value": team,
                },
            },
            blocks.context(
                "Only workspace admins and the settings owners named at install see this. "
                "Every change is in the audit trail; unset, the environment's value applies."
            ),
        ]

    # -- the modal --------------------------------------------------------------------------

    def modal(self, team: str) -> dict[str, Any]:
        now = self.current(team)
        approvers = sorted(a for a in now.approvers if SLACK_USER_ID.match(a))
        users: dict[str, Any] = {"type": "multi_users_select", "action_id": VALUE}
        if approvers:
            users["initial_users"] = approvers
        channel: dict[str, Any] = {
            "type": "conversations_select",
            "action_id": VALUE,
            "filter": {"include": ["public", "private"], "exclude_bot_users": True},
        }
        if now.close_channel:
            channel["initial_conversation"] = now.close_channel
        folder: dict[str, Any] = {"type": "plain_text_input", "action_id": VALUE}
        if now.data_dir:
            folder["initial_value"] = str(now.data_dir)
        return {
            "type": "modal",
            "callback_id": CALLBACK_ID,
            "private_metadata": team,
            "title": blocks.plain("closebot settings", 24),
            "submit": blocks.plain("Save", 24),
            "close": blocks.plain("Cancel", 24),
            "blocks": [
                _input(
                    "approvers",
                    "Approvers",
                    users,
                    "Who approves posting a close (never the person who started it). Empty: "
                    "the CLOSEBOT_APPROVERS default.",
                ),
                _input(
                    "approval_limit",
                    "Approval limit (US$)",
                    {
                        "type": "number_input",
                        "action_id": VALUE,
                        "is_decimal_allowed": True,
                        "min_value": "0.01",
                        "initial_value": str(now.approval_limit),
                    },
                    "An entry above it needs a second, different approver.",
                    optional=False,
                ),
                _input(
                    "close_channel",
                    "Finance channel",
                    channel,
                    "Where a close started from closebot's DM runs; invite @closebot there.",
                ),
                _input(
                    "data_dir",
                    "Data folder",
                    folder,
                    "The folder on closebot's machine with one YYYY-MM folder per period. "
                    "Empty: the CLOSEBOT_DATA default.",
                ),
            ],
        }

    def save(self, user: str, team: str, values: dict[str, Any]) -> dict[str, str]:
        """A submitted modal: checked, stored and audited, put into effect. Slack's errors
        for the modal's blocks (block_id → message) when something is refused; {} when saved."""
        if team != self.team() or not self.may_change(user):
            return {"approvers": "Only a workspace admin can change closebot's settings."}
        stored, now = self.store.settings.of(team), self.current(team)
        shown = _as_variables(now)
        # a value left as the modal showed it is not a setting made in Slack: the
        # environment's default stays the default
        given = {
            var: value
            for var, value in submitted(values).items()
            if var in stored or not _same(var, value, shown[var])
        }
        try:
            self.defaults.with_overrides({**stored, **given})
        except ConfigError as e:
            var = next((v for v in SLACK_SETTABLE if v in str(e)), "CLOSEBOT_APPROVERS")
            return {BLOCKS[var]: str(e).split(": ", 1)[-1][:150]}
        changed = self.store.settings.change(team, given, by=user)
        if changed:
            self.later(lambda: self._took_effect(team))
        return {}

    def _took_effect(self, team: str) -> None:
        self.apply(team)
        if self.on_change is not None:
            self.on_change()


def _as_variables(settings: Settings) -> dict[str, str]:
    """The settings Slack can change, written as their variables would hold them."""
    return {
        "CLOSEBOT_APPROVERS": ",".join(
            sorted(a for a in settings.approvers if SLACK_USER_ID.match(a))
        ),
        "CLOSEBOT_APPROVAL_LIMIT": str(settings.approval_limit),
        "CLOSEBOT_CLOSE_CHANNEL": settings.close_channel or "",
        "CLOSEBOT_DATA": str(settings.data_dir or ""),
    }


def _same(var: str, given: str, shown: str) -> bool:
    if var == "CLOSEBOT_APPROVAL_LIMIT":
        try:
            return Decimal(given.replace(",", "")) == Decimal(shown)
        except InvalidOperation:
            return False
    return given == shown


def _input(
    block_id: str, label: str, element: dict[str, Any], hint: str, *, optional: bool = True
) -> dict[str, Any]:
    return {
        "type": "input",
        "block_id": block_id,
        "optional": optional,
        "label": blocks.plain(label, 150),
        "hint": blocks.plain(hint, 150),
        "element": element,
    }


def submitted(values: dict[str, Any]) -> dict[str, str]:
    """The modal's state.values as the variables they set (an empty one: unset)."""

    def state(block: str) -> dict[str, Any]:
        found = (values.get(block) or {}).get(VALUE)
        return found if isinstance(found, dict) else {}

    users = state("approvers").get("selected_users") or []
    return {
        "CLOSEBOT_APPROVERS": ",".join(sorted(str(u) for u in users)),
        "CLOSEBOT_APPROVAL_LIMIT": str(state("approval_limit").get("value") or "").strip(),
        "CLOSEBOT_CLOSE_CHANNEL": str(state("close_channel").get("selected_conversation") or ""),
        "CLOSEBOT_DATA": str(state("data_dir").get("value") or "").strip(),
    }

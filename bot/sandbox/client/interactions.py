"""A person's clicks: block_actions payloads with the form's state, block_suggestion for
an external select's options, reactions, and Slack's own Stop on a streaming message;
`form_state` builds state.values as Slack does."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.sandbox.client.sending import (
    APP_ID,
    CHOICE_STATE,
    PICKED_STATE,
    ActionError,
    SlackSender,
)
from bot.sandbox.slack_api import TEAM_ID, SlackError


class Interactions(SlackSender):
    """Clicks on buttons and menus, menus asking for options, reactions, Slack's Stop."""

    def _message(self, channel: str, ts: str, user: str | None = None) -> dict[str, Any]:
        """The message a click came from: in the channel, or an ephemeral one `user` sees.
        A conversation `user` cannot open (someone else's DM, a private channel they are
        not in) offers them nothing to click: ActionError (FakeSlack.can_see)."""
        with self.fake.lock:
            if user is not None and not self.fake.can_see(user, channel):
                raise ActionError(f"{user} cannot see {channel}: it is not their conversation")
            message = self.fake.messages.get(ts) or next(
                (
                    e
                    for e in self.fake.ephemerals
                    if e["ts"] == ts and user is not None and e["visible_to"] == user
                ),
                None,
            )
            if message is None or message["channel"] != channel:
                raise ActionError("that message is gone")
            return json.loads(json.dumps(message))

    def _container(self, channel: str, message: dict[str, Any]) -> dict[str, Any]:
        container = {
            "type": "message",
            "message_ts": message["ts"],
            "channel_id": channel,
            "is_ephemeral": bool(message.get("ephemeral")),
        }
        if message.get("thread_ts"):
            container["thread_ts"] = message["thread_ts"]
        return container

    def _slack_message(self, message: dict[str, Any]) -> dict[str, Any]:
        out = {
            "type": "message",
            "user": message.get("user"),
            "bot_id": message.get("bot_id"),
            "app_id": APP_ID if message.get("bot_id") else None,
            "text": message.get("text", ""),
            "ts": message["ts"],
            "thread_ts": message.get("thread_ts"),
            "team": TEAM_ID,
            "blocks": message.get("blocks") or [],
        }
        return {k: v for k, v in out.items() if v is not None}

    def action(
        self,
        *,
        user: str,
        channel: str,
        message_ts: str,
        block_id: str,
        action_id: str,
        picks: dict[str, Any],
        selected: Any = None,
    ) -> dict[str, Any]:
        """A click: the block_actions payload Slack would send, with the form's state."""
        person = self._user(user)
        message = self._message(channel, message_ts, user)
        element = _find_element(message.get("blocks") or [], block_id, action_id)
        if element is None:
            raise ActionError("that control is no longer in the message")
        if _in_quiet_input(message.get("blocks") or [], block_id):
            # an input block's element sends no block_actions unless the block sets
            # dispatch_action (docs.slack.dev/reference/interaction-payloads/
            # block_actions-payload; .../block-kit/blocks/input-block): its value travels
            # in the state of the next interaction instead
            raise ActionError("that control sends nothing until the form is submitted")
        action: dict[str, Any] = {
            "type": element["type"],
            "action_id": action_id,
            "block_id": block_id,
            "action_ts": f"{time.time():.6f}",
        }
        if element["type"] == "button":
            action["text"] = element.get("text")
            if "value" in element:
                action["value"] = element["value"]
            if element.get("style"):
                action["style"] = element["style"]
        elif element["type"] in CHOICE_STATE:
            action.update(_choice_state(element, selected))
        payload = {
            "type": "block_actions",
            "user": person,
            "api_app_id": APP_ID,
            "token": "sandbox-verification-token",
            "container": self._container(channel, message),
            "trigger_id": self.fake.issue_trigger(user),
            "team": self._team(),
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": channel, "name": self.fake.channel(channel).name},
            "message": self._slack_message(message),
            "state": {"values": form_state(message.get("blocks") or [], picks)},
            "response_url": self.fake.response_url(
                channel=channel, user=user, message_ts=message_ts
            ),
            "actions": [action],
        }
        if message.get("ephemeral"):  # Slack sends no copy of an ephemeral message
            del payload["message"]
        delivery = self._form({"payload": json.dumps(payload)})
        if not delivery.ok:
            return {"ok": False, "error": f"closebot answered HTTP {delivery.status or 'nothing'}"}
        return {"ok": True, "seconds": round(delivery.seconds, 3)}

    def options(
        self, *, user: str, channel: str, message_ts: str, block_id: str, action_id: str, value: str
    ) -> list[dict[str, Any]]:
        """An external select asks for options: a block_suggestion payload; the bot's options."""
        person = self._user(user)
        message = self._message(channel, message_ts, user)
        payload = {
            "type": "block_suggestion",
            "user": person,
            "container": self._container(channel, message),
            "api_app_id": APP_ID,
            "token": "sandbox-verification-token",
            "action_id": action_id,
            "block_id": block_id,
            "value": value,
            "team": self._team(),
            "enterprise": None,
            "channel": {"id": channel, "name": self.fake.channel(channel).name},
            "message": self._slack_message(message),
        }
        delivery = self._form({"payload": json.dumps(payload)})
        reply = delivery.json() if delivery.ok else None
        if not isinstance(reply, dict):
            return []
        options = list(reply.get("options") or [])
        for group in reply.get("option_groups") or []:
            options.extend(group.get("options") or [])
        return options

    def react(self, *, user: str, channel: str, ts: str, name: str) -> None:
        """A person clicked a reaction: add theirs, or take it back."""
        self._user(user)
        with self.fake.lock:
            if not self.fake.can_see(user, channel):
                raise ActionError(f"{user} cannot see {channel}: it is not their conversation")
            try:
                self.fake.react(channel, ts, name, user, toggle=True)
            except SlackError as e:
                raise ActionError(e.error) from e

    def stop_stream(self, *, user: str, channel: str, ts: str) -> dict[str, Any]:
        """A person pressed Slack's own Stop on the app's streaming message: Slack stops the
        app's streams in that thread and sends `agent_session_stopped` with their ts
        (docs.slack.dev/reference/events/agent_session_stopped)."""
        self._user(user)
        with self.fake.lock:
            chan = self.fake.channel(channel)
            if user not in chan.members:
                raise ActionError(f"{user} is not in #{chan.name}")
            message = self.fake.messages.get(ts)
            if message is None or message["channel"] != channel:
                raise ActionError("no such message")
            thread = message.get("thread_ts") or message["ts"]
            stopped = self.fake.stop_streams_by_user(channel, thread, user)
        if not stopped:
            raise ActionError("nothing is streaming there any more")
        self._emit(
            {
                "type": "agent_session_stopped",
                "channel": channel,
                "user": user,
                "thread_ts": thread,
                "streaming_message_ts": stopped,
                "event_ts": f"{time.time():.6f}",
            }
        )
        return {"ok": True, "stopped": stopped}


def form_state(blocks: list[dict[str, Any]], picks: dict[str, Any]) -> dict[str, Any]:
    """state.values for every input block of a message, from what the person picked.

    `picks` maps block_id → an option value, a list of values, an option object (external
    selects) or typed text. Options are sent as the message defines them, as Slack does.
    """
    values: dict[str, Any] = {}
    for block in blocks:
        element = block.get("element") if block.get("type") == "input" else None
        if not element or "block_id" not in block:
            continue
        kind = element["type"]
        # untouched: Slack sends what the form preselected
        pick = picks[block["block_id"]] if block["block_id"] in picks else _initial(element)
        if kind in CHOICE_STATE:
            state = {"type": kind, **_choice_state(element, pick)}
        elif kind in PICKED_STATE:  # {"type": "users_select", "selected_user": "U123"}
            state = {
                "type": kind,
                PICKED_STATE[kind]: pick if isinstance(pick, str) and pick else None,
            }
        else:
            state = {"type": kind, "value": pick if isinstance(pick, str) and pick else None}
        values[block["block_id"]] = {element.get("action_id", ""): state}
    return values


def _initial(element: dict[str, Any]) -> Any:
    if element.get("initial_option") and "external" in element["type"]:
        return element["initial_option"]  # its menu's options are not in the message
    if element.get("initial_option"):
        return element["initial_option"].get("value")
    if element.get("initial_options"):
        return [o.get("value") for o in element["initial_options"]]
    return (
        element.get("initial_value") or element.get("initial_date") or element.get("initial_user")
    )


def _choice_state(element: dict[str, Any], pick: Any) -> dict[str, Any]:
    key = CHOICE_STATE[element["type"]]
    many = key == "selected_options"
    external = "external" in element["type"]
    wanted = pick if isinstance(pick, list) else ([] if pick in (None, "") else [pick])
    chosen = []
    for item in wanted:
        if external and isinstance(item, dict) and "value" in item:
            chosen.append({"text": item.get("text"), "value": item["value"]})
            continue
        option = next((o for o in _all_options(element) if o.get("value") == item), None)
        if option is None:
            raise ActionError(f"{item!r} is not one of this menu's options")
        chosen.append(option)
    if many:
        return {key: chosen}
    return {key: chosen[0] if chosen else None}


def _all_options(element: dict[str, Any]) -> list[dict[str, Any]]:
    options = list(element.get("options") or [])
    for group in element.get("option_groups") or []:
        options.extend(group.get("options") or [])
    return options


def _in_quiet_input(blocks: list[dict[str, Any]], block_id: str) -> bool:
    """Whether block_id is an input block that does not dispatch its element's actions."""
    return any(
        b.get("block_id") == block_id and b.get("type") == "input" and not b.get("dispatch_action")
        for b in blocks
    )


def _find_element(
    blocks: list[dict[str, Any]], block_id: str, action_id: str
) -> dict[str, Any] | None:
    for block in blocks:
        if block.get("block_id") != block_id:
            continue
        candidates = [*(block.get("elements") or []), block.get("accessory"), block.get("element")]
        for element in candidates:
            if isinstance(element, dict) and element.get("action_id") == action_id:
                return element
    return None

"""What Slack does when a person acts in the sandbox page: signed requests to the bot.

The page never talks to the bot. It tells this module what a person did (typed a
message or `/close`, clicked a button, opened an external select); this module
builds the request Slack would send — a signed form body for a slash command,
`payload=` for an interaction, event JSON with an `event_id` — POSTs it to the
bot's `/slack/events`, and does with the answer what Slack would (an ephemeral
reply, options for a menu, "dispatch_failed").
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

from bot.sandbox.slack_api import BOT_ID, BOT_USER, TEAM_ID, FakeSlack, SlackError

log = logging.getLogger(__name__)

APP_ID = "ASANDBOX"
SLACKBOT = "USLACKBOT"
EVENT_RETRIES = 3
CHOICE_STATE = {
    "radio_buttons": "selected_option",
    "static_select": "selected_option",
    "external_select": "selected_option",
    "checkboxes": "selected_options",
    "multi_static_select": "selected_options",
    "multi_external_select": "selected_options",
}


class ActionError(ValueError):
    """A request from the page that Slack's own client could never send."""


@dataclass
class Delivery:
    status: int
    body: bytes
    seconds: float

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None


class SlackClient:
    """Slack's side of each thing a person does, aimed at the bot's request URL."""

    def __init__(self, fake: FakeSlack, *, signing_secret: str, events_url: str = "") -> None:
        self.fake = fake
        self.signer = SignatureVerifier(signing_secret)
        self.events_url = events_url
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._worker = threading.Thread(
            target=self._deliver_events, name="sandbox-events", daemon=True
        )
        self._worker.start()

    def close(self) -> None:
        self._events.put(None)
        self._worker.join(timeout=5)

    # -- sending -------------------------------------------------------------

    def send(self, body: str, content_type: str, **headers: str) -> Delivery:
        """POST a signed body to the bot, as Slack does."""
        ts = str(int(time.time()))
        request = urllib.request.Request(
            self.events_url,
            data=body.encode(),
            method="POST",
            headers={
                "Content-Type": content_type,
                "X-Slack-Request-Timestamp": ts,
                "X-Slack-Signature": str(self.signer.generate_signature(timestamp=ts, body=body)),
                "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
                **headers,
            },
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return Delivery(response.status, response.read(), time.monotonic() - started)
        except urllib.error.HTTPError as e:
            return Delivery(e.code, e.read(), time.monotonic() - started)
        except OSError as e:
            log.warning("the bot did not answer: %s", e)
            return Delivery(0, b"", time.monotonic() - started)

    def _form(self, fields: dict[str, Any]) -> Delivery:
        return self.send(urlencode(fields), "application/x-www-form-urlencoded")

    def _user(self, user: str) -> dict[str, Any]:
        person = self.fake.people.get(user)
        if person is None or user == BOT_USER:
            raise ActionError(f"no such person in the sandbox: {user!r}")
        return {
            "id": user,
            "username": _handle(person.name),
            "name": _handle(person.name),
            "team_id": TEAM_ID,
        }

    def _team(self) -> dict[str, str]:
        return {"id": TEAM_ID, "domain": "sandbox"}

    # -- messages and slash commands ----------------------------------------

    def say(
        self, *, user: str, channel: str, text: str, thread_ts: str | None = None
    ) -> dict[str, Any]:
        """A person pressed Enter in a composer: a slash command, or a message and its events."""
        self._user(user)
        text = text.strip()
        if not text:
            raise ActionError("type a message first")
        with self.fake.lock:
            chan = self.fake.channel(channel)
            if user not in chan.members:
                raise ActionError(f"{user} is not in #{chan.name}")
        if text.startswith("/"):
            command, _, rest = text.partition(" ")
            return self.command(
                user=user, channel=channel, command=command, text=rest.strip(), thread_ts=thread_ts
            )
        with self.fake.lock:
            root = self.fake.messages.get(thread_ts or "")
            thread = (root.get("thread_ts") or root["ts"]) if root else None
            message = self.fake.add_message(
                channel,
                text=self._mentions(text),
                user=user,
                thread_ts=thread,
                client_msg_id=str(uuid.uuid4()),
                blocks=[],
            )
        inner: dict[str, Any] = {
            "type": "message",
            "channel": channel,
            "user": user,
            "text": message["text"],
            "ts": message["ts"],
            "event_ts": message["ts"],
            "channel_type": "im" if channel.startswith("D") else "channel",
            "client_msg_id": message["client_msg_id"],
            "team": TEAM_ID,
        }
        if thread:
            inner["thread_ts"] = thread
        self._events.put(inner)
        if f"<@{BOT_USER}>" in message["text"]:
            self._events.put({**inner, "type": "app_mention"} | {"channel_type": None})
        return {"ok": True, "ts": message["ts"]}

    def share_file(
        self,
        *,
        user: str,
        channel: str,
        name: str,
        data: bytes,
        thread_ts: str | None = None,
        text: str = "",
    ) -> dict[str, Any]:
        """A person dropped a file into a conversation: Slack keeps it, and sends the bot a
        `message` event with subtype `file_share` and a `file_shared` event."""
        self._user(user)
        name = name.replace("/", "_").replace("\\", "_").strip() or "file"
        if not data:
            raise ActionError("the file is empty")
        with self.fake.lock:
            chan = self.fake.channel(channel)
            if user not in chan.members:
                raise ActionError(f"{user} is not in #{chan.name}")
            root = self.fake.messages.get(thread_ts or "")
            thread = (root.get("thread_ts") or root["ts"]) if root else None
            message, f = self.fake.share_file(
                user=user, channel=channel, thread_ts=thread, name=name, data=data, text=text
            )
        inner: dict[str, Any] = {
            "type": "message",
            "subtype": "file_share",
            "channel": channel,
            "user": user,
            "text": text,
            "ts": message["ts"],
            "event_ts": message["ts"],
            "channel_type": "im" if channel.startswith("D") else "channel",
            "upload": True,
            "display_as_bot": False,
            "files": [{k: v for k, v in f.items() if k != "shares"}],
            "team": TEAM_ID,
        }
        if thread:
            inner["thread_ts"] = thread
        self._events.put(inner)
        self._events.put(
            {
                "type": "file_shared",
                "channel_id": channel,
                "file_id": f["id"],
                "user_id": user,
                "file": {"id": f["id"]},
                "event_ts": message["ts"],
            }
        )
        return {"ok": True, "ts": message["ts"], "file": f["id"]}

    def home_opened(self, *, user: str, tab: str = "home") -> dict[str, Any]:
        """A person opened closebot's App Home (its Home or Messages tab)."""
        self._user(user)
        self._events.put(
            {
                "type": "app_home_opened",
                "user": user,
                "channel": f"D{user}",
                "tab": tab,
                "event_ts": f"{time.time():.6f}",
            }
        )
        return {"ok": True}

    def _mentions(self, text: str) -> str:
        """'@closebot' and '@ben' become <@U…> mentions, as Slack's composer makes them."""
        names = {_handle(p.name): p.id for p in self.fake.people.values()}
        names.update({p.name.split()[0].lower(): p.id for p in self.fake.people.values()})

        def swap(m: re.Match[str]) -> str:
            found = names.get(m.group(1).lower())
            return f"<@{found}>" if found else m.group(0)

        return re.sub(r"(?<![<\w])@([A-Za-z][\w.-]*)", swap, text)

    def command(
        self, *, user: str, channel: str, command: str, text: str, thread_ts: str | None = None
    ) -> dict[str, Any]:
        """A slash command: known ones go to the bot, others get Slackbot's reply."""
        if command != "/close":
            self._slackbot(
                channel,
                user,
                f"`{command}` is not a valid command. In Slack, all messages that start with "
                'the "/" character are interpreted as commands. Try `/close 2026-10`.',
                thread_ts,
            )
            return {"ok": False, "error": "invalid_command"}
        chan = self.fake.channel(channel)
        person = self._user(user)
        delivery = self._form(
            {
                "token": "sandbox-verification-token",
                "team_id": TEAM_ID,
                "team_domain": "sandbox",
                "channel_id": channel,
                "channel_name": chan.name,
                "user_id": user,
                "user_name": person["username"],
                "command": command,
                "text": text,
                "api_app_id": APP_ID,
                "is_enterprise_install": "false",
                "response_url": self.fake.response_url(channel=channel, user=user, message_ts=None),
                "trigger_id": _trigger_id(),
            }
        )
        if not delivery.ok:
            self._slackbot(
                channel, user, f'{command} failed with the error "dispatch_failed"', thread_ts
            )
            return {"ok": False, "error": "dispatch_failed", "status": delivery.status}
        reply = delivery.json()
        if isinstance(reply, dict) and (reply.get("text") or reply.get("blocks")):
            kind = reply.get("response_type", "ephemeral")
            with self.fake.lock:
                if kind == "in_channel":
                    self.fake.add_message(
                        channel,
                        text=reply.get("text") or "",
                        blocks=reply.get("blocks") or [],
                        user=BOT_USER,
                        bot_id=BOT_ID,
                    )
                else:
                    self.fake.add_ephemeral(
                        channel,
                        user,
                        text=reply.get("text") or "",
                        blocks=reply.get("blocks") or [],
                        thread_ts=thread_ts,
                    )
        elif delivery.body and not isinstance(reply, dict | list):
            with self.fake.lock:
                self.fake.add_ephemeral(
                    channel, user, text=delivery.body.decode(errors="replace"), thread_ts=thread_ts
                )
        return {"ok": True, "seconds": round(delivery.seconds, 3)}

    def _slackbot(self, channel: str, user: str, text: str, thread_ts: str | None) -> None:
        with self.fake.lock:
            self.fake.add_ephemeral(
                channel, user, text=text, user=SLACKBOT, bot_id=None, thread_ts=thread_ts
            )

    def _deliver_events(self) -> None:
        """Events go out one by one, in order, retried like Slack (X-Slack-Retry-Num)."""
        while (inner := self._events.get()) is not None:
            body = json.dumps(
                {
                    "token": "sandbox-verification-token",
                    "team_id": TEAM_ID,
                    "api_app_id": APP_ID,
                    "event": {k: v for k, v in inner.items() if v is not None},
                    "type": "event_callback",
                    "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}",
                    "event_time": int(time.time()),
                    "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER, "is_bot": True}],
                    "is_ext_shared_channel": False,
                }
            )
            delivery = self.send(body, "application/json")
            for attempt in range(1, EVENT_RETRIES + 1):
                if delivery.ok:
                    break
                reason = "http_timeout" if delivery.status == 0 else "http_error"
                delivery = self.send(
                    body,
                    "application/json",
                    **{"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": reason},
                )

    # -- interactivity -------------------------------------------------------

    def _message(self, channel: str, ts: str, user: str | None = None) -> dict[str, Any]:
        """The message a click came from: in the channel, or an ephemeral one `user` sees."""
        with self.fake.lock:
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
            "trigger_id": _trigger_id(),
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
        message = self._message(channel, message_ts)
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
            try:
                self.fake.react(channel, ts, name, user, toggle=True)
            except SlackError as e:
                raise ActionError(e.error) from e


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


def _handle(name: str) -> str:
    return name.split()[0].lower() if name else ""


def _trigger_id() -> str:
    return f"{int(time.time())}.{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:16]}"

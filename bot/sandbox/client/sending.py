"""How the sandbox reaches the bot as Slack does: signed POSTs to its request URL, events
delivered one by one in order and retried (X-Slack-Retry-Num), and what every request
says of the person and the team."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

from bot.sandbox.slack_api import BOT_USER, TEAM_ID, FakeSlack

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
# a person or a date picked: where Slack puts it in the form's state
PICKED_STATE = {"users_select": "selected_user", "datepicker": "selected_date"}


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


class SlackSender:
    """Slack's side of the connection to the bot: signing, sending, the event queue."""

    def __init__(self, fake: FakeSlack, *, signing_secret: str, events_url: str = "") -> None:
        self.fake = fake
        self.signer = SignatureVerifier(signing_secret)
        self.events_url = events_url
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        # events Slack would not send the bot (not subscribed in the manifest, or their
        # scope not granted): kept here for tests, never delivered
        self.withheld: list[dict[str, Any]] = []
        self._worker = threading.Thread(
            target=self._deliver_events, name="sandbox-events", daemon=True
        )
        self._worker.start()

    def close(self) -> None:
        self._events.put(None)
        self._worker.join(timeout=5)

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

    def _emit(self, inner: dict[str, Any]) -> bool:
        """Queue an event for the bot if Slack would send it: the app subscribes to it and
        was granted its scope (bot/sandbox/slack_api/scopes.py) — with the manifest closebot
        ships, a plain reply in a channel thread is never sent; a mention is (app_mention)."""
        if not self.fake.grants.delivers(inner):
            with self.fake.lock:
                self.withheld.append(inner)
            return False
        self._events.put(inner)
        return True

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


def _handle(name: str) -> str:
    return name.split()[0].lower() if name else ""

"""Real Slack request bodies, signed the way Slack signs them."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

from bot import blocks
from bot.sandbox.slack_api import TEAM_ID

SECRET = "test-signing-secret"
# the fake's workspace: its people belong to it, and a stream answering one names it
TEAM = {"id": TEAM_ID, "domain": "example"}


def signed_headers(
    body: str, *, content_type: str, secret: str = SECRET, timestamp: int | None = None
) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {
        "content-type": content_type,
        "x-slack-signature": signature,
        "x-slack-request-timestamp": ts,
    }


def slash_command(
    text: str,
    *,
    user: str = "UALICE",
    channel: str = "CFIN",
    response_url: str = "https://hooks.slack.invalid/commands/1",
    team: str | None = None,
) -> str:
    return urlencode(
        {
            "token": "legacy",
            "team_id": team or TEAM["id"],
            "team_domain": TEAM["domain"],
            "channel_id": channel,
            "channel_name": "finance",
            "user_id": user,
            "user_name": user.lower(),
            "command": "/close",
            "text": text,
            "api_app_id": "A0001",
            "response_url": response_url,
            "trigger_id": "1.2.3",
        }
    )


def form_values(
    form: list[dict[str, Any]],
    picks: dict[int, Any],
    other: dict[int, str] | None = None,
    why: str | dict[int, str] | None = None,
) -> dict[str, Any]:
    """state.values as Slack sends them for a form: picks maps question number → option(s) or text;
    `why` fills every "Why" box, or (a dict) the box of each question number given."""
    values: dict[str, Any] = {}
    shared_other = any(
        (blocks.parse_block_id(b.get("block_id") or "") or ("", 1)) == ("o", 0) for b in form
    )
    if shared_other and other:  # a table card's one Other: its row set to "Other…"
        picks = {**picks, **{n: blocks.OTHER_VALUE for n in other}}
        other = {0: next(iter(other.values()))}
    for block in form:
        if block.get("type") != "input":
            continue
        kind, number = blocks.parse_block_id(block["block_id"]) or ("", 0)
        element = block["element"]
        if kind == "w":
            # a card's one Why box (number 0) takes the per-question whys together
            text = (
                (why.get(number) or "; ".join(why.values()) if number == 0 else why.get(number))
                if isinstance(why, dict)
                else why
            )
            values[block["block_id"]] = {
                blocks.WHY_ACTION: {"type": "plain_text_input", "value": text}
            }
            continue
        if kind == "o":
            values[block["block_id"]] = {
                blocks.OTHER_ACTION: {
                    "type": "plain_text_input",
                    "value": (other or {}).get(number),
                }
            }
            continue
        kind_of = element["type"]
        if kind_of in ("users_select", "datepicker"):
            # as Slack sends them (python-slack-sdk tests/slack_sdk/models/test_views.py):
            # {"type": "users_select", "selected_user": "U123"},
            # {"type": "datepicker", "selected_date": "1990-04-12"}; untouched: the initial one
            key, initial = (
                ("selected_user", "initial_user")
                if kind_of == "users_select"
                else ("selected_date", "initial_date")
            )
            picked = picks.get(number, element.get(initial))
            values[block["block_id"]] = {element["action_id"]: {"type": kind_of, key: picked}}
            continue
        if number in picks:
            pick = picks[number]
        else:  # untouched: Slack sends what the form preselected
            first = element.get("initial_option")
            pick = int(first["value"]) if first else None
            if element.get("initial_options"):
                pick = [int(o["value"]) for o in element["initial_options"]]
        if kind_of == "plain_text_input":
            state: dict[str, Any] = {"type": kind_of, "value": pick}
        elif kind_of in ("radio_buttons", "static_select"):
            option = next((o for o in element["options"] if o["value"] == str(pick)), None)
            state = {"type": kind_of, "selected_option": option}
        else:
            chosen = [o for o in element["options"] if int(o["value"]) in (pick or [])]
            state = {"type": kind_of, "selected_options": chosen}
        values[block["block_id"]] = {element["action_id"]: state}
    return values


def block_action(
    action_id: str,
    value: str,
    *,
    user: str = "UALICE",
    channel: str = "CFIN",
    message: dict[str, Any] | None = None,
    values: dict[str, Any] | None = None,
    # no fake Slack behind it: refused at once on loopback (a test that gives the fake's own,
    # fake.response_url(...), sees what the bot sends through it)
    response_url: str = "http://127.0.0.1:9/actions/1",
    trigger_id: str = "1.2.3",
) -> str:
    message = message or {"ts": "1761900000.000001", "thread_ts": None, "blocks": []}
    payload = {
        "type": "block_actions",
        "team": TEAM,
        "user": {"id": user, "username": user.lower(), "team_id": TEAM["id"]},
        "api_app_id": "A0001",
        "token": "legacy",
        "container": {
            "type": "message",
            "message_ts": message["ts"],
            "channel_id": channel,
            "is_ephemeral": False,
            "thread_ts": message.get("thread_ts"),
        },
        "trigger_id": trigger_id,
        "channel": {"id": channel, "name": "finance"},
        "message": {
            "type": "message",
            "ts": message["ts"],
            "thread_ts": message.get("thread_ts"),
            "text": "form",
            "blocks": message.get("blocks", []),
        },
        "state": {"values": values or {}},
        "response_url": response_url,
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "closebot:a:0:x",
                "value": value,
                "action_ts": str(time.time()),
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload)})


def event(inner: dict[str, Any], *, event_id: str) -> str:
    return json.dumps(
        {
            "token": "legacy",
            "team_id": TEAM["id"],
            "api_app_id": "A0001",
            "event": inner,
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM["id"], "user_id": "UBOT", "is_bot": True}],
        }
    )

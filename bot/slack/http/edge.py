"""The HTTP edge in front of Bolt: verify the signature and check the body's shape, so a
malformed or forged request gets a 4xx here instead of a 500 from Bolt's parser.

Bolt builds its request object (and parses the body) before any middleware runs, so these
checks must come first. They are shape checks only, and only of what closebot reads: a field
Slack sends in another shape in events closebot does not read (`channel_created`'s channel
object, `team_join`'s user object, `member_joined_channel`'s string `enterprise`) passes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from slack_sdk.signature import SignatureVerifier

MAX_BODY = 512 * 1024  # Slack's largest payloads (a big form's state) are far below this
MAX_COMMAND_TEXT = 4000
MAX_DEPTH = 64  # JSON nesting; Slack's deepest payloads (a form's state) are about 8 deep
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string, escapes and all
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")

# Fields Slack sends as objects (or lists of objects); anything else is not Slack's.
OBJECT_FIELDS = (  # Bolt reads these with .get(): present means an object, never null
    "team",
    "user",
    "channel",
    "container",
    "message",
    "view",
    "event",
    "item",
    "previous_message",
    "assistant_thread",
    "function_data",
)
# Slack sends "enterprise": null outside Enterprise Grid (inside an event it may be an id)
NULLABLE_OBJECT_FIELDS = ("enterprise",)
LIST_FIELDS = ("actions", "authorizations")
STRING_FIELDS = (
    "type",
    "action_id",
    "block_id",
    "value",
    "event_id",
    "api_app_id",
    "team_id",
    "response_url",
    "trigger_id",
)
EVENT_STRING_FIELDS = ("type", "user", "channel", "text", "ts", "thread_ts", "subtype", "bot_id")
READ_EVENTS = ("message", "app_mention")  # the events whose fields closebot reads


class Refused(Exception):
    """A request the edge answers itself, with an HTTP status and a short reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Checked:
    """A signed, well-formed request: its raw body, what it is, its signature, and the body
    parsed as Bolt parses it (so Bolt need not parse it again)."""

    raw: bytes
    kind: str
    signature: str
    body: dict[str, Any] = field(default_factory=dict)


def verify(raw: bytes, headers: dict[str, str], secret: str) -> str:
    """The request's signature if it is Slack's and fresh; Refused(401) otherwise."""
    timestamp = headers.get("x-slack-request-timestamp", "").strip()
    signature = headers.get("x-slack-signature", "").strip()
    if not timestamp.isdigit() or not signature.startswith("v0="):
        raise Refused(401, "missing or malformed signature headers")
    try:
        body = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Refused(400, "the body is not UTF-8") from e
    if not SignatureVerifier(secret).is_valid(body=body, timestamp=timestamp, signature=signature):
        raise Refused(401, "invalid or stale signature")
    return signature


def _shape(payload: Any, where: str, depth: int = 0) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise Refused(400, f"{where} is not a JSON object")
    for key in OBJECT_FIELDS if depth == 0 else ():  # inside an event, user/channel/team are ids
        if key in payload and not isinstance(payload[key], dict):
            raise Refused(400, f"{where}.{key} is not an object")
    block_actions = depth == 0 and payload.get("type") == "block_actions"
    if block_actions and "state" in payload and not isinstance(payload["state"], dict):
        raise Refused(400, f"{where}.state is not an object")  # a dialog's state is a string
    for key in NULLABLE_OBJECT_FIELDS if depth == 0 else ():
        if payload.get(key) is not None and not isinstance(payload[key], dict):
            raise Refused(400, f"{where}.{key} is not an object")
    if depth < 2:
        for key in ("event", "message", "item", "previous_message", "assistant_thread"):
            if isinstance(payload.get(key), dict):
                _shape(payload[key], f"{where}.{key}", depth + 1)
    for key in LIST_FIELDS:
        value = payload.get(key)
        if (key in payload if key == "actions" else value is not None) and not (
            isinstance(value, list) and all(isinstance(v, dict) for v in value)
        ):
            raise Refused(400, f"{where}.{key} is not a list of objects")
    for key in STRING_FIELDS:
        if payload.get(key) is not None and not isinstance(payload[key], str):
            raise Refused(400, f"{where}.{key} is not a string")
    for key in ("user", "channel", "team", "enterprise") if depth == 0 else ():
        inner = payload.get(key)
        if (
            isinstance(inner, dict)
            and inner.get("id") is not None
            and not isinstance(inner["id"], str)
        ):
            raise Refused(400, f"{where}.{key}.id is not a string")
    for action in payload.get("actions") or [] if payload.get("type") == "block_actions" else []:
        if not isinstance(action.get("action_id"), str):
            raise Refused(400, f"{where}.actions[].action_id is not a string")
        if action.get("value") is not None and not isinstance(action["value"], str):
            raise Refused(400, f"{where}.actions[].value is not a string")
    reads = depth and (payload.get("type") in READ_EVENTS or where.endswith(".message"))
    for key in EVENT_STRING_FIELDS if reads else ():
        if payload.get(key) is not None and not isinstance(payload[key], str):
            raise Refused(400, f"{where}.{key} is not a string")
    state = payload.get("state")
    if isinstance(state, dict) and state.get("values") is not None:
        values = state["values"]
        if not isinstance(values, dict) or not all(isinstance(v, dict) for v in values.values()):
            raise Refused(400, f"{where}.state.values is not an object of objects")
    return payload


def _nests_within(brackets: str, limit: int) -> bool:
    """Whether a text of brackets only nests no deeper than `limit`: each pass takes away
    the innermost pairs (in C), so a shallow text is done in a few passes, a deep one is
    known deep after `limit` of them."""
    for _ in range(limit):
        shorter = brackets.replace("[]", "").replace("{}", "")
        if shorter == brackets:  # unbalanced: as deep as its unmatched brackets
            return len(brackets) <= limit
        brackets = shorter
        if not brackets:
            return True
    return not brackets


def nesting_ok(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON text nests no deeper than `limit`, told before parsing it (a parser
    recurses once per level: 200 KB of `[` is a RecursionError). Cheap for what Slack sends:
    brackets are counted first with those inside strings (never fewer than the real depth);
    only a text that fails that is looked at again with its strings left out."""
    if text.count("[") + text.count("{") <= limit:
        return True
    if _nests_within(_NOT_BRACKETS.sub("", text), limit):
        return True
    return _nests_within(_NOT_BRACKETS.sub("", _STRINGS.sub("", text)), limit)


def _json(text: str, what: str) -> Any:
    """Parse JSON from a request, bounded: too deep or not JSON is Refused(400)."""
    if not nesting_ok(text):
        raise Refused(400, f"{what} nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise Refused(400, f"{what} is not JSON") from e


def _interaction(raw: str) -> tuple[str, dict[str, Any]]:
    payload = _json(raw, "payload")
    payload = _shape(payload, "payload")
    return _classify(payload), payload


def _classify(payload: dict[str, Any]) -> str:
    """What a shaped body is; whatever its content type, Bolt routes it by `type` alone."""
    kind = payload.get("type")
    if not isinstance(kind, str) or not kind:
        raise Refused(400, "payload has no type")
    if kind in ("block_actions", "block_suggestion"):
        user = payload.get("user")
        if not isinstance(user, dict) or not isinstance(user.get("id"), str):
            raise Refused(400, f"{kind} without a user id")
    if kind == "event_callback" or "event" in payload:
        event = payload.get("event")
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise Refused(400, "an event callback without an event type")
        return f"event:{event['type']}"
    if kind == "block_actions":
        if not payload.get("actions"):
            raise Refused(400, f"{kind} without actions")
        return f"action:{payload['actions'][0]['action_id']}"
    if kind == "interactive_message":  # a legacy attachment's button: closebot sends none
        return f"legacy:{payload.get('callback_id')}"
    if kind == "block_suggestion":
        if not isinstance(payload.get("action_id"), str):
            raise Refused(400, "block_suggestion without an action_id")
        return "options"
    return kind


def unquote_plus(text: str) -> str:
    """urllib.parse.unquote_plus, decoded in C where it can be.

    The stdlib decodes escapes one by one in Python: 1.8 ms for a large form's payload,
    most of a Submit's ack. An ASCII text whose escapes are all valid and whose bytes are
    valid UTF-8 (every body Slack sends) is decoded in one pass; anything else goes to the
    stdlib, so the result is always the stdlib's.
    """
    text = text.replace("+", " ")
    if "%" not in text:
        return text
    if text.isascii() and "\\" not in text:
        try:
            escaped = text.replace("%", "\\x").encode("ascii")
            return escaped.decode("unicode_escape").encode("latin-1").decode("utf-8")
        except UnicodeError:
            pass  # an invalid escape or invalid UTF-8: the stdlib decides what it reads as
    return unquote(text)


def parse_form(body: str) -> dict[str, list[str]]:
    """parse_qs(body, keep_blank_values=True, strict_parsing=True), faster; ValueError alike."""
    fields: dict[str, list[str]] = {}
    for pair in body.split("&") if body else ():
        name, eq, value = pair.partition("=")
        if not pair or not eq:
            raise ValueError(f"bad query field: {pair!r}")
        fields.setdefault(unquote_plus(name), []).append(unquote_plus(value))
    return fields


def _form(body: str) -> tuple[str, dict[str, Any]]:
    try:
        fields = parse_form(body)
    except ValueError as e:
        raise Refused(400, "the form body is malformed") from e
    if any(len(v) != 1 for v in fields.values()):
        raise Refused(400, "a form field is repeated")
    form = {k: v[0] for k, v in fields.items()}
    if "payload" in form:
        return _interaction(form["payload"])
    if "command" in form:
        for key in ("command", "user_id", "channel_id"):
            if not form.get(key):
                raise Refused(400, f"a slash command without {key}")
        if len(form.get("text", "")) > MAX_COMMAND_TEXT:
            raise Refused(413, "the command text is too long")
        return f"command:{form['command']}", form
    raise Refused(400, "neither a command nor an interaction payload")


def _event(body: str) -> tuple[str, dict[str, Any]]:
    payload = _json(body, "the body")
    payload = _shape(payload, "body")
    kind = payload.get("type")
    if not isinstance(kind, str) or not kind:
        raise Refused(400, "the body has no type")
    if kind == "url_verification":
        if not isinstance(payload.get("challenge"), str):
            raise Refused(400, "url_verification without a challenge")
        return kind, payload
    return _classify(payload), payload


def is_ssl_check(raw: bytes, headers: dict[str, str]) -> bool:
    """Slack's check of the certificate (`ssl_check=1`, a form post): answered 200, as Bolt
    does, before anything else; it asks nothing and changes nothing."""
    content_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded" or len(raw) > 4096:
        return False
    try:
        fields = parse_form(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return fields.get("ssl_check") == ["1"] and "payload" not in fields and "command" not in fields


def check(raw: bytes, headers: dict[str, str], secret: str) -> Checked:
    """Verify and shape-check one request to /slack/events; Refused says what is wrong."""
    if len(raw) > MAX_BODY:
        raise Refused(413, "the body is too large")
    signature = verify(raw, headers, secret)
    body = raw.decode("utf-8")
    content_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json":
        kind, parsed = _event(body)
    elif content_type == "application/x-www-form-urlencoded":
        kind, parsed = _form(body)
    else:
        raise Refused(415, f"unsupported content type {content_type or '(none)'}")
    return Checked(raw=raw, kind=kind, signature=signature, body=parsed)

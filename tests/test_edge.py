"""The HTTP edge: malformed or forged requests get a 4xx before Bolt sees them; a replay is
answered once; sizes are bounded."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_bolt.request import BoltRequest

from bot.close.data import SAMPLE_DIR
from bot.sandbox.slack_api import FakeSlack, fake_slack
from bot.slack.http import edge
from bot.slack.http.server import HttpServer
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness

JSON = "application/json"


@pytest.fixture
def served(fake: FakeSlack, db_path: Path) -> Iterator[tuple[Harness, str]]:
    harness = Harness(fake, db_path)
    server = HttpServer(harness.service, host="127.0.0.1", port=0)
    server.start()
    yield harness, f"http://127.0.0.1:{server.port}/slack/events"
    server.stop()
    harness.close()


def post(url: str, body: bytes, headers: dict[str, str], method: str = "POST") -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def signed(
    body: bytes, content_type: str | None, *, timestamp: int | None = None
) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(sp.SECRET.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256)
    headers = {"x-slack-signature": "v0=" + digest.hexdigest(), "x-slack-request-timestamp": ts}
    if content_type is not None:
        headers["content-type"] = content_type
    return headers


def action(**overrides: Any) -> bytes:
    payload: dict[str, Any] = {
        "type": "block_actions",
        "team": sp.TEAM,
        "user": {"id": "UALICE"},
        "api_app_id": "A0001",
        "container": {"type": "message", "message_ts": "1.1", "channel_id": "CFIN"},
        "channel": {"id": "CFIN"},
        "actions": [{"action_id": "closebot_submit", "value": "q", "block_id": "b"}],
    }
    payload.update(overrides)
    payload = {k: v for k, v in payload.items() if v is not ...}
    return urlencode({"payload": json.dumps(payload)}).encode()


def event(inner: Any, **outer: Any) -> bytes:
    return json.dumps(
        {"type": "event_callback", "team_id": "T0001", "event_id": "Ev9", "event": inner, **outer}
    ).encode()


COMMAND = dict(
    token="t",
    team_id="T0001",
    channel_id="CFIN",
    user_id="UALICE",
    command="/close",
    text="2026-10",
)

MALFORMED: list[tuple[str, bytes, str | None]] = [
    ("empty form body", b"", FORM),
    ("empty payload", b"payload=", FORM),
    ("payload not JSON", b"payload=not-json", FORM),
    ("payload a list", b"payload=%5B%5D", FORM),
    ("payload a number", b"payload=123", FORM),
    ("payload null", b"payload=null", FORM),
    ("payload type a number", urlencode({"payload": '{"type": 5}'}).encode(), FORM),
    ("payload without type", urlencode({"payload": "{}"}).encode(), FORM),
    ("block_actions without user", action(user=...), FORM),
    ("user a string", action(user="UALICE"), FORM),
    ("user id a number", action(user={"id": 5}), FORM),
    ("no actions", action(actions=[]), FORM),
    ("actions a string", action(actions="x"), FORM),
    ("actions of numbers", action(actions=[1]), FORM),
    ("action without action_id", action(actions=[{}]), FORM),
    ("action_id a number", action(actions=[{"action_id": 5}]), FORM),
    ("action value a list", action(actions=[{"action_id": "a", "value": ["q"]}]), FORM),
    ("team a string", action(team="T0001"), FORM),
    ("channel a string", action(channel="CFIN"), FORM),
    ("container a string", action(container="x"), FORM),
    ("state a string", action(state="x"), FORM),
    ("state.values a list", action(state={"values": []}), FORM),
    ("message a number", action(message=7), FORM),
    ("enterprise a list", action(enterprise=[1]), FORM),
    (
        "block_suggestion without action_id",
        urlencode(
            {"payload": json.dumps({"type": "block_suggestion", "user": {"id": "U1"}})}
        ).encode(),
        FORM,
    ),
    ("neither command nor payload", b"foo=bar", FORM),
    ("a field without a value", b"novalue", FORM),
    ("payload twice", b"payload=%7B%7D&payload=%7B%7D", FORM),
    ("command without user_id", urlencode({**COMMAND, "user_id": ""}).encode(), FORM),
    (
        "command without channel_id",
        urlencode({k: v for k, v in COMMAND.items() if k != "channel_id"}).encode(),
        FORM,
    ),
    ("empty JSON body", b"", JSON),
    ("broken JSON", b"{", JSON),
    ("JSON list", b"[]", JSON),
    ("JSON type a number", b'{"type": 3}', JSON),
    ("event_callback without event", b'{"type": "event_callback"}', JSON),
    ("event a string", event("x"), JSON),
    ("event type a number", event({"type": 5}), JSON),
    ("event user an object", event({"type": "message", "user": {"id": "U"}}), JSON),
    ("event text a list", event({"type": "message", "text": ["x"]}), JSON),
    ("authorizations a string", event({"type": "message"}, authorizations="x"), JSON),
    ("url_verification without challenge", b'{"type": "url_verification"}', JSON),
    ("not UTF-8", b"payload=\xff\xfe", FORM),
    ("plain text", b"hello", "text/plain"),
    ("no content type", b"payload=%7B%7D", None),
]


@pytest.fixture(scope="module")
def one_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Harness, FakeSlack, str]]:
    """One bot for all the malformed bodies (none may change anything, so they can share it)."""
    with fake_slack() as f:
        harness = Harness(f, tmp_path_factory.mktemp("edge") / "closebot.db")
        server = HttpServer(harness.service, host="127.0.0.1", port=0)
        server.start()
        yield harness, f, f"http://127.0.0.1:{server.port}/slack/events"
        server.stop()
        harness.close()


@pytest.mark.parametrize(("why", "body", "content_type"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_signed_body_gets_a_4xx_and_changes_nothing(
    one_server: tuple[Harness, FakeSlack, str], why: str, body: bytes, content_type: str | None
) -> None:
    bot, fake, url = one_server
    status, answer = post(url, body, signed(body, content_type))
    assert 400 <= status < 500, (status, answer)
    assert b"Traceback" not in answer
    bot.idle()
    assert bot.store.runs.recent() == [] and [c.method for c in fake.calls] == ["auth.test"]


def test_there_are_at_least_36_malformed_bodies() -> None:
    assert len(MALFORMED) >= 36 and len({m[0] for m in MALFORMED}) == len(MALFORMED)


@pytest.mark.parametrize(
    ("why", "headers", "status"),
    [
        ("no signature headers", {}, 401),
        ("an empty timestamp and no signature", {"x-slack-request-timestamp": ""}, 401),
        (
            "a timestamp that is not a number",
            {"x-slack-request-timestamp": "soon", "x-slack-signature": "v0=00"},
            401,
        ),
        (
            "a wrong signature",
            {
                "x-slack-request-timestamp": str(int(time.time())),
                "x-slack-signature": "v0=" + "0" * 64,
            },
            401,
        ),
        ("a stale timestamp", None, 401),
    ],
)
def test_forged_or_stale_requests_get_401(
    served: tuple[Harness, str], why: str, headers: dict[str, str] | None, status: int
) -> None:
    bot, url = served
    body = sp.slash_command("2026-10").encode()
    if headers is None:
        headers = signed(body, FORM, timestamp=int(time.time()) - 3600)
    got, _ = post(url, body, {"content-type": FORM, **headers})
    assert got == status
    assert bot.store.runs.recent() == []


def test_other_methods_and_oversized_bodies_are_refused(served: tuple[Harness, str]) -> None:
    bot, url = served
    assert post(url, b"", {}, method="GET")[0] == 405
    huge = sp.slash_command("x" * (6 * 1024 * 1024)).encode()
    status, answer = post(url, huge, signed(huge, FORM))
    assert status == 413 and b"xxxx" not in answer  # the text is not echoed back
    assert bot.store.runs.recent() == []


def test_a_long_close_text_is_refused_without_echoing_it(served: tuple[Harness, str]) -> None:
    bot, url = served
    body = sp.slash_command("<!channel> " + "y" * 3000).encode()
    status, answer = post(url, body, signed(body, FORM))
    reply = json.loads(answer)
    assert status == 200 and reply["text"].startswith("That is not a period.")
    assert "yyyy" not in reply["text"] and "<!channel>" not in reply["text"]
    assert bot.store.runs.recent() == []


def test_a_replayed_signed_close_is_answered_once(
    served: tuple[Harness, str], fake: FakeSlack
) -> None:
    bot, url = served
    body = sp.slash_command("2026-10").encode()
    headers = signed(body, FORM)
    first, answer = post(url, body, headers)
    again, replayed = post(url, body, headers)
    assert first == 200 and "Starting the October 2026 close" in json.loads(answer)["text"]
    assert again == 200 and replayed == b""
    bot.idle()
    assert len(bot.store.runs.recent()) == 1


def test_a_latin1_byte_in_the_data_fails_the_run_with_a_reason_not_a_500(
    fake: FakeSlack, db_path: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR, data)
    first_csv = sorted((data / "2026-10").glob("*.csv"))[0]
    first_csv.write_bytes(first_csv.read_bytes() + b"caf\xe9\n")
    h = Harness(fake, db_path, CLOSEBOT_DATA=str(data))
    try:
        response = h.command("2026-10")
        assert response.status == 200
        h.idle()
        (run,) = h.store.runs.recent()
        assert run.status == "failed" and "expected UTF-8 text" in (run.error or "")
        assert any("expected UTF-8 text" in t for t in h.thread_texts(h.store.runs.get(run.id)))
    finally:
        h.close()


def test_the_healthz_path_still_answers_beside_the_edge(served: tuple[Harness, str]) -> None:
    _, url = served
    status, body = post(url.replace("/slack/events", "/healthz"), b"", {}, method="GET")
    assert status == 200 and json.loads(body)["ok"] is True


# -- properties ---------------------------------------------------------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
BASE_ACTION: dict[str, Any] = {
    "type": "block_actions",
    "team": {"id": "T0001"},
    "user": {"id": "UALICE"},
    "api_app_id": "A0001",
    "container": {"type": "message", "message_ts": "1.1", "channel_id": "CFIN", "thread_ts": "1.0"},
    "channel": {"id": "CFIN"},
    "message": {"ts": "1.1", "blocks": []},
    "state": {"values": {}},
    "actions": [{"action_id": "closebot_submit", "value": "q", "block_id": "b"}],
}
BASE_EVENT: dict[str, Any] = {
    "type": "event_callback",
    "team_id": "T0001",
    "event_id": "Ev1",
    "event": {
        "type": "message",
        "user": "UALICE",
        "channel": "CFIN",
        "text": "hi",
        "ts": "2.0",
        "thread_ts": "1.0",
    },
}
ACTION_IDS = st.sampled_from(
    ["closebot_submit", "closebot_cancel", "closebot_stop", "closebot_retry", "answer", "x"]
)
FIELD_VALUES = st.one_of(JSONISH, st.text(max_size=6), ACTION_IDS)


@st.composite
def slackish(draw: st.DrawFn) -> dict[str, Any]:
    """A real payload's skeleton with some fields, nested ones too, replaced by anything."""
    payload = json.loads(json.dumps(draw(st.sampled_from([BASE_ACTION, BASE_EVENT]))))
    for key in draw(st.lists(st.sampled_from(sorted(payload)), max_size=3)):
        payload[key] = draw(FIELD_VALUES)
    for parent in ("actions", "event", "state", "user", "container"):
        inner = payload.get(parent)
        target = (
            inner[0] if isinstance(inner, list) and inner and isinstance(inner[0], dict) else inner
        )
        if isinstance(target, dict) and draw(st.booleans()):
            keys = [*sorted(target), "value", "action_id", "values", "id", "subtype", "bot_id"]
            target[draw(st.sampled_from(keys))] = draw(FIELD_VALUES)
    return payload


SLACKISH = slackish()


@given(st.binary(max_size=200), st.sampled_from([FORM, JSON, "text/plain", ""]))
def test_check_takes_any_bytes_and_only_ever_refuses(raw: bytes, content_type: str) -> None:
    try:
        edge.check(raw, signed(raw, content_type), sp.SECRET)
    except edge.Refused as e:
        assert 400 <= e.status < 500


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.one_of(SLACKISH, SLACKISH, JSONISH), st.booleans())
def test_whatever_passes_the_edge_bolt_answers_without_a_500(
    bolt_harness: Harness, payload: Any, as_form: bool
) -> None:
    if as_form:
        raw = urlencode({"payload": json.dumps(payload)})
        content_type = FORM
    else:
        raw = json.dumps(payload)
        content_type = JSON
    headers = sp.signed_headers(raw, content_type=content_type)
    try:
        edge.check(raw.encode(), headers, sp.SECRET)
    except edge.Refused:
        return
    response = bolt_harness.service.app.dispatch(BoltRequest(body=raw, headers=headers))
    assert response.status < 500, (payload, response.body)


@pytest.fixture
def bolt_harness(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


@pytest.mark.parametrize("as_form", [False, True])
def test_a_signed_200_kb_deeply_nested_body_is_refused_with_400_not_a_500(
    served: tuple[Harness, str], as_form: bool
) -> None:
    harness, url = served
    depth = 60_000 if as_form else 100_000  # URL-encoded, a bracket takes 3 bytes
    nested = "[" * depth + "]" * depth  # json.loads alone: RecursionError
    body = urlencode({"payload": nested}).encode() if as_form else nested.encode()
    assert 200_000 <= len(body) <= edge.MAX_BODY
    status, raw = post(url, body, signed(body, FORM if as_form else JSON))
    assert status == 400, raw
    assert b"nests deeper than" in raw
    assert harness.store.runs.recent() == []


def test_nesting_is_told_without_counting_brackets_inside_strings() -> None:
    shallow = json.dumps({"text": "[" * 5_000, "state": {"values": {"b": {"a": {"v": "]{"}}}}})
    assert edge.nesting_ok(shallow)
    deep = json.dumps(json.loads("[" * 65 + "]" * 65))
    assert not edge.nesting_ok(deep)
    assert edge.nesting_ok("[" * 64 + "]" * 64)
    assert not edge.nesting_ok("[" * 70)  # unbalanced: the parser would still recurse
    escaped = json.dumps({"t": 'a "quoted" [[[[ \\ ' * 40, "x": [[[1]]]})
    assert edge.nesting_ok(escaped)
    deep_in_string = json.dumps({"t": "]" * 10 + "[" * 200})  # only text
    assert edge.nesting_ok(deep_in_string)

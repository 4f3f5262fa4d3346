"""Event hygiene: every real payload Slack's own SDKs keep as a sample (tests/payloads/, sources
named in its README) is signed and posted through the real HTTP edge and answered 2xx; the
edge checks only what closebot reads. ssl_check is answered 200; tokens_revoked and
app_uninstalled pause the workspace's runs until a token works again; a request nothing
listens to is acknowledged with one log line; a file or a broadcast reply in a run's thread
reaches the agent; a mention is answered in its thread."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.sandbox.slack_api import FakeSlack
from bot.slack.http.server import health, wsgi_app
from tests import slack_payloads as sp
from tests.slack_harness import FORM, Harness

PAYLOADS = Path(__file__).parent / "payloads"
SAMPLES = sorted(PAYLOADS.rglob("*.json"))
JSON = "application/json"


def environ(body: str, content_type: str, *, signed: bool = True) -> dict[str, Any]:
    raw = body.encode()
    env: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/slack/events",
        "CONTENT_LENGTH": str(len(raw)),
        "CONTENT_TYPE": content_type,
        "wsgi.input": io.BytesIO(raw),
        "QUERY_STRING": "",
        "SERVER_PROTOCOL": "HTTP/1.1",
    }
    if signed:
        for name, value in sp.signed_headers(body, content_type=content_type).items():
            if name != "content-type":
                env["HTTP_" + name.upper().replace("-", "_")] = value
    return env


def post(bot: Harness, body: str, content_type: str, *, signed: bool = True) -> tuple[int, bytes]:
    status: list[str] = []
    app = wsgi_app(bot.service)
    answer = app(environ(body, content_type, signed=signed), lambda s, h, *rest: status.append(s))
    raw = b"".join(answer)
    getattr(answer, "close", lambda: None)()
    return int(status[0].split()[0]), raw


def as_sent(path: Path) -> tuple[str, str]:
    """The sample as Slack sends it: events as JSON, interactions as a form's payload field,
    a slash command as form fields."""
    data = json.loads(path.read_text())
    if data.get("command") is not None and "type" not in data:
        fields = {k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}
        fields["command"] = fields["command"] or "/unknown"
        fields["user_id"] = fields["user_id"] or "UNOBODY"
        fields["channel_id"] = fields["channel_id"] or "CNOWHERE"
        return urlencode(fields), FORM
    if data.get("type") == "event_callback" or "event" in data:
        # The java samples are templates with empty strings; Slack fills the envelope's type.
        data["type"] = data.get("type") or "event_callback"
        return json.dumps(data), JSON
    return urlencode({"payload": json.dumps(data)}), FORM


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def test_the_samples_are_there_with_their_sources_named() -> None:
    assert len(SAMPLES) >= 100
    readme = (PAYLOADS / "README.md").read_text()
    assert "slackapi/java-slack-sdk" in readme and "slackapi/bolt-python" in readme
    names = {p.stem for p in SAMPLES}
    for needed in (
        "ChannelCreatedPayload",
        "ChannelRenamePayload",
        "ImCreatedPayload",
        "TeamJoinPayload",
        "UserChangePayload",
        "MemberJoinedChannelPayload",
        "TokensRevokedPayload",
        "AppUninstalledPayload",
        "thread_started_event_body",
    ):
        assert needed in names


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_real_sample_is_answered_without_a_4xx_or_5xx(
    bot: Harness, path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body, content_type = as_sent(path)
    with caplog.at_level(logging.INFO):
        status, raw = post(bot, body, content_type)
        bot.idle()
    assert 200 <= status < 300, (status, raw)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    # Bolt's 6–8 lines of suggestions for an unhandled request never appear
    assert "@app." not in caplog.text and "Unhandled request (" not in caplog.text


def test_ssl_check_is_answered_200_and_changes_nothing(bot: Harness) -> None:
    for signed in (True, False):
        status, raw = post(bot, "ssl_check=1&token=xxx", FORM, signed=signed)
        assert (status, raw) == (200, b"")
    assert bot.store.runs.recent() == []


def test_an_unhandled_request_is_acknowledged_in_one_line(
    bot: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    event = {"type": "pin_added", "user": "UALICE", "channel_id": "CFIN", "event_ts": "1.2"}
    with caplog.at_level(logging.DEBUG, logger="slack_bolt"), caplog.at_level(logging.INFO):
        status, _ = post(bot, sp.event(event, event_id="EvPin"), JSON)
    assert status == 200
    said = [
        r.getMessage()
        for r in caplog.records
        if "pin_added" in r.getMessage() and r.name != "bot.slack.http.server"  # not the access log
    ]
    assert said == ["unhandled event pin_added: acknowledged"]


def sample(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(next(PAYLOADS.rglob(f"{name}.json")).read_text())
    data["type"] = data.get("type") or "event_callback"  # a template's empty envelope type
    return data


@pytest.mark.parametrize("name", ["TokensRevokedPayload", "AppUninstalledPayload"])
def test_a_revoked_token_pauses_every_run_and_a_working_token_resumes_them(
    bot: Harness, fake: FakeSlack, name: str
) -> None:
    run = bot.start()
    assert bot.store.runs.get(run.id).status == "waiting"
    body = sample(name)
    if name.startswith("Tokens"):
        body["event"]["tokens"] = {"oauth": [], "bot": ["UBOT"]}
    fake.fail("auth.test", error="token_revoked")  # the watchdog's next check
    status, _ = post(bot, json.dumps(body), JSON)
    assert status == 200
    reason = "tokens_revoked" if name.startswith("Tokens") else "app_uninstalled"
    assert fake.wait_for(lambda: bot.service.work.paused)
    bot.idle()
    # healthz says why, and the run's audit trail records the pause; its state is kept
    code, said = health(bot.service)
    assert code == 503 and said["slack"] == reason
    assert bot.store.audit.events(run.id, kind="paused")[-1].detail == {"reason": reason}
    assert bot.store.runs.get(run.id).status == "waiting"
    # While paused, an answer is recorded but the run's work waits; no Slack call is tried.
    calls = len(fake.calls)
    bot.submit(bot.pending(run.id), bot.recommended_picks(bot.pending(run.id)))
    bot.idle()
    assert not [c for c in fake.calls[calls:] if c.method.startswith("chat.")]
    assert bot.service.work.heal() == {"forms": [], "settled": [], "runs": [], "failed": []}
    # Slack still refuses the token: still paused, healthz unchanged.
    assert bot.service.work.check_slack() == reason and bot.service.work.paused
    # A token that works again: the runs continue.
    assert bot.service.work.check_slack() == "ok" and not bot.service.work.paused
    bot.idle()
    assert health(bot.service)[0] == 200
    bot.finish(run.id)
    assert bot.store.runs.get(run.id).status == "done"


def held_texts(bot: Harness, run_id: str) -> list[str]:
    return [
        b["text"]
        for m in bot.store.transcript.messages(run_id)
        if m.role == "user"
        for b in m.content
        if b.get("type") == "text"
    ]


@pytest.mark.parametrize("subtype", ["thread_broadcast", "file_share"])
def test_a_file_or_a_broadcast_reply_in_a_runs_thread_reaches_the_agent(
    bot: Harness, subtype: str
) -> None:
    run = bot.start()
    event: dict[str, Any] = {
        "type": "message",
        "subtype": subtype,
        "channel": run.channel,
        "user": "UALICE",
        "text": "Here is the corrected JIB.",
        "ts": "1761909999.000100",
        "thread_ts": run.thread_ts,
    }
    if subtype == "file_share":
        event["files"] = [{"id": "F1", "name": "jib-fixed.csv", "title": "jib-fixed.csv"}]
    post(bot, sp.event(event, event_id=f"Ev{subtype}"), JSON)
    bot.idle()
    held = bot.store.inbox.take(run.id) or []
    texts = [m["text"] for m in held] or held_texts(bot, run.id)
    assert any("Here is the corrected JIB." in t for t in texts), texts
    if subtype == "file_share":
        assert any("jib-fixed.csv" in t for t in texts), texts


def test_a_mention_in_a_thread_is_answered_in_that_thread(bot: Harness, fake: FakeSlack) -> None:
    with fake.lock:
        parent = fake.add_message("CFIN", text="month end?", user="UALICE")
        mention = fake.add_message(
            "CFIN", text="<@UBOT> hello", user="UALICE", thread_ts=parent["ts"]
        )
    event = {
        "type": "app_mention",
        "channel": "CFIN",
        "user": "UALICE",
        "text": "<@UBOT> hello",
        "ts": mention["ts"],
        "thread_ts": parent["ts"],
    }
    status, _ = post(bot, sp.event(event, event_id="EvMention"), JSON)
    assert status == 200
    bot.idle()
    assert fake.wait_for(lambda: bool(fake.to("chat.postMessage")))
    (reply,) = fake.to("chat.postMessage")
    assert reply["thread_ts"] == parent["ts"]


def test_after_the_token_is_taken_back_no_call_goes_out_with_it_but_the_check(
    bot: Harness, fake: FakeSlack
) -> None:
    run = bot.start()
    body = sample("TokensRevokedPayload")
    body["event"]["tokens"] = {"oauth": [], "bot": ["UBOT"]}
    fake.fail("auth.test", error="token_revoked", times=10)
    assert post(bot, json.dumps(body), JSON)[0] == 200
    assert fake.wait_for(lambda: bot.service.work.paused)
    bot.idle()
    calls = len(fake.calls)
    # what people do meanwhile: answer the form, start another close, ask about this one,
    # open the Home tab; and the watchdog's passes
    bot.submit(bot.pending(run.id), bot.recommended_picks(bot.pending(run.id)))
    said = bot.command("2026-11")
    assert "took closebot's token back (tokens_revoked)" in said.body
    bot.command("2026-10", user="UAPPROVER")
    bot.dispatch(
        sp.event(
            {"type": "app_home_opened", "user": "UALICE", "channel": "DUALICE", "tab": "home"},
            event_id="EvHomeRevoked",
        ),
        JSON,
    )
    bot.service.work.heal()
    bot.service.work.remind_due()
    bot.idle()
    assert [r.status for r in bot.store.runs.recent()] == ["waiting"]  # nothing new started
    # only the watchdog's auth.test, which learns when a token works again
    assert bot.service.work.check_slack() == "tokens_revoked"
    assert [c.method for c in fake.calls[calls:]] == ["auth.test"]

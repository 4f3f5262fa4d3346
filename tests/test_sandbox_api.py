"""The fake Web API answers like Slack, faults can be injected, and the sandbox's requests are Slack's."""

from __future__ import annotations

import json
import re
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import blocks
from bot.core.questions import parse_ask
from bot.sandbox.client import ActionError, SlackClient, form_state
from bot.sandbox.run import APPROVER, COLLEAGUE, STARTER, Sandbox
from bot.sandbox.slack_api import BOT_USER, Channel, FakeSlack, fake_slack

TOKEN = "xoxb-api-tests"


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    # the Web API as any app may use it: closebot itself never reacts, so its manifest
    # grants no reactions:write (tests/test_slack_scopes.py checks the shipped grants)
    with fake_slack(token=TOKEN) as served:
        served.grant("reactions:write")
        yield served


@pytest.fixture
def client(fake: FakeSlack) -> WebClient:
    return WebClient(token=TOKEN, base_url=fake.api_url)  # no retry handlers: see each answer


def error_of(call: Any) -> SlackApiError:
    with pytest.raises(SlackApiError) as caught:
        call()
    return caught.value


def post_json(url: str, body: dict[str, Any], **headers: str) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


# -- fault injection ---------------------------------------------------------------


def test_the_next_calls_of_a_method_fail_with_a_slack_error(
    fake: FakeSlack, client: WebClient
) -> None:
    fake.fail("chat.postMessage", error="not_in_channel", times=2)
    for _ in range(2):
        e = error_of(lambda: client.chat_postMessage(channel="CFIN", text="hi"))
        assert e.response.status_code == 200 and e.response["error"] == "not_in_channel"
    assert client.chat_postMessage(channel="CFIN", text="hi")["ok"]
    assert client.chat_update(channel="CFIN", ts=next(iter(fake.messages)), text="edited")["ok"]
    assert len(fake.to("chat.postMessage")) == 3


def test_ratelimited_comes_with_retry_after_and_an_http_status_fails_the_call(
    fake: FakeSlack, client: WebClient
) -> None:
    fake.fail("chat.update", error="ratelimited", retry_after=7)
    fake.fail("reactions.add", status=503)
    limited = error_of(lambda: client.chat_update(channel="CFIN", ts="1.2", text="x"))
    assert limited.response.status_code == 429 and limited.response["error"] == "ratelimited"
    assert limited.response.headers["Retry-After"] == "7"
    down = error_of(lambda: client.reactions_add(channel="CFIN", timestamp="1.2", name="eyes"))
    assert down.response.status_code == 503
    assert (
        error_of(
            lambda: client.reactions_add(channel="CFIN", timestamp="1.2", name="eyes")
        ).response["error"]
        == "message_not_found"
    )  # the fault is used up: the real answer


def test_the_bots_client_waits_out_a_rate_limit(fake: FakeSlack) -> None:
    from bot.core.config import Settings
    from bot.slack.app import web_client

    fake.rate_limit["chat.postMessage"] = 1
    bot_client = web_client(
        Settings.from_env({"SLACK_API_URL": fake.api_url, "SLACK_BOT_TOKEN": TOKEN})
    )
    assert bot_client.chat_postMessage(channel="CFIN", text="after a 429")["ok"]
    assert len(fake.to("chat.postMessage")) == 2


def test_a_fault_needs_an_error_or_a_status(fake: FakeSlack) -> None:
    with pytest.raises(ValueError, match="error code, an HTTP status"):
        fake.fail("chat.postMessage")


# -- Slack's answers -------------------------------------------------------------


def test_a_wrong_token_is_invalid_auth_and_an_unknown_method_says_so(fake: FakeSlack) -> None:
    wrong = WebClient(token="xoxb-someone-else", base_url=fake.api_url)
    assert error_of(wrong.auth_test).response["error"] == "invalid_auth"
    right = WebClient(token=TOKEN, base_url=fake.api_url)
    assert right.auth_test()["user_id"] == BOT_USER
    assert error_of(lambda: right.api_call("chat.teleport")).response["error"] == "unknown_method"
    assert fake.answer("auth.test", {})[1]["ok"]  # called directly, a test is already trusted


def test_channels_and_membership_are_checked() -> None:
    with fake_slack(
        token=TOKEN,
        channels=[Channel("CIN", "in", {BOT_USER, "UALICE"}), Channel("COUT", "out", {"UALICE"})],
        auto_channels=False,
    ) as fake:
        client = WebClient(token=TOKEN, base_url=fake.api_url)
        assert client.chat_postMessage(channel="CIN", text="hello")["ok"]
        out = error_of(lambda: client.chat_postMessage(channel="COUT", text="hello"))
        assert out.response["error"] == "not_in_channel"
        missing = error_of(lambda: client.chat_postMessage(channel="CNOPE", text="hello"))
        assert missing.response["error"] == "channel_not_found"
        stranger = error_of(
            lambda: client.chat_postEphemeral(channel="CIN", user="UBOB", text="psst")
        )
        assert stranger.response["error"] == "user_not_found"


def test_messages_threads_updates_reactions_and_empty_posts(
    fake: FakeSlack, client: WebClient
) -> None:
    root = client.chat_postMessage(channel="CFIN", text="root")["ts"]
    reply = client.chat_postMessage(channel="CFIN", text="reply", thread_ts=root)["ts"]
    nested = client.chat_postMessage(channel="CFIN", text="to a reply", thread_ts=reply)["ts"]
    assert [m["ts"] for m in fake.thread(root)] == [reply, nested]  # a reply's ts means its thread
    with pytest.warns(UserWarning, match="text"):  # slack_sdk warns too
        empty = error_of(lambda: client.chat_postMessage(channel="CFIN", text=""))
    assert empty.response["error"] == "no_text"
    assert (
        error_of(lambda: client.chat_update(channel="CFIN", ts="9.9", text="x")).response["error"]
        == "message_not_found"
    )
    client.chat_update(channel="CFIN", ts=root, text="root, edited", blocks=[{"type": "divider"}])
    assert fake.messages[root]["text"] == "root, edited" and fake.messages[root]["edited"]
    assert fake.messages[root]["blocks"][0]["block_id"]  # Slack names unnamed blocks
    client.reactions_add(channel="CFIN", timestamp=root, name="white_check_mark")
    assert (
        error_of(
            lambda: client.reactions_add(channel="CFIN", timestamp=root, name="white_check_mark")
        ).response["error"]
        == "already_reacted"
    )
    assert fake.messages[root]["reactions"] == [
        {"name": "white_check_mark", "users": [BOT_USER], "count": 1}
    ]


def test_files_upload_into_the_thread_and_download(fake: FakeSlack, client: WebClient) -> None:
    root = client.chat_postMessage(channel="CFIN", text="root")["ts"]
    client.files_upload_v2(
        channel="CFIN",
        thread_ts=root,
        file_uploads=[{"filename": "log.csv", "title": "Decision log", "content": "a,b\n1,2\n"}],
    )
    (shared,) = fake.thread(root)
    (file,) = shared["files"]
    assert file["title"] == "Decision log" and file["name"] == "log.csv"
    request = urllib.request.Request(
        file["url_private_download"], headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.read() == b"a,b\n1,2\n"
        assert "attachment" in response.headers["Content-Disposition"]


def test_a_response_url_answers_ephemerally_replaces_and_runs_out(
    fake: FakeSlack, client: WebClient
) -> None:
    ts = client.chat_postMessage(channel="CFIN", text="a form")["ts"]
    url = fake.response_url(channel="CFIN", user="UALICE", message_ts=ts)
    assert post_json(url, {"text": "just for you"}) == (200, {"ok": True})
    (note,) = fake.ephemerals
    assert note["visible_to"] == "UALICE" and note["text"] == "just for you"
    assert post_json(url, {"replace_original": True, "text": "replaced"})[0] == 200
    assert fake.messages[ts]["text"] == "replaced"
    assert post_json(url, {"response_type": "in_channel", "text": "for all"})[0] == 200
    bad = post_json(
        url, {"blocks": [{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}]}
    )
    assert bad[0] == 400 and bad[1]["error"] == "invalid_blocks"
    assert post_json(url, {"text": "fifth"})[0] == 200
    assert post_json(url, {"text": "sixth"}) == (404, {"ok": False, "error": "used_url"})


# -- the sandbox: Slack's requests to the real bot ---------------------------------------


def _ephemerals(sandbox: Sandbox, user: str) -> list[str]:
    return [e["text"] for e in sandbox.fake.ephemerals if e["visible_to"] == user]


def test_a_slash_command_is_signed_and_the_bot_answers_privately(sandbox: Sandbox) -> None:
    said = sandbox.client.say(user=STARTER.id, channel="CFINANCE", text="/close 2026-10")
    assert said["ok"]
    assert any("Starting the October 2026 close" in t for t in _ephemerals(sandbox, STARTER.id))
    assert sandbox.fake.wait_for(
        lambda: any(
            b["type"] == "actions" for m in sandbox.fake.messages.values() for b in m["blocks"]
        ),
        timeout=30,
    )
    (run,) = sandbox.store.runs.recent()
    assert run.started_by == STARTER.id and run.channel == "CFINANCE"


def test_requests_signed_with_another_secret_are_refused(sandbox: Sandbox) -> None:
    impostor = SlackClient(
        sandbox.fake, signing_secret="not-the-secret", events_url=sandbox.client.events_url
    )
    try:
        answer = impostor.say(user=COLLEAGUE.id, channel="CFINANCE", text="/close 2026-10")
    finally:
        impostor.close()
    assert answer == {"ok": False, "error": "dispatch_failed", "status": 401}
    assert _ephemerals(sandbox, COLLEAGUE.id) == ['/close failed with the error "dispatch_failed"']
    assert sandbox.store.runs.recent() == []


def test_a_mention_reaches_the_bot_as_an_event_and_other_commands_get_slackbot(
    sandbox: Sandbox,
) -> None:
    sandbox.client.say(user=APPROVER.id, channel="CGENERAL", text="@closebot what can you do?")
    (mine,) = [m for m in sandbox.fake.messages.values() if m.get("user") == APPROVER.id]
    assert mine["text"] == f"<@{BOT_USER}> what can you do?"
    assert sandbox.fake.wait_for(lambda: bool(sandbox.fake.thread(mine["ts"])), timeout=30)
    assert "Usage" in sandbox.fake.thread(mine["ts"])[0]["text"]
    assert not sandbox.client.command(
        user=APPROVER.id, channel="CGENERAL", command="/lunch", text=""
    )["ok"]
    assert "not a valid command" in _ephemerals(sandbox, APPROVER.id)[-1]
    with pytest.raises(ActionError, match="type a message"):
        sandbox.client.say(user=APPROVER.id, channel="CGENERAL", text="  ")


def test_slack_sends_the_bot_only_the_events_the_manifest_subscribes_to(
    sandbox: Sandbox,
) -> None:
    """No message.channels in manifest.yml: a plain message in a channel stays in the
    channel (Slack never sends it); a mention arrives as app_mention; a DM as message.im."""
    client = sandbox.client
    plain = client.say(user=APPROVER.id, channel="CGENERAL", text="lunch anyone?")
    assert [(e["type"], e["ts"]) for e in client.withheld] == [("message", plain["ts"])]
    mentioned = client.say(user=APPROVER.id, channel="CGENERAL", text="@closebot hi")
    # its message event is withheld too; the app_mention is sent, and answered
    assert [e["type"] for e in client.withheld if e["ts"] == mentioned["ts"]] == ["message"]
    assert sandbox.fake.wait_for(lambda: bool(sandbox.fake.thread(mentioned["ts"])), timeout=30)
    client.home_opened(user=APPROVER.id)
    assert [e["type"] for e in client.withheld] == ["message", "message"]


def test_an_external_select_asks_the_bot_for_options(sandbox: Sandbox) -> None:
    sandbox.client.say(user=STARTER.id, channel="CFINANCE", text="/close 2026-10")
    assert sandbox.fake.wait_for(lambda: bool(sandbox.store.runs.recent()), timeout=30)
    service = sandbox.service
    assert service is not None
    assert service.runner.wait_idle(30)
    (run,) = sandbox.store.runs.recent()
    options = [{"label": f"Well {i:03d} " + "x" * 60, "description": "d" * 150} for i in range(100)]
    huge = parse_ask(
        {
            "context": "Map the property",
            "questions": [{"question": "Which well?", "options": options, "recommended": 42}] * 5,
        }
    )
    record, _ = sandbox.store.questions.create(
        run.id, question_id="toolu_huge", context=huge.context, questions=huge.questions_json()
    )
    service.presenter.post_form(record)
    form = sandbox.fake.messages[sandbox.store.questions.get("toolu_huge").message_ts or ""]
    menu = next(b for b in form["blocks"] if b["type"] == "input")
    assert menu["element"]["type"] == "external_select"
    found = sandbox.client.options(
        user=STARTER.id,
        channel="CFINANCE",
        message_ts=form["ts"],
        block_id=menu["block_id"],
        action_id=blocks.ANSWER_ACTION,
        value="well 04",
    )
    assert [o["value"] for o in found] == [str(n) for n in range(41, 51)]
    state = form_state(form["blocks"], {menu["block_id"]: found[1]})
    assert state[menu["block_id"]][blocks.ANSWER_ACTION] == {
        "type": "external_select",
        "selected_option": {"text": found[1]["text"], "value": "42"},
    }


def test_form_state_is_what_slack_sends_and_refuses_options_the_form_never_had() -> None:
    ask = parse_ask(
        {
            "context": "c",
            "questions": [
                {
                    "question": "One?",
                    "options": [{"label": "a"}, {"label": "b"}],
                    "allow_other": True,
                },
                {
                    "question": "Many?",
                    "type": "multiple_choice",
                    "options": [{"label": "x"}, {"label": "y"}],
                },
                {"question": "Say?", "type": "free_text"},
            ],
        }
    )
    # a card of three questions: a row each (q1, q2, q3), then its one Other box (shown once
    # a row is set to Other…: blocks/boxes.py)
    form = blocks.question_form(
        ask, question_id="q", who_may_answer="x", nonce="n", picks={1: blocks.OTHER_VALUE}
    )
    ids = [b["block_id"] for b in form if b["type"] == "input"]
    assert [blocks.parse_block_id(i) for i in ids] == [("q", 1), ("q", 2), ("q", 3), ("o", 0)]
    state = form_state(form, {ids[0]: "2", ids[1]: ["1", "2"], ids[2]: "why not"})
    assert state[ids[0]]["answer"]["selected_option"]["value"] == "2"
    assert state[ids[3]]["other"] == {"type": "plain_text_input", "value": None}
    assert [o["value"] for o in state[ids[1]]["answer"]["selected_options"]] == ["1", "2"]
    assert state[ids[2]]["answer"]["value"] == "why not"
    responses = blocks.read_form(ask, state)
    assert responses[1].selected == (2,) and responses[2].selected == (1, 2)
    assert responses[3].text == "why not"
    with pytest.raises(ActionError, match="not one of this menu's options"):
        form_state(form, {ids[0]: "7"})


def test_a_sandbox_started_again_on_the_same_files_continues_the_close(db_path: Path) -> None:
    from bot.close.playbook import PlaybookModel
    from bot.store import Store

    workspace = db_path.with_name("sandbox.slack.json")

    def started() -> tuple[Sandbox, Store]:
        store = Store(db_path)
        running = Sandbox(store=store, model=PlaybookModel(), port=0, workspace_file=workspace)
        running.start()
        return running, store

    first, store = started()
    try:
        first.client.say(user=STARTER.id, channel="CFINANCE", text="/close 2026-10")
        assert first.fake.wait_for(lambda: bool(store.runs.recent()), timeout=30)
        assert first.service is not None and first.service.runner.wait_idle(30)
        (run,) = store.runs.recent()
        pending = store.questions.pending(run.id)
        assert pending is not None and pending.message_ts
    finally:
        first.stop()
        store.close()
    assert workspace.exists()

    second, store = started()
    try:
        form = second.fake.messages[pending.message_ts]  # the channel came back with the form
        submit = next(
            (b["block_id"], e)
            for b in form["blocks"]
            if b["type"] == "actions"
            for e in b["elements"]
            if e["action_id"] == blocks.SUBMIT_ACTION
        )
        picks = {
            b["block_id"]: next(
                (o["value"] for o in b["element"]["options"] if "⭐" in o["text"]["text"]),
                b["element"]["options"][0]["value"],
            )
            for b in form["blocks"]
            if b["type"] == "input" and "options" in b["element"]
        }
        answer = second.client.action(
            user=STARTER.id,
            channel="CFINANCE",
            message_ts=form["ts"],
            block_id=submit[0],
            action_id=submit[1]["action_id"],
            picks=picks,
        )
        assert answer["ok"]
        assert second.fake.wait_for(
            lambda: (
                store.questions.get(pending.id).status == "answered"
                and not any(
                    b["type"] == "input" for b in second.fake.messages[form["ts"]]["blocks"]
                )
            ),
            timeout=30,
        )
    finally:
        second.stop()
        store.close()


def test_a_workspace_file_that_is_not_one_is_refused_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "x.slack.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match=f"cannot read the sandbox workspace {bad}"):
        FakeSlack().load(bad)


def test_the_page_endpoints_take_only_json_and_name_what_is_missing(sandbox: Sandbox) -> None:
    url = f"{sandbox.url}sandbox/say"
    token = {"X-Sandbox-Token": sandbox.page.token}
    form = urllib.request.Request(
        url, data=b'{"user": "UALICE"}', headers={"Content-Type": "text/plain", **token}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(form, timeout=10)
    assert refused.value.code == 415
    assert post_json(url, {"user": STARTER.id, "channel": "CFINANCE"}, **token) == (
        400,
        {"ok": False, "error": "missing 'text'"},
    )
    unknown = {"user": "UNOBODY", "channel": "CFINANCE", "text": "hi"}
    assert post_json(url, unknown, **token)[1]["error"] == (
        "no such person in the sandbox: 'UNOBODY'"
    )
    assert sandbox.store.runs.recent() == [] and not sandbox.fake.messages


def raw_post(sandbox: Sandbox, path: str, body: bytes, headers: dict[str, str]) -> int:
    """A POST over a plain socket, so Host is exactly what the test says."""
    port = int(sandbox.url.rstrip("/").rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        conn.sendall(
            f"POST {path} HTTP/1.1\r\n{head}Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + body
        )
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


@pytest.mark.parametrize(
    "headers",
    [
        # a page on another origin, with the content type a simple (no-preflight) POST may send
        {"Content-Type": "text/plain; x=application/json", "Origin": "http://evil.example"},
        {"Content-Type": "application/json", "Origin": "http://evil.example"},
        # the token itself, but from another origin or under a foreign Host (DNS rebinding)
        {"Content-Type": "application/json", "Origin": "http://evil.example", "token": "1"},
        {"Content-Type": "application/json", "Host": "evil.example", "token": "1"},
        {"Content-Type": "application/json", "Host": "evil.example:80", "token": "1"},
        # the right Host and no Origin (curl, another program), but not the page's token
        {"Content-Type": "application/json"},
        {"Content-Type": "application/json", "X-Sandbox-Token": "guessed"},
    ],
)
def test_cross_origin_foreign_host_and_tokenless_sandbox_writes_are_refused(
    sandbox: Sandbox, headers: dict[str, str]
) -> None:
    port = sandbox.url.rstrip("/").rsplit(":", 1)[1]
    sent = {"Host": f"127.0.0.1:{port}", **headers}
    if sent.pop("token", None):
        sent["X-Sandbox-Token"] = sandbox.page.token
    say = json.dumps({"user": STARTER.id, "channel": "CFINANCE", "text": "/close 2026-10"})
    for path in ("/sandbox/say", "/sandbox/react", "/sandbox/action"):
        assert raw_post(sandbox, path, say.encode(), sent) == 403, (path, sent)
    assert sandbox.store.runs.recent() == [] and not sandbox.fake.messages


def test_the_page_carries_its_token_and_a_write_with_it_from_the_page_origin_acts(
    sandbox: Sandbox,
) -> None:
    with urllib.request.urlopen(sandbox.url, timeout=10) as response:
        html = response.read().decode()
    found = re.search(r'<meta name="sandbox-token" content="([^"]+)">', html)
    assert found and found.group(1) == sandbox.page.token
    origin = sandbox.url.rstrip("/")
    say = {"user": STARTER.id, "channel": "CFINANCE", "text": "hello"}
    status, body = post_json(
        f"{sandbox.url}sandbox/say", say, Origin=origin, **{"X-Sandbox-Token": found.group(1)}
    )
    assert (status, body["ok"]) == (200, True)
    assert [m["text"] for m in sandbox.fake.messages.values()] == ["hello"]

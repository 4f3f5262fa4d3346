"""The Web API client keeps its connections: one per thread, reused, and healed when the
server has closed one — through slack_sdk's own request and retry code, against the fake."""

from __future__ import annotations

import http.client
import threading
from pathlib import Path

import pytest

from bot.sandbox.slack_api import FakeSlack
from bot.slack.app import web_client
from bot.slack.client import KeepAliveWebClient
from tests.slack_harness import Harness, settings_for


def client_for(fake: FakeSlack, db_path: Path) -> KeepAliveWebClient:
    client = web_client(settings_for(fake, db_path))
    assert isinstance(client, KeepAliveWebClient)
    return client


def test_calls_from_one_thread_share_one_connection(fake: FakeSlack, db_path: Path) -> None:
    client = client_for(fake, db_path)
    for n in range(10):
        assert client.chat_postMessage(channel="CFIN", text=f"note {n}")["ok"]
    assert fake.connections == 1 and client.connections_opened == 1
    assert len(fake.to("chat.postMessage")) == 10


def test_each_thread_has_its_own_connection(fake: FakeSlack, db_path: Path) -> None:
    client = client_for(fake, db_path)

    def post() -> None:
        for _ in range(3):
            client.chat_postMessage(channel="CFIN", text="hi")

    threads = [threading.Thread(target=post) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert len(fake.to("chat.postMessage")) == 12
    assert fake.connections == 4


def test_a_connection_the_server_closed_is_replaced_and_nothing_is_posted_twice(
    fake: FakeSlack, db_path: Path
) -> None:
    client = client_for(fake, db_path)
    fake.hang_up = True
    for n in range(3):
        assert client.chat_postMessage(channel="CFIN", text=f"note {n}")["ok"]
    assert [p["text"] for p in fake.to("chat.postMessage")] == ["note 0", "note 1", "note 2"]
    assert fake.connections == 3  # each call found its kept connection closed and made a new one


def bare_client(fake: FakeSlack) -> KeepAliveWebClient:
    """No retry handlers of slack_sdk's: only this layer's own second try is left."""
    return KeepAliveWebClient(token="xoxb-test-token", base_url=fake.api_url, retry_handlers=[])


def test_a_call_the_server_hung_up_on_is_sent_once_more_on_a_new_connection(
    fake: FakeSlack,
) -> None:
    client = bare_client(fake)
    assert client.chat_postMessage(channel="CFIN", text="first")["ok"]
    fake.drop = 1  # the kept connection is closed as the next call arrives, unanswered
    assert client.chat_postMessage(channel="CFIN", text="second")["ok"]
    assert [p["text"] for p in fake.to("chat.postMessage")] == ["first", "second"]
    assert fake.connections == 2 and client.connections_opened == 2


def test_a_call_on_a_new_connection_is_never_sent_twice(fake: FakeSlack) -> None:
    client = bare_client(fake)
    fake.drop = 2
    with pytest.raises(http.client.RemoteDisconnected):
        client.chat_postMessage(channel="CFIN", text="once")
    assert fake.drop == 1  # one attempt on the new connection, not a second
    assert fake.to("chat.postMessage") == [] and fake.connections == 1


def test_a_rate_limit_is_still_waited_out_on_a_kept_connection(
    fake: FakeSlack, db_path: Path
) -> None:
    client = client_for(fake, db_path)
    fake.rate_limit["chat.postMessage"] = 1
    assert client.chat_postMessage(channel="CFIN", text="x")["ok"]
    assert len(fake.to("chat.postMessage")) == 2  # the 429, then the retry after Retry-After
    assert fake.connections == 1


def test_a_whole_close_in_slack_opens_a_handful_of_connections(
    fake: FakeSlack, db_path: Path
) -> None:
    bot = Harness(fake, db_path)
    run = bot.start()
    bot.finish(run.id)
    calls = len(fake.calls)
    client = bot.service.app.client
    assert isinstance(client, KeepAliveWebClient)
    bot.close()
    # one per thread that talked to Slack (the runner's pools), not one per call
    assert calls > 40 and fake.connections <= 12, (calls, fake.connections)

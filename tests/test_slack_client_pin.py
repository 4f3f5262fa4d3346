"""The one private slack_sdk API closebot leans on, pinned: KeepAliveWebClient
(bot/slack/client.py) overrides WebClient._perform_urllib_http_request_internal, which has
no public door. An upgrade of slack-sdk that renames it, changes its arguments or stops
calling it from the public call path fails here, before a deploy opens a connection per
call again (or breaks every call)."""

from __future__ import annotations

import inspect
from urllib.request import Request

from slack_sdk import WebClient

from bot.sandbox.slack_api import FakeSlack
from bot.slack.client import KeepAliveWebClient

PRIVATE = "_perform_urllib_http_request_internal"


def test_the_private_method_exists_with_the_arguments_the_override_takes() -> None:
    stock = getattr(WebClient, PRIVATE, None)
    assert stock is not None, f"slack_sdk's WebClient no longer has {PRIVATE}"
    assert list(inspect.signature(stock).parameters) == ["self", "url", "req"]
    ours = inspect.signature(getattr(KeepAliveWebClient, PRIVATE))
    assert list(ours.parameters) == ["self", "url", "req"]
    # the public call path still goes through it (not, say, a renamed twin)
    assert PRIVATE in inspect.getsource(WebClient._perform_urllib_http_request)


def test_the_override_answers_as_slack_sdks_own_method_does(fake: FakeSlack) -> None:
    """Same keys, status and body for the same request: what slack_sdk reads from it."""
    client = KeepAliveWebClient(token="xoxb-test-token", base_url=fake.api_url)
    url = f"{fake.api_url}auth.test"

    def request() -> Request:
        return Request(
            url,
            data=b"",
            headers={"Authorization": "Bearer xoxb-test-token"},
            method="POST",
        )

    stock = getattr(WebClient, PRIVATE)(client, url, request())
    ours = getattr(client, PRIVATE)(url, request())
    assert set(ours) == set(stock) == {"status", "headers", "body"}
    assert ours["status"] == stock["status"] == 200
    assert ours["body"] == stock["body"]


def test_calls_through_the_public_api_go_over_the_kept_alive_connection(fake: FakeSlack) -> None:
    client = KeepAliveWebClient(token="xoxb-test-token", base_url=fake.api_url)
    for _ in range(3):
        assert client.auth_test()["ok"]
    assert client.chat_postMessage(channel="CFIN", text="hi")["ok"]
    assert client.connections_opened == 1  # the override ran, and kept its connection

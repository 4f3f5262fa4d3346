"""The fake Slack Web API now lives in the package (bot.sandbox.slack_api); kept for imports."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bot.sandbox.slack_api import BOT_USER, Call, FakeSlack

TEST_TOKEN = "xoxb-test-token"


@contextmanager
def fake_slack() -> Iterator[FakeSlack]:
    """The fake on 127.0.0.1 (port 0), accepting only the tests' bot token."""
    from bot.sandbox.slack_api import fake_slack as serve

    with serve(token=TEST_TOKEN) as fake:
        yield fake


__all__ = ["BOT_USER", "TEST_TOKEN", "Call", "FakeSlack", "fake_slack"]

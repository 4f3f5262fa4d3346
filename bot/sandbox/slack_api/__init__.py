"""A fake Slack Web API on loopback: the methods closebot calls, with Slack's answers and errors.

It keeps a small workspace (channels, people, messages, ephemeral messages, reactions,
files) that the sandbox page shows, refuses what Slack would refuse (`invalid_auth`,
`channel_not_found`, `not_in_channel`, `invalid_blocks` with a pointer to the bad block,
`msg_blocks_too_long`, `message_not_found`, `already_reacted`, …) and records every call
for tests. Faults can be injected: the next N calls of a method (those matching a
predicate) fail with an HTTP status or a Slack error, `ratelimited` with a Retry-After; a
call can be held until the test releases it; the server can drop a request unanswered or
hang up after answering, as a server closing an idle kept-alive connection does.

It is the one fake of Slack: the sandbox, every test (the `fake` fixture) and the bench.

The package: workspace (the state), faults (injected on purpose), one module per
family of methods (chat, streams, reactions, files, assistant, views, conversations,
response_url), scopes (the scope each method and event needs, and what manifest.yml
grants: a call without its scope answers `missing_scope`), fake (FakeSlack composed of
them, dispatch and HTTP). A Web API method the bot starts using is an `m_…` method in its
family's module and a line in scopes.METHOD_SCOPES (a test fails until it has one, and
test_manifest until the manifest grants it).
"""

from __future__ import annotations

from bot.sandbox.slack_api.conversations import user_object
from bot.sandbox.slack_api.fake import FakeSlack, fake_slack, parse_params
from bot.sandbox.slack_api.faults import Fault, Hold
from bot.sandbox.slack_api.workspace import (
    BOT_ID,
    BOT_USER,
    TEAM_ID,
    Call,
    Channel,
    Person,
    SlackError,
    Workspace,
)

__all__ = [
    "BOT_ID",
    "BOT_USER",
    "TEAM_ID",
    "Call",
    "Channel",
    "FakeSlack",
    "Fault",
    "Hold",
    "Person",
    "SlackError",
    "Workspace",
    "fake_slack",
    "parse_params",
    "user_object",
]

"""The workspace as auth.test answers it: whether the token still works (the watchdog's
check, /healthz) and the team's id (a plan stream's recipient_team_id, asked once)."""

from __future__ import annotations

import logging

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.core.tenancy import current
from bot.slack.presenter.messages import slack_error

log = logging.getLogger(__name__)


class Workspace:
    def __init__(self, client: WebClient) -> None:
        self.client = client
        self._team_id: str | None = None

    def revoke(self, reason: str | None) -> None:
        """Slack took the token back (`reason`): no call but auth.test is sent with it until
        a token works again (None)."""
        if hasattr(self.client, "revoked"):
            self.client.revoked = reason

    def slack_auth(self) -> str:
        """'ok', or the error auth.test answers (a revoked token, an unreachable Slack).
        Installed in many workspaces, the process has no token of its own to check: each
        workspace's is checked as its requests and runs use it."""
        if getattr(self.client, "token_for", None) is not None and current() is None:
            return "ok"
        try:
            self.client.auth_test()
        except SlackApiError as e:
            return slack_error(e)
        except Exception as e:  # unreachable: connection refused, DNS, timeout
            return f"unreachable ({type(e).__name__})"
        return "ok"

    def team_id(self) -> str | None:
        """The installation's team id (auth.test, once): a stream's recipient_team_id, and
        whose closes a person may read (bot/slack/close_readers.py: another team's see
        none). The one place it is read. None while unknown; never asked with a token
        Slack took back (only the watchdog's auth.test goes out then)."""
        tenant = current()
        if tenant is not None and tenant.team_id is not None:
            return tenant.team_id  # many workspaces: the one the work in hand is for
        if self._team_id is None and not getattr(self.client, "revoked", None):
            try:
                self._team_id = str(self.client.auth_test().get("team_id") or "") or None
            except SlackApiError as e:
                log.warning("auth.test failed: %s", slack_error(e))
        return self._team_id

"""One person behind two Slack ids (issue 31): in an Enterprise Grid org a member has a
workspace id and an org-wide one, and `users.info` names the org-wide identity as
`enterprise_user.id` (slackapi/java-slack-sdk json-logs/samples/api/users.info.json). Two ids
with the same `enterprise_user.id` are one person: they may not give both approvals of a
batch, nor approve a close the other started.

An id is looked up once, when an approval first asks about it, and remembered for the
process's life (an id's org-wide identity does not change). A lookup Slack refuses (a
missing scope, a deleted user) leaves the id standing for itself, and is asked again later."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.core.identity import same_person

log = logging.getLogger(__name__)


class GridIdentity:
    """`same(a, b)`: whether two identities are one person, by id or by their Grid identity."""

    def __init__(
        self, client: WebClient, user_of: Callable[[str], dict[str, Any]] | None = None
    ) -> None:
        self.client = client
        # users.info, shared with the names and teams (bot/slack/people.py: asked once a while)
        self.user_of = user_of or (lambda user: self.client.users_info(user=user).get("user") or {})
        self._known: dict[str, str] = {}  # Slack id → its org-wide id ('' when it has none)
        self._lock = threading.Lock()

    def person(self, user: str) -> str:
        """The org-wide id of a Slack id, or the id itself (not a Grid member, or Slack could
        not say)."""
        with self._lock:
            known = self._known.get(user)
        if known is not None:
            return known or user
        try:
            found = self.user_of(user)
        except (SlackApiError, OSError) as e:  # refused, or Slack unreachable: an approval's
            # check is never a crash (a failed lookup compares by the id)
            why = e.response.get("error") if isinstance(e, SlackApiError) else str(e)
            log.info("users.info %s: %s; compared by its id", user, why)
            return user  # not remembered: asked again next time
        grid = found.get("enterprise_user") if isinstance(found, dict) else None
        org_id = str(grid.get("id") or "") if isinstance(grid, dict) else ""
        with self._lock:
            self._known[user] = org_id
        return org_id or user

    def same(self, a: str | None, b: str | None) -> bool:
        if same_person(a, b):
            return True
        if not a or not b or not a.strip() or not b.strip():
            return False
        return self.person(a) == self.person(b)

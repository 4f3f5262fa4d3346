"""Each request from Slack sealed to its workspace, when closebot serves many (issue 32).

Bolt's authorize has found the workspace's installation by the request's team_id /
enterprise_id (and answered 401 if there is none). This middleware then does the listener's
work inside `acting_for(that workspace)` (bot/core/tenancy.py): the store reaches only that
workspace's runs, and every Slack call carries only its token. The person acting must be one
that workspace's token can see (users.info): a payload naming workspace B for a person of
workspace A (a forged team_id: every workspace's requests are signed with the app's one
signing secret) is refused before any listener reads it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from typing import Any

from slack_bolt import App, BoltContext, BoltRequest, BoltResponse
from slack_sdk.errors import SlackApiError

from bot.core.tenancy import Tenant, current, enter, request_scope

log = logging.getLogger(__name__)

MEMBER_SECONDS = 3600.0  # how long a person found in a workspace is taken as its member
UNKNOWN_SECONDS = 300.0  # and one not found, as not


def tenant_of(context: BoltContext) -> Tenant | None:
    """The workspace a request comes from, as Bolt read it (None: no team named)."""
    team_id, enterprise_id = context.team_id, context.enterprise_id
    if team_id is None and enterprise_id is None:
        return None
    return Tenant(team_id, enterprise_id)


class Members:
    """Who each workspace's token can see, asked once an hour per person (users.info)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[Tenant, str], tuple[bool, float]] = {}
        self._lock = threading.Lock()

    def known(self, tenant: Tenant, user: str, client: Any) -> bool:
        """Whether `tenant`'s token can see `user` (users.info): kept an hour when it can,
        a few minutes when it cannot."""
        key = (tenant, user)
        now = time.monotonic()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and seen[1] > now:
                return seen[0]
        try:
            client.users_info(user=user)
            found = True
        except SlackApiError as e:
            log.warning(
                "workspace %s: %s is not one of its people (%s)",
                tenant,
                user,
                e.response.get("error"),
            )
            found = False
        with self._lock:
            if len(self._seen) > 50_000:
                self._seen.clear()
            self._seen[key] = (found, now + (MEMBER_SECONDS if found else UNKNOWN_SECONDS))
        return found


class WorkspaceApprovers(frozenset[str]):
    """The approvers the environment names, as each workspace has them: of those, only the
    people the workspace's token can see, for work done for that workspace (outside any, all
    of them). Served in many workspaces, CLOSEBOT_APPROVERS may name people of several: a
    form is never addressed to, nor answerable by, someone of another workspace."""

    members: Members
    client: Any

    def __new__(cls, names: frozenset[str], members: Members, client: Any) -> WorkspaceApprovers:
        made = super().__new__(cls, names)
        made.members, made.client = members, client
        return made

    def _here(self) -> frozenset[str]:
        tenant = current()
        everyone = frozenset(super().__iter__())
        if tenant is None:
            return everyone
        return frozenset(
            u for u in everyone if u[:1] not in "UW" or self.members.known(tenant, u, self.client)
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self._here())

    def __contains__(self, user: object) -> bool:
        return user in self._here()

    def __len__(self) -> int:
        return len(self._here())

    def __or__(self, other: AbstractSet[str]) -> frozenset[str]:  # type: ignore[override]
        return self._here() | other

    def __ror__(self, other: AbstractSet[str]) -> frozenset[str]:
        return frozenset(other) | self._here()

    def __sub__(self, other: AbstractSet[str]) -> frozenset[str]:  # type: ignore[override]
        return self._here() - other

    def __and__(self, other: AbstractSet[str]) -> frozenset[str]:  # type: ignore[override]
        return self._here() & other


class SealedApp(App):
    """Bolt's App whose every request is handled in a scope of its own: the middleware
    names the request's workspace in it (Bolt runs the listeners after the middleware,
    not inside it), and it ends with the request."""

    def dispatch(self, req: BoltRequest) -> BoltResponse:
        with request_scope():
            return super().dispatch(req)


def seal_requests(app: App, members: Members) -> None:
    """Every listener of `app` (a SealedApp) runs for the request's workspace, and only for
    its people."""

    @app.middleware
    def for_its_workspace(
        context: BoltContext, next: Callable[[], BoltResponse | None]
    ) -> BoltResponse | None:
        tenant = tenant_of(context)
        enter(tenant)
        user = context.user_id
        if tenant is not None and user and not members.known(tenant, user, app.client):
            return BoltResponse(status=200, body="")  # nothing of that workspace is shown
        return next()

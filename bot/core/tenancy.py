"""Which workspace the work in hand is for, when one closebot serves many (issue 32).

A `Tenant` is a Slack workspace (its team id) and the Enterprise Grid org it belongs to, if
any. Whatever acts for one — a request from Slack, a run's job — runs inside
`acting_for(tenant)`; what it reaches through the store is only that workspace's (a run of
another workspace reads as not found), and the Slack client sends only that workspace's
token. Outside any (`current()` is None) is the one-workspace install, as before, or the
process's own upkeep, which names the workspace of each run it touches.

The variable is a contextvars.ContextVar: the runner carries it into the jobs a request
queues (bot/core/runner.py copies the context at submit).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Tenant:
    """A workspace: its team id, and its org's enterprise id (None outside Enterprise Grid).
    An org-wide install acts for the org (`team_id` None) until a request names a workspace."""

    team_id: str | None
    enterprise_id: str | None = None

    def owns(self, team_id: str | None, enterprise_id: str | None) -> bool:
        """Whether a row keyed (team_id, enterprise_id) belongs to this workspace. A row with
        neither is the one workspace's of a release before workspaces were kept apart (issue
        32): it belongs to no workspace an OAuth install brought."""
        if team_id is None and enterprise_id is None:
            return False
        if self.team_id is not None and team_id is not None:
            return team_id == self.team_id and (
                enterprise_id is None
                or self.enterprise_id is None
                or enterprise_id == self.enterprise_id
            )
        return self.enterprise_id is not None and enterprise_id == self.enterprise_id

    def __str__(self) -> str:
        if self.enterprise_id and self.team_id:
            return f"{self.enterprise_id}/{self.team_id}"
        return self.team_id or self.enterprise_id or "-"


def workspace_key(tenant: Tenant | None) -> str:
    """A workspace as a key in the books ("" for the one workspace of a single install):
    what a period's posting is claimed under, one per period per workspace."""
    return "" if tenant is None else str(tenant)


def run_workspace_key(team_id: str | None, enterprise_id: str | None) -> str:
    """The key of the workspace a run row names (its team_id, enterprise_id columns)."""
    if team_id is None and enterprise_id is None:
        return ""
    return workspace_key(Tenant(team_id, enterprise_id))


_CURRENT: ContextVar[Tenant | None] = ContextVar("closebot_tenant", default=None)


def current() -> Tenant | None:
    """The workspace the work in hand is for; None: the one workspace (or upkeep)."""
    return _CURRENT.get()


@contextmanager
def acting_for(tenant: Tenant | None) -> Iterator[None]:
    """Do the block for `tenant` (None: for no workspace in particular)."""
    token = _CURRENT.set(tenant)
    try:
        yield
    finally:
        _CURRENT.reset(token)


@contextmanager
def request_scope() -> Iterator[None]:
    """A request's scope: inside it `enter` names the workspace the request is for (once
    it is known, part way through), and the scope's end forgets it."""
    token = _CURRENT.set(None)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def enter(tenant: Tenant | None) -> None:
    """From here to the end of the enclosing `request_scope`, act for `tenant`."""
    _CURRENT.set(tenant)

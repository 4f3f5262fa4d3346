"""A person as people read them: a name, never a Slack user id.

In Slack a person is their user id (bot/core/identity.py); what is shown is the name Slack gives
for it (`users.info`), cached in the store (the `people` table) so names survive a restart
and the console, which has no Slack client, shows them too. A cached name is refreshed after
a day; a lookup that fails shows the cached name, or else the id, and never fails the work
that asked. A console identity (an OS login) is shown as itself.

Front-end neutral: the lookup is a plain function handed in by the Slack edge
(bot/slack/people.py); without one (the console, the CLI) only the cache is read.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.core.errors import StorageError
from bot.core.identity import SLACK_USER_ID
from bot.store import Store

log = logging.getLogger(__name__)

REFRESH_AFTER = timedelta(days=1)
RETRY_AFTER = timedelta(minutes=10)  # after a failed lookup, the id (or old name) meanwhile


@dataclass(frozen=True)
class Profile:
    """What Slack calls a person: `real_name` ("Alice Park"), `display_name` ("alice"),
    `handle` (the account's `name`)."""

    real_name: str = ""
    display_name: str = ""
    handle: str = ""

    @property
    def shown(self) -> str:
        return (self.real_name or self.display_name or self.handle).strip()


Lookup = Callable[[str], Profile]  # raises when Slack cannot say


def is_slack_id(who: str | None) -> bool:
    return bool(who) and bool(SLACK_USER_ID.match(who or ""))


class Names:
    """`names(who)`: the name to show for an identity (a Slack id, an OS login or None)."""

    def __init__(
        self,
        store: Store,
        lookup: Lookup | None = None,
        *,
        refresh_after: timedelta = REFRESH_AFTER,
        retry_after: timedelta = RETRY_AFTER,
    ) -> None:
        self.store = store
        self.lookup = lookup
        self.refresh_after = refresh_after
        self.retry_after = retry_after
        self._failed: dict[str, str] = {}  # id → when its lookup last failed (store clock)
        self._lock = threading.Lock()

    def __call__(self, who: str | None, default: str = "closebot") -> str:
        """The name to show: Slack's name for a user id (looked up at most daily), an OS
        login as itself, `default` for nobody (an automatic answer)."""
        if not who or not who.strip():
            return default
        if not is_slack_id(who):
            return who
        return self._name(who, fetch=self.lookup is not None)

    def cached(self, who: str | None, default: str = "closebot") -> str:
        """As __call__, but never asks Slack (the ack path, the console)."""
        if not who or not who.strip():
            return default
        return self._name(who, fetch=False) if is_slack_id(who) else who

    def labelled(self, who: str | None, default: str = "-") -> str:
        """The cached name with the id beside it, for evidence ('Alice Park (U01ALICE)'); an
        id Slack never named, or a login, as itself."""
        if not who or not who.strip():
            return default
        name = self.cached(who)
        return f"{name} ({who})" if name != who else who

    def warm(self, people: Iterable[str | None]) -> None:
        """Look these people up now (once each, as needed), so the cache has them for the
        console, the CSVs and the close's own texts."""
        for who in dict.fromkeys(p for p in people if p):
            self(who)

    def of(self, people: Iterable[str | None]) -> dict[str, str]:
        """{id: name} of these people (each looked up as needed)."""
        return {p: self(p) for p in dict.fromkeys(p for p in people if p)}

    def _name(self, who: str, *, fetch: bool) -> str:
        row = self.store.people.get(who)
        cached_name = _profile(row).shown if row else ""
        if not fetch or (row and not self._stale(row["fetched_at"], self.refresh_after)):
            return cached_name or who
        with self._lock:
            failed_at = self._failed.get(who)
        if failed_at and not self._stale(failed_at, self.retry_after):
            return cached_name or who
        assert self.lookup is not None
        try:
            profile = self.lookup(who)
        except Exception as e:  # a nicety: the id (or the old name) is shown instead
            log.warning("users.info %s failed (%s): shown as %s", who, e, cached_name or who)
            with self._lock:
                self._failed[who] = self.store.now()
            return cached_name or who
        with self._lock:
            self._failed.pop(who, None)
        try:
            self.store.people.remember(
                who,
                real_name=profile.real_name,
                display_name=profile.display_name,
                handle=profile.handle,
            )
        except StorageError as e:  # a busy or full database: shown now, cached next time
            log.warning("name of %s not cached: %s", who, e)
        return profile.shown or cached_name or who

    def _stale(self, at: str, age: timedelta) -> bool:
        then = datetime.fromisoformat(at)
        if then.tzinfo is None:
            then = then.replace(tzinfo=UTC)
        return datetime.fromisoformat(self.store.now()) - then >= age


def _profile(row: dict[str, Any]) -> Profile:
    return Profile(row["real_name"] or "", row["display_name"] or "", row["handle"] or "")


def named_text(text: str, user_ids: Iterable[str], name: Callable[[str], str]) -> str:
    """Bare user ids of these people in text (a tool's result, a question the model wrote:
    'decided by UALICE') replaced by `name(id)`; a mention (`<@UALICE>`) is left as it is."""
    for uid in sorted({u for u in user_ids if is_slack_id(u)}, key=len, reverse=True):
        bare = re.compile(rf"(?<![<@\w]){re.escape(uid)}\b")
        if bare.search(text):
            # the name as a template, its backslashes escaped: never a group reference
            text = bare.sub(name(uid).replace("\\", "\\\\"), text)
    return text

"""Who may read a close outside its thread (issue 31): the DM's answers ("what's open?", "who
decided …?", "status") and the App Home show a close's amounts and decisions only to the people
on it — its starter, the approvers, CLOSEBOT_FINANCE, whoever answered one of its questions or
owns one of its open items, and the members of the channel it runs in (a close in a DM: its
starter alone) — and nothing of any close to a person of another team than the one that
installed closebot (Slack Connect, another workspace of an org). Everyone else is told they are
not on the close; every refusal is audited (`read_refused`, an event of the register).

Channel membership is asked of Slack with conversations.members (scopes channels:read for a
public channel, groups:read for a private one: docs.slack.dev/reference/methods/
conversations.members, "Required scopes"; Tier 4), kept a minute per channel so the Home
tabs republished on every change do not ask again. A private channel the bot is not in
answers `channel_not_found`: nobody is let in by it. A person's team is what users.info says
(`user.team_id`, or the org's teams they belong to: `enterprise_user.teams`), compared with
the installation's team, read in one place (bot/slack/presenter/auth.py, `Workspace`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from slack_sdk.errors import SlackApiError

from bot.close import Ledger, period_label
from bot.core.errors import StorageError
from bot.core.identity import one_of, same_person
from bot.slack.people import SlackUsers
from bot.slack.presenter.auth import Workspace
from bot.slack.presenter.messages import slack_error
from bot.store import Run, Store

log = logging.getLogger(__name__)

MEMBERS_FOR = 60.0  # seconds a channel's members are kept (views.publish follows every change)
MEMBERS_PAGE = 200  # conversations.members: "We recommend no more than 200 results at a time"

OTHER_TEAM = (
    "I keep the closes of the workspace that installed me, and you are signed in from another "
    "team, so I show you none of them."
)
UNKNOWN_TEAM = (
    "I could not check with Slack who you are just now, so I show you no close's amounts or "
    "decisions; try again in a minute."
)


def not_on(runs: Iterable[Run]) -> str:
    """The line for closes withheld: 'You are not on the October 2026 close: …'."""
    periods = sorted({r.period for r in runs}, reverse=True)
    if not periods:
        return ""
    named = _joined([period_label(p) for p in periods])
    one = len(periods) == 1
    return (
        f"You are not on the {named} close{'' if one else 's'}: "
        f"{'its' if one else 'their'} amounts and decisions go only to "
        f"{'its' if one else 'each one’s'} starter, the approvers, finance, the people who "
        f"decided in {'it' if one else 'them'} and the members of "
        f"{'its' if one else 'their'} channel."
    )


def _joined(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


@dataclass(frozen=True)
class Verdict:
    """Whether a person's team is the installation's: `ok`, or why not (`reason`)."""

    ok: bool
    reason: str = ""  # "another team" / "team unknown"

    @property
    def text(self) -> str:
        return OTHER_TEAM if self.reason == "another team" else UNKNOWN_TEAM


class CloseReaders:
    """`may_read(run, user)` and `team(user)`, and refusals audited. Web API calls: off the
    ack path (the desk's answers and the Home tab run as side work)."""

    def __init__(
        self,
        *,
        users: SlackUsers,
        store: Store,
        workspace: Workspace,
        approvers: frozenset[str],
        finance: frozenset[str] = frozenset(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.users = users  # users.info, shared with Names (a person asked once for a while)
        self.client = users.client
        self.store = store
        self.workspace = workspace
        self.trusted = approvers | finance
        self.clock = clock
        self._members: dict[str, tuple[float, frozenset[str]]] = {}
        self._audited: dict[tuple[str, str], frozenset[str]] = {}  # (user, where) → refused
        self._lock = threading.Lock()

    # -- the team ----------------------------------------------------------------------

    def team(self, user: str, hint: str | None = None) -> Verdict:
        """Is `user` of the installation's team? `hint`: the team the payload names for them
        (an event's `user_team`); another than ours is enough to refuse."""
        ours = self.workspace.team_id()
        if ours is None:
            return Verdict(False, "team unknown")
        if hint and hint != ours:
            return Verdict(False, "another team")
        teams = self._teams_of(user)
        if teams is None:
            return Verdict(False, "team unknown")
        return Verdict(True) if ours in teams else Verdict(False, "another team")

    def _teams_of(self, user: str) -> frozenset[str] | None:
        try:
            return self.users.teams(user)
        except SlackApiError as e:
            log.warning("users.info %s failed (%s): no close shown", user, slack_error(e))
            return None

    # -- a close ---------------------------------------------------------------------

    def may_read(self, run: Run, user: str) -> bool:
        """Whether `user` is on the close: its starter, an approver, in finance, someone who
        answered one of its questions or owns one of its open items, or a member of the
        channel it runs in."""
        if same_person(user, run.started_by) or one_of(user, self.trusted):
            return True
        try:
            if self._decided_in(run, user):
                return True
        except StorageError as e:  # a busy database: not let in by this
            log.warning("run %s: who decided not read (%s)", run.id, e)
        return self._in_channel(run.channel, user)

    def split(self, runs: Iterable[Run], user: str) -> tuple[list[Run], list[Run]]:
        """(the closes `user` is on, the closes withheld from them), in the order given."""
        shown: list[Run] = []
        withheld: list[Run] = []
        for run in runs:
            (shown if self.may_read(run, user) else withheld).append(run)
        return shown, withheld

    def _decided_in(self, run: Run, user: str) -> bool:
        if any(same_person(user, q.answered_by) for q in self.store.questions.of_run(run.id)):
            return True
        return any(same_person(user, i.get("owner")) for i in Ledger(self.store).open_items(run.id))

    def _in_channel(self, channel: str | None, user: str) -> bool:
        if not channel or channel.startswith("D"):  # a DM's close: its starter's alone
            return False
        return user in self._members_of(channel)

    def _members_of(self, channel: str) -> frozenset[str]:
        now = self.clock()
        with self._lock:
            kept = self._members.get(channel)
        if kept is not None and now - kept[0] < MEMBERS_FOR:
            return kept[1]
        members: set[str] = set()
        cursor = ""
        try:
            while True:
                page = self.client.conversations_members(
                    channel=channel, limit=MEMBERS_PAGE, cursor=cursor or None
                )
                members.update(str(m) for m in page.get("members") or [])
                cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
                if not cursor:
                    break
        except SlackApiError as e:  # not_in_channel, channel_not_found, missing_scope: nobody
            log.warning("conversations.members %s failed (%s)", channel, slack_error(e))
            members = set()
        found = frozenset(members)
        with self._lock:
            self._members[channel] = (now, found)
        return found

    # -- refusals --------------------------------------------------------------------

    def refused(
        self,
        user: str,
        runs: Iterable[Run],
        *,
        where: str,
        asked: str,
        reason: str = "not on the close",
        once: bool = False,
    ) -> None:
        """Audit what `user` was not shown (`runs`, or every close for another team).
        `once`: only when it differs from what was last audited for them there (a Home tab
        republished on every change of any close is not a new request)."""
        withheld = sorted({(r.id, r.period) for r in runs})
        key = frozenset(run_id for run_id, _ in withheld) | {reason}
        if once:
            with self._lock:
                if self._audited.get((user, where)) == key:
                    return
                self._audited[(user, where)] = key
        try:
            self.store.audit.record(
                run_id=None,
                kind="read_refused",
                actor=user,
                detail={
                    "where": where,
                    "asked": asked,
                    "reason": reason,
                    "runs": [run_id for run_id, _ in withheld],
                    "periods": sorted({p for _, p in withheld}),
                },
            )
        except StorageError as e:  # the refusal stands; only its record is lost
            log.warning("read refusal of %s not audited: %s", user, e)

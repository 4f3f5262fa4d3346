"""What every listener is given (Deps) and the few things they share: who clicked, a
private notice after the ack, the refusal texts.

Listeners parse, authorize, claim and ack — then hand the work to the work queue. None runs
the agent or waits on a Web API call before it acks: with process_before_response=True the
HTTP answer leaves when the listener returns. Each runs its database calls inside
store.quick(): a database locked by someone else costs the person a "busy, try again",
never a missed 3-second ack.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bot.close import approval_refusal
from bot.core.answers import Answers
from bot.core.errors import NotAuthorizedError, StorageError
from bot.core.identity import one_of, same_person
from bot.slack.close_start import CloseStarter
from bot.slack.files import FileIntake
from bot.slack.grid import GridIdentity
from bot.slack.home import SlackDesk
from bot.slack.reply_window import ReplyWindow
from bot.slack.settings import SlackSettings
from bot.slack.work import SlackWork
from bot.store import QuestionRecord, Run, Store


def requester_team(body: dict[str, Any], event: dict[str, Any] | None = None) -> str | None:
    """The team of the person whose request this payload is (a stream answering them names it,
    chat.startStream's recipient_team_id): a Slack Connect guest's own team (`user_team`,
    `user.team_id`), the org for an org-wide install (as Bolt's say_stream takes it:
    bolt-python docs/english/concepts/adding-agent-features.md), else the payload's team."""
    event = event or {}
    user = body.get("user")
    for team in (
        event.get("user_team"),
        body.get("user_team"),
        user.get("team_id") if isinstance(user, dict) else None,
        body.get("enterprise_id") if body.get("is_enterprise_install") else None,
        body.get("team_id"),
        (body.get("team") or {}).get("id") if isinstance(body.get("team"), dict) else None,
    ):
        if isinstance(team, str) and team:
            return team
    return None


DM_START_REFUSED = (
    "Only an approver or someone in finance can start a close from here; nothing was started. "
    "Anyone in the finance channel can start one there with `/close`."
)


@dataclass(frozen=True)
class Deps:
    """What the listeners work with; `starter` and `answers` are made from the rest."""

    store: Store
    work: SlackWork
    approvers: frozenset[str]
    data_dir: Path | None = None
    files: FileIntake | None = None
    desk: SlackDesk | None = None
    starter: CloseStarter | None = None
    finance: frozenset[str] = frozenset()  # CLOSEBOT_FINANCE (issue 31)
    replies: ReplyWindow | None = None  # a thread burst answered once (issue 31)
    grid: GridIdentity | None = None  # one person's two ids in an Enterprise Grid (issue 31)
    settings: SlackSettings | None = None  # the Home tab's Settings (issue 32)
    answers: Answers = field(init=False)

    def __post_init__(self) -> None:
        if self.replies is None:
            object.__setattr__(self, "replies", ReplyWindow(self.store))
        if self.starter is None:
            starter = CloseStarter(store=self.store, work=self.work, data_dir=self.data_dir)
            object.__setattr__(self, "starter", starter)
        store, approvers = self.store, self.approvers
        same = self.grid.same if self.grid is not None else same_person
        answers = Answers(
            store,
            approvers,
            vet=lambda record, run, user, answer: approval_refusal(
                store, record, run, user, approvers, answer, same=same
            ),
        )
        object.__setattr__(self, "answers", answers)

    @property
    def window(self) -> ReplyWindow:
        assert self.replies is not None  # made in __post_init__
        return self.replies

    @property
    def starts(self) -> CloseStarter:
        assert self.starter is not None  # made in __post_init__
        return self.starter


def bind(listener: Callable[..., None], deps: Deps) -> Callable[..., None]:
    """`listener(deps, …)` as Bolt calls it: with the arguments it names after `deps`."""
    bound = partial(listener, deps)
    bound.__name__ = listener.__name__  # type: ignore[attr-defined]  # Bolt's logs name it
    return bound


def who(body: dict[str, Any]) -> tuple[str, str, str | None]:
    """(user, channel, thread_ts) of an interaction payload."""
    container = body.get("container") or {}
    user = (body.get("user") or {}).get("id") or ""
    channel = (body.get("channel") or {}).get("id") or container.get("channel_id", "")
    return str(user), str(channel), container.get("thread_ts")


def notify(
    deps: Deps,
    channel: str,
    user: str,
    thread_ts: str | None,
    text: str,
    people: tuple[str, ...] = (),
) -> None:
    """A private notice to `user`, after the ack."""
    presenter = deps.work.presenter
    deps.work.runner.side(
        lambda: presenter.ephemeral(
            channel=channel, user=user, thread_ts=thread_ts, text=text, people=people
        )
    )


def refused(deps: Deps, e: NotAuthorizedError, what: str) -> tuple[str, tuple[str, ...]]:
    """(text, people it may mention) when someone may not `what`."""
    if e.reason:  # a control refused this answer (say, the second approver must differ)
        return f"{e.reason}; nothing was changed.", (e.started_by or "", *deps.approvers)
    starter = (
        f"<@{e.started_by}> (who started this close)"
        if e.started_by
        else "the person who started this close"
    )
    return f"Only {starter} or an approver can {what}; nothing was changed.", (e.started_by or "",)


def already(record: QuestionRecord) -> tuple[str, tuple[str, ...]]:
    who_ = f" by <@{record.answered_by}>" if record.answered_by else ""
    if record.status == "cancelled" and record.source == "change":
        # only a posting approval is withdrawn by a change (decisions.changes.ask_change): one
        # given at the same instant as the change lost to it (issue 31)
        return (
            f"Not approved: <@{record.answered_by}> changed a decision, which withdrew this "
            "approval; the batch is drafted again and a new approval will be asked."
        ), (record.answered_by or "",)
    return f"This question was already {record.status}{who_}; nothing was changed.", (
        record.answered_by or "",
    )


def status_word(run: Run) -> str:
    return {"done": "finished", "failed": "stopped by an error", "cancelled": "stopped"}.get(
        run.status, run.status
    )


def may_start_from_dm(deps: Deps, user: str, asked: str) -> bool:
    """A close started from the DM runs in the team's channel and claims the period: only
    someone trusted with the books may (an approver or CLOSEBOT_FINANCE); anyone in the
    finance channel still starts one there with /close. A refusal is audited (issue 31)."""
    if one_of(user, {*deps.approvers, *deps.finance}):
        return True
    try:
        with deps.store.quick():
            deps.store.audit.record(
                run_id=None,
                kind="close_start_refused",
                actor=user,
                detail={"from": "dm", "asked": asked[:40], "reason": "not authorized"},
            )
    except StorageError:
        pass  # the refusal stands; only its record is lost to a busy database
    return False

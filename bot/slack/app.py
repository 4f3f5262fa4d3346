"""The Bolt app, built from settings: its parts (client, presenter, work queue, desk, file
intake, the one close start) wired once, and every listener attached by
`handlers.register(app, deps)`. Serving it (HTTP or Socket Mode) is bot/slack/serve.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import timedelta

from slack_bolt import App
from slack_bolt.error import BoltError
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot import handlers
from bot.close import STEPS, Desk, close_loop, map_path
from bot.core.config import Settings
from bot.core.errors import ConfigError
from bot.core.models import Model
from bot.core.names import Names
from bot.core.runner import Runner
from bot.slack.client import KeepAliveWebClient, web_client
from bot.slack.close_readers import CloseReaders
from bot.slack.close_start import CloseStarter
from bot.slack.files import FileIntake
from bot.slack.grid import GridIdentity
from bot.slack.home import SlackDesk
from bot.slack.installations import Installations
from bot.slack.people import SlackUsers, slack_names
from bot.slack.presenter import SlackPresenter
from bot.slack.reply_window import ReplyWindow
from bot.slack.settings import SlackSettings
from bot.slack.tenants import Members, SealedApp, WorkspaceApprovers, seal_requests
from bot.slack.work import SlackWork
from bot.store import Store

__all__ = ["Service", "build_service", "presenter_for", "question_ttl", "web_client"]


@dataclass
class Service:
    """Everything a running bot is made of."""

    app: App
    store: Store
    runner: Runner
    presenter: SlackPresenter
    work: SlackWork
    signing_secret: str
    # installed in many workspaces through OAuth (issue 32); None: one workspace's token
    installations: Installations | None = None
    settings: SlackSettings | None = None  # the Home tab's Settings (issue 32)


def presenter_for(
    settings: Settings, store: Store, client: WebClient, names: Names | None = None
) -> SlackPresenter:
    """How runs show in Slack."""
    return SlackPresenter(
        client=client,
        store=store,
        names=names or slack_names(store, client),
        steps=STEPS,
        approvers=settings.approvers,
        approval_limit=settings.approval_limit,
        account_map=map_path(settings.data_dir),
        data_dir=settings.data_dir,
        reminder=timedelta(minutes=settings.reminder_minutes)
        if settings.reminder_minutes
        else None,
    )


def question_ttl(settings: Settings) -> timedelta | None:
    """How long a question waits before its recommended answers apply (None: for ever)."""
    minutes = settings.question_timeout_minutes
    return timedelta(minutes=minutes) if minutes else None


def build_service(
    settings: Settings,
    *,
    store: Store,
    model: Model,
    socket_mode: bool = False,
    workers: int | None = None,  # turns (default: settings.turn_workers); quick work: runner.fast
    still_working_after: float = 100.0,  # Slack clears a status line after two minutes
) -> Service:
    """The Bolt app with its listeners, runner and presenter; checks the token with auth.test."""
    require(settings, socket_mode=socket_mode)
    client = web_client(settings)
    installations = None
    members = Members()
    if settings.many_workspaces:  # each call carries its workspace's token
        installations = Installations(settings, client)
        client.token_for = installations.token
        # each workspace's approvers: of those named, the ones its token can see
        settings = replace(
            settings, approvers=WorkspaceApprovers(settings.approvers, members, client)
        )
    app = bolt_app(settings, client, installations, members)
    users = SlackUsers(client)  # users.info, asked once for a while whatever part asks
    names = slack_names(store, client, users)  # one cache of who people are, for every part
    presenter = presenter_for(settings, store, client, names)
    loop = close_loop(
        settings, store=store, presenter=presenter, model=model, question_ttl=question_ttl(settings)
    )
    runner = Runner(max_workers=workers or settings.turn_workers)
    work = SlackWork(
        store=store,
        loop=loop,
        presenter=presenter,
        runner=runner,
        data_dir=settings.data_dir,
        still_working_after=still_working_after,
    )
    work.installations = installations
    desk = SlackDesk(
        client=client,
        store=store,
        desk=Desk(store, settings.approvers, settings.data_dir),
        readers=CloseReaders(
            users=users,
            store=store,
            workspace=presenter.auth,  # the installation's team, read in one place
            approvers=settings.approvers,
            finance=settings.finance,
        ),
        names=names,
    )
    presenter.on_state_change = desk.republish  # the Home tabs follow the runs' states
    starter = CloseStarter(
        store=store, work=work, data_dir=settings.data_dir, close_channel=settings.close_channel
    )
    files = FileIntake(
        store=store,
        client=client,
        approvers=settings.approvers,
        finance=settings.finance,
        data_dir=settings.data_dir,
        start=starter.in_files_thread,
        names=names,
    )
    # the Home tab's Settings (issue 32): set in Slack, in effect for the next close
    slack_settings = SlackSettings(
        client=client,
        store=store,
        defaults=settings,
        on_change=desk.republish,
        later=runner.fast,
        user_of=users.user,
    )
    desk.settings_blocks = slack_settings.home_blocks
    deps = handlers.Deps(
        store=store,
        work=work,
        approvers=settings.approvers,
        data_dir=settings.data_dir,
        files=files,
        desk=desk,
        starter=starter,
        finance=settings.finance,
        replies=ReplyWindow(store, settings.thread_reply_seconds),
        grid=GridIdentity(client, users.user),
        settings=slack_settings,
    )
    handlers.register(app, deps)
    slack_settings.parts = [presenter, loop, work, desk, starter, files, deps]
    slack_settings.start()  # what was set in Slack before this start
    return Service(
        app=app,
        store=store,
        runner=runner,
        presenter=presenter,
        work=work,
        signing_secret=settings.slack_signing_secret or "",
        installations=installations,
        settings=slack_settings,
    )


def bolt_app(
    settings: Settings,
    client: KeepAliveWebClient,
    installations: Installations | None = None,
    members: Members | None = None,
) -> App:
    """The App over `client`; Bolt's auth.test refusing the token is a ConfigError that says
    which setting to check. Installed in many workspaces: Bolt's OAuth flow and its
    authorize from the installation store, and each request sealed to its workspace."""
    try:
        app = (SealedApp if installations else App)(
            client=client,
            signing_secret=settings.slack_signing_secret or "socket-mode",
            process_before_response=True,
            # an event nothing listens to is acknowledged in the error handler, in one line
            raise_error_for_unhandled_request=True,
            oauth_settings=installations.oauth_settings() if installations else None,
            # an Authorize instance, which Bolt takes as it is (its type says a function)
            authorize=installations.authorize() if installations else None,  # type: ignore[arg-type]
        )
    except (BoltError, SlackApiError) as e:
        reason = slack_reason(e)
        if "Errno" in reason or "URLError" in reason or "Connection" in reason:
            raise ConfigError(
                f"cannot reach Slack at SLACK_API_URL={settings.slack_api_url} ({reason})"
            ) from e
        raise ConfigError(
            f"Slack refused SLACK_BOT_TOKEN ({reason}); check the token and SLACK_API_URL"
        ) from e
    except OSError as e:  # connection refused, DNS: Slack is unreachable, not our port
        raise ConfigError(
            f"cannot reach Slack at SLACK_API_URL={settings.slack_api_url} ({e})"
        ) from e
    if installations is not None:
        seal_requests(app, members or Members())
    return app


def slack_reason(e: Exception) -> str:
    """Why Slack refused: its error code, from the response or bolt's message."""
    if isinstance(e, SlackApiError):
        return str(e.response.get("error"))
    found = re.search(
        r"'error': '([a-z_]+)'", str(e)
    )  # bolt puts auth.test's answer in its message
    return found.group(1) if found else str(e).splitlines()[0]


def require(settings: Settings, *, socket_mode: bool) -> None:
    """The settings the chosen transport needs: a ConfigError naming the first missing.
    Over HTTP, SLACK_CLIENT_ID and SLACK_CLIENT_SECRET without a bot token install it in
    many workspaces through OAuth (issue 32); Socket Mode serves one workspace."""
    if socket_mode and settings.many_workspaces:
        raise ConfigError(
            "SLACK_CLIENT_ID/SLACK_CLIENT_SECRET install closebot in many workspaces, which "
            "needs HTTP (closebot serve --http; Slack does not allow Socket Mode for apps "
            "installed by others); for one workspace set SLACK_BOT_TOKEN instead"
        )
    needed = (
        ["SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"]
        if socket_mode
        else ["SLACK_SIGNING_SECRET"]
        if settings.many_workspaces
        else ["SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"]
    )
    values = {
        "SLACK_BOT_TOKEN": settings.slack_bot_token,
        "SLACK_APP_TOKEN": settings.slack_app_token,
        "SLACK_SIGNING_SECRET": settings.slack_signing_secret,
    }
    for name in needed:
        if not values[name]:
            mode = "Socket Mode" if socket_mode else "HTTP mode"
            raise ConfigError(f"{name} is not set; {mode} needs it (see README: Slack set-up)")

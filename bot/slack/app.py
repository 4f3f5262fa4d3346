"""Builds the Bolt app and the chosen transport; wires handlers, runner and store.

HTTP mode is served by bot/slack/http/server.py (waitress, the edge checks, /healthz). Socket Mode
(development, no public URL) uses slack_sdk's own client.
"""

from __future__ import annotations

import logging
import re
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from slack_bolt import App
from slack_bolt.error import BoltError, BoltUnhandledRequestError
from slack_bolt.response import BoltResponse
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
)

from bot import handlers
from bot.close import gl_export
from bot.close.assemble import close_loop
from bot.close.imports.intake import Imports
from bot.close.inquiries import Desk
from bot.close.registry import STEPS
from bot.core.config import Settings
from bot.core.errors import ConfigError, ReplayedError, StorageError
from bot.core.models import Model
from bot.core.names import Names
from bot.core.runner import Runner
from bot.slack.client import KeepAliveWebClient
from bot.slack.files import FileIntake
from bot.slack.home import SlackDesk
from bot.slack.http.server import EVENTS_PATH, HEALTH_PATH, HttpServer
from bot.slack.people import slack_names
from bot.slack.presenter import SlackPresenter
from bot.slack.work import SlackWork
from bot.store import Store

log = logging.getLogger(__name__)

SWITCH_INTERVAL_S = 0.0005


def web_client(settings: Settings) -> WebClient:
    """The Web API client: SLACK_API_URL, with 429 (Retry-After) and connection retries,
    over kept-alive connections."""
    return KeepAliveWebClient(
        token=settings.slack_bot_token,
        base_url=settings.slack_api_url,
        timeout=15,
        retry_handlers=[
            ConnectionErrorRetryHandler(max_retry_count=2),
            RateLimitErrorRetryHandler(max_retry_count=3),
        ],
    )


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
        account_map=gl_export.map_path(settings.data_dir),
        reminder=timedelta(minutes=settings.reminder_minutes)
        if settings.reminder_minutes
        else None,
    )


def question_ttl(settings: Settings) -> timedelta | None:
    """How long a question waits before its recommended answers apply (None: for ever)."""
    minutes = settings.question_timeout_minutes
    return timedelta(minutes=minutes) if minutes else None


@dataclass
class Service:
    """Everything a running bot is made of."""

    app: App
    store: Store
    runner: Runner
    presenter: SlackPresenter
    work: SlackWork
    signing_secret: str


def _starter(store: Store, work: SlackWork) -> Callable[[str, str, str, str], None]:
    """Begin a close in the thread where its files were dropped."""

    def start(channel: str, thread_ts: str, period: str, user: str) -> None:
        run = store.create_run(
            period=period,
            mode="slack",
            started_by=user,
            model=work.loop.model.name,
            channel=channel,
            thread_ts=thread_ts,
        )
        Imports(store).set_thread_run(channel=channel, thread_ts=thread_ts, run_id=run.id)
        work.start_close(run.id)

    return start


def build_service(
    settings: Settings,
    *,
    store: Store,
    model: Model,
    socket_mode: bool = False,
    workers: int = 4,  # turns; quick Slack work has its own pool (runner.fast)
    still_working_after: float = 45.0,
) -> Service:
    """The Bolt app with its listeners, runner and presenter; checks the token with auth.test."""
    _require(settings, socket_mode=socket_mode)
    client = web_client(settings)
    try:
        app = App(
            client=client,
            signing_secret=settings.slack_signing_secret or "socket-mode",
            process_before_response=True,
            # an event nothing listens to is acknowledged in the error handler, in one line
            raise_error_for_unhandled_request=True,
        )
    except (BoltError, SlackApiError) as e:
        reason = _reason(e)
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
    names = slack_names(store, client)  # one cache of who people are, for every part
    presenter = presenter_for(settings, store, client, names)
    loop = close_loop(
        settings, store=store, presenter=presenter, model=model, question_ttl=question_ttl(settings)
    )
    runner = Runner(max_workers=workers)
    work = SlackWork(
        store=store,
        loop=loop,
        presenter=presenter,
        runner=runner,
        data_dir=settings.data_dir,
        still_working_after=still_working_after,
    )
    desk = SlackDesk(
        client=client,
        store=store,
        desk=Desk(store, settings.approvers, settings.data_dir),
        names=names,
    )
    presenter.on_state_change = desk.republish  # the Home tabs follow the runs' states
    handlers.register(
        app,
        handlers.Deps(
            store=store,
            work=work,
            approvers=settings.approvers,
            data_dir=settings.data_dir,
            files=FileIntake(
                store=store,
                client=client,
                approvers=settings.approvers,
                data_dir=settings.data_dir,
                start=_starter(store, work),
                names=names,
            ),
            desk=desk,
        ),
    )
    app.error(_error_handler(work))
    return Service(
        app=app,
        store=store,
        runner=runner,
        presenter=presenter,
        work=work,
        signing_secret=settings.slack_signing_secret or "",
    )


def _error_handler(work: SlackWork) -> Callable[..., None]:
    """Bolt's catch-all: log with context, and tell the person where that is possible."""

    def on_error(error: Exception, body: dict[str, Any], response: BoltResponse | None) -> None:
        if isinstance(error, BoltUnhandledRequestError):  # acknowledged: Slack needs a 2xx
            log.info("unhandled %s: acknowledged", _request_kind(body))
            if response is not None:
                response.status, response.body = 200, ""
            return
        if isinstance(error, ReplayedError):  # a concurrent duplicate delivery: answered once
            log.info("a duplicate delivery was ignored (%s)", error)
            if response is not None:
                response.status, response.body = 200, ""
            return
        body = body if isinstance(body, dict) else {}
        user = (body.get("user") or {}).get("id") if isinstance(body.get("user"), dict) else None
        user = user or body.get("user_id") or (body.get("event") or {}).get("user")
        channel = (
            (body.get("channel") or {}).get("id") if isinstance(body.get("channel"), dict) else None
        )
        channel = channel or body.get("channel_id") or (body.get("event") or {}).get("channel")
        log.error(
            "listener failed: %s: %s (type=%s user=%s channel=%s)",
            type(error).__name__,
            error,
            body.get("type") or body.get("command"),
            user,
            channel,
            exc_info=error,
        )
        if isinstance(error, StorageError):  # the database, not the request: no 500, say so
            if response is not None:
                response.status, response.body = 200, ""
            if user and channel:
                text = handlers.storage_text(error)
                work.runner.side(
                    lambda: work.presenter.ephemeral(
                        channel=str(channel), user=str(user), thread_ts=None, text=text
                    )
                )
            return
        if user and channel:
            text = "Something went wrong on my side and nothing was changed; please try again. If it keeps happening, tell whoever runs closebot."
            work.runner.side(
                lambda: work.presenter.ephemeral(
                    channel=str(channel), user=str(user), thread_ts=None, text=text
                )
            )

    return on_error


def _request_kind(body: Any) -> str:
    """What a request is, in a word or two, for the log: 'event member_joined_channel'."""
    if not isinstance(body, dict):
        return "request"
    event = body.get("event")
    if isinstance(event, dict):
        return f"event {event.get('type')}"
    if body.get("command"):
        return f"command {body.get('command')}"
    return str(body.get("type") or "request")


def _reason(e: Exception) -> str:
    if isinstance(e, SlackApiError):
        return str(e.response.get("error"))
    found = re.search(
        r"'error': '([a-z_]+)'", str(e)
    )  # bolt puts auth.test's answer in its message
    return found.group(1) if found else str(e).splitlines()[0]


def _require(settings: Settings, *, socket_mode: bool) -> None:
    needed = (
        ["SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"]
        if socket_mode
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


def _driver(model: Model) -> str:
    return "the offline playbook" if model.name == "offline-playbook" else f"Claude ({model.name})"


def _wait_for(stop: threading.Event) -> None:
    """Block until `stop` is set, waking every half second: a SIGTERM delivered to another
    thread (Linux may pick any) only runs its Python handler when the main thread runs
    bytecode, so a wait without a timeout can sleep through it forever."""
    while not stop.wait(0.5):
        pass


def serve(
    settings: Settings, *, store: Store, model: Model, http: bool, host: str, port: int, out: Any
) -> int:
    """Run the bot until SIGINT/SIGTERM: HTTP, or Socket Mode when SLACK_APP_TOKEN is set and --http is not."""
    socket_mode = bool(settings.slack_app_token) and not http
    # A turn's CPU work holds the GIL for up to the switch interval (5 ms by default) before
    # a request thread gets it back: a shorter one keeps acks fast while turns run.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    service = build_service(settings, store=store, model=model, socket_mode=socket_mode)
    recovered = service.work.recover()
    stop = threading.Event()
    service.work.watch(stop)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    if socket_mode:
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        handler = SocketModeHandler(service.app, settings.slack_app_token)
        try:
            handler.connect()
        except SlackApiError as e:
            raise ConfigError(
                f"Slack refused SLACK_APP_TOKEN ({_reason(e)}); it needs the connections:write scope"
            ) from e
        print(
            f"closebot: connected in Socket Mode; {len(recovered)} run(s) recovered; driven by {_driver(model)}. Ctrl-C stops.",
            file=out,
            flush=True,
        )
        _wait_for(stop)
        handler.close()
    else:
        server = HttpServer(service, host=host, port=port)
        server.start()
        print(
            f"closebot: listening on http://{host}:{server.port}{EVENTS_PATH} (health: {HEALTH_PATH}); "
            f"{len(recovered)} run(s) recovered; driven by {_driver(model)}.",
            file=out,
            flush=True,
        )
        _wait_for(stop)
        server.stop()
    log.info("draining: waiting for turns in progress to reach a stopping point")
    drained = service.runner.shutdown()
    log.info("stopped (%s)", "drained" if drained else "turns left to the next start")
    print(
        "closebot: stopped; runs in progress continue from the store on the next start.",
        file=out,
        flush=True,
    )
    return 0

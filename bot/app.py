"""Builds the Bolt app and the chosen transport; wires handlers, runner and store.

HTTP mode is served by waitress: a production-grade, pure-Python WSGI server with a
bounded thread pool, in one process. One process matters here: the runner keeps the
per-thread order of turns in memory, which a pre-forking server (gunicorn) would split
across workers. Socket Mode (development, no public URL) uses slack_sdk's own client.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_bolt.error import BoltError
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
)

from bot import handlers
from bot.assemble import close_loop
from bot.close.checks import STEPS
from bot.config import Settings
from bot.errors import ConfigError
from bot.models import Model
from bot.runner import Runner
from bot.slack_presenter import SlackPresenter
from bot.store import Store

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"


def web_client(settings: Settings) -> WebClient:
    """The Web API client: SLACK_API_URL, with 429 (Retry-After) and connection retries."""
    return WebClient(
        token=settings.slack_bot_token,
        base_url=settings.slack_api_url,
        timeout=15,
        retry_handlers=[
            ConnectionErrorRetryHandler(max_retry_count=2),
            RateLimitErrorRetryHandler(max_retry_count=3),
        ],
    )


@dataclass
class Service:
    """Everything a running bot is made of."""

    app: App
    store: Store
    runner: Runner
    presenter: SlackPresenter


def build_service(
    settings: Settings, *, store: Store, model: Model, socket_mode: bool = False, workers: int = 4
) -> Service:
    """The Bolt app with its listeners, runner and presenter; checks the token with auth.test."""
    _require(settings, socket_mode=socket_mode)
    client = web_client(settings)
    try:
        app = App(
            client=client,
            signing_secret=settings.slack_signing_secret or "socket-mode",
            process_before_response=True,
        )
    except (BoltError, SlackApiError) as e:
        raise ConfigError(
            f"Slack refused SLACK_BOT_TOKEN ({_reason(e)}); check the token and SLACK_API_URL"
        ) from e
    presenter = SlackPresenter(
        client=client, store=store, steps=STEPS, approvers=settings.approvers
    )
    ttl = (
        timedelta(minutes=settings.question_timeout_minutes)
        if settings.question_timeout_minutes
        else None
    )
    loop = close_loop(settings, store=store, presenter=presenter, model=model, question_ttl=ttl)
    runner = Runner(store=store, loop=loop, presenter=presenter, max_workers=workers)
    handlers.register(
        app,
        handlers.Deps(
            store=store, runner=runner, approvers=settings.approvers, data_dir=settings.data_dir
        ),
    )
    return Service(app=app, store=store, runner=runner, presenter=presenter)


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


def wsgi_app(service: Service) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    """/slack/events for Bolt (events, commands, interactivity on one path) and GET /healthz."""
    bolt = SlackRequestHandler(service.app, path=EVENTS_PATH)

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == HEALTH_PATH and environ.get("REQUEST_METHOD") in (
            "GET",
            "HEAD",
        ):
            try:
                waiting = len(service.store.runs_with_status("waiting"))
                body, status = {"ok": True, "db": "ok", "runs_waiting": waiting}, "200 OK"
            except Exception as e:  # the health check reports, it does not crash
                body, status = {"ok": False, "db": str(e)}, "503 Service Unavailable"
            raw = json.dumps(body).encode()
            start_response(
                status, [("Content-Type", "application/json"), ("Content-Length", str(len(raw)))]
            )
            return [raw]
        return bolt(environ, start_response)

    return application


class HttpServer:
    """waitress on host:port (port 0 picks a free one); start() returns once it listens."""

    def __init__(self, service: Service, *, host: str, port: int, threads: int = 8) -> None:
        from waitress.server import create_server

        self.server = create_server(
            wsgi_app(service), host=host, port=port, threads=threads, ident="closebot"
        )
        self.port: int = self.server.effective_port
        self.host = host
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="closebot-http", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.server.run()
        except (OSError, ValueError):
            # Closing the listening socket under waitress's select loop ends it this way.
            if not self._stopping.is_set():
                raise

    def stop(self) -> None:
        self._stopping.set()
        self.server.close()
        if self._thread:
            self._thread.join(timeout=10)


def serve(
    settings: Settings, *, store: Store, model: Model, http: bool, host: str, port: int, out: Any
) -> int:
    """Run the bot until SIGINT/SIGTERM: HTTP, or Socket Mode when SLACK_APP_TOKEN is set and --http is not."""
    socket_mode = bool(settings.slack_app_token) and not http
    service = build_service(settings, store=store, model=model, socket_mode=socket_mode)
    recovered = service.runner.recover()
    stop = threading.Event()
    service.runner.watch_deadlines(stop)
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
        stop.wait()
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
        stop.wait()
        server.stop()
    service.runner.shutdown()
    print(
        "closebot: stopped; runs in progress continue from the store on the next start.",
        file=out,
        flush=True,
    )
    return 0

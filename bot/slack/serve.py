"""`closebot serve`: the bot until SIGINT/SIGTERM — over HTTP (waitress, bot/slack/http/) or,
when SLACK_APP_TOKEN is set and --http is not, Socket Mode (slack_sdk's own client). Recovers
the runs a stopped process left, runs the watchdog, and drains the turns in progress."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.core.config import Settings
from bot.core.errors import ConfigError
from bot.core.models import Model
from bot.slack.app import build_service, slack_reason
from bot.slack.http.server import EVENTS_PATH, HEALTH_PATH, HttpServer
from bot.store import Store

log = logging.getLogger(__name__)

SWITCH_INTERVAL_S = 0.0005


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
                f"Slack refused SLACK_APP_TOKEN ({slack_reason(e)}); it needs the connections:write scope"
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

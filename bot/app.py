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
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from http import HTTPStatus
from typing import Any

from slack_bolt import App
from slack_bolt.context import BoltContext
from slack_bolt.error import BoltError
from slack_bolt.request import BoltRequest
from slack_bolt.request.internals import build_context
from slack_bolt.response import BoltResponse
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
)

from bot import edge, handlers
from bot.assemble import close_loop
from bot.close.registry import STEPS
from bot.config import Settings
from bot.errors import BusyError, ConfigError, ReplayedError, StorageError
from bot.models import Model
from bot.priority import ACKS
from bot.runner import Held, Runner
from bot.slack_http import KeepAliveWebClient
from bot.slack_presenter import SlackPresenter
from bot.slack_work import SlackWork
from bot.store import Store

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
SWITCH_INTERVAL_S = 0.0005
HEALTH_PATH = "/healthz"


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


def presenter_for(settings: Settings, store: Store, client: WebClient) -> SlackPresenter:
    """How runs show in Slack."""
    return SlackPresenter(
        client=client,
        store=store,
        steps=STEPS,
        approvers=settings.approvers,
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
    presenter = presenter_for(settings, store, client)
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
    handlers.register(
        app,
        handlers.Deps(
            store=store, work=work, approvers=settings.approvers, data_dir=settings.data_dir
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
        if user and channel and not isinstance(error, StorageError):
            text = "Something went wrong on my side and nothing was changed; please try again. If it keeps happening, tell whoever runs closebot."
            work.runner.side(
                lambda: work.presenter.ephemeral(
                    channel=str(channel), user=str(user), thread_ts=None, text=text
                )
            )

    return on_error


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


def health(service: Service) -> tuple[int, dict[str, Any]]:
    """What /healthz answers: 503 when the bot cannot work (database or Slack)."""
    db = service.store.health()
    body: dict[str, Any] = {"ok": False, "db": db, "slack": service.work.slack_status}
    try:
        with service.store.quick():
            body["runs_waiting"] = len(service.store.runs_with_status("waiting"))
            body["runs_stuck"] = len(service.store.stuck_runs(idle_for=service.work.stuck_after))
    except BusyError:
        body["db"] = "locked"
    except Exception as e:  # the health check reports, it does not crash
        body["db"] = f"error: {e}"
    body["ok"] = body["db"] == "ok" and body["slack"] == "ok"
    return (200 if body["ok"] else 503), body


class ParsedRequest(BoltRequest):
    """A Bolt request over a body the edge has already parsed (exactly as Bolt's own
    parse_body would): a large form's payload is URL-decoded and JSON-parsed once, not twice."""

    def __init__(
        self, *, raw_body: str, body: dict[str, Any], query: str, headers: dict[str, str]
    ) -> None:
        super().__init__(body="", query=query, headers=dict(headers))
        self.raw_body = raw_body  # what Bolt's signature check reads
        self.body = body
        self.context = build_context(BoltContext({}), body)


class ThenStart(list[bytes]):
    """A WSGI answer that starts the jobs its request queued when the server closes it:
    after the last byte is written (PEP 3333: the server always calls close())."""

    def __init__(self, chunks: list[bytes], held: Held) -> None:
        super().__init__(chunks)
        self.held = held

    def close(self) -> None:
        self.held.release()


def wsgi_app(service: Service) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    """/slack/events through the edge checks to Bolt (events, commands, interactivity on one
    path) and GET /healthz. One log line per request: what it was, the status, how long."""

    def answer(
        start_response: Callable[..., Any], status: int, body: dict[str, Any] | None = None
    ) -> list[bytes]:
        raw = json.dumps(body).encode() if body is not None else b""
        headers = [("Content-Length", str(len(raw)))]
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        start_response(f"{status} {HTTPStatus(status).phrase}", headers)
        return [raw]

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        started = time.monotonic()
        method, path = environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", "")
        outcome = {"status": 0, "kind": "-"}

        def recording_start(status: str, headers: list[Any], *rest: Any) -> Any:
            outcome["status"] = int(status.split()[0])
            return start_response(status, headers, *rest)

        try:
            with ACKS.ack():
                return _route(environ, recording_start, method, path, outcome)
        finally:
            log.info(
                "%s %s %s → %s in %.1f ms",
                method,
                path,
                outcome["kind"],
                outcome["status"],
                (time.monotonic() - started) * 1000,
            )

    def _route(
        environ: dict[str, Any],
        start_response: Callable[..., Any],
        method: str,
        path: str,
        outcome: dict[str, Any],
    ) -> Iterable[bytes]:
        if path == HEALTH_PATH and method in ("GET", "HEAD"):
            outcome["kind"] = "health"
            status, body = health(service)
            return answer(start_response, status, body)
        if path != EVENTS_PATH:
            return answer(start_response, 404, {"error": "not found"})
        if method != "POST":
            return answer(start_response, 405, {"error": "POST only"})
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return answer(start_response, 400, {"error": "bad Content-Length"})
        if length < 0 or length > edge.MAX_BODY:
            return answer(start_response, 413, {"error": "the body is too large"})
        raw = environ["wsgi.input"].read(length) if length else b""
        headers = {
            k[5:].replace("_", "-").lower(): str(v)
            for k, v in environ.items()
            if k.startswith("HTTP_")
        }
        headers["content-type"] = str(environ.get("CONTENT_TYPE", ""))
        try:
            checked = edge.check(raw, headers, service.signing_secret)
        except edge.Refused as e:
            outcome["kind"] = f"refused({e.reason})"
            return answer(start_response, e.status, {"error": e.reason})
        outcome["kind"] = checked.kind
        request = ParsedRequest(
            raw_body=raw.decode("utf-8"),
            body=checked.body,
            query=str(environ.get("QUERY_STRING") or ""),
            headers=headers,
        )
        # The request's signature is recorded in the listener's own transaction (a replay is
        # answered once), and the work it queues starts once the answer has been written.
        held = service.runner.hold()
        try:
            with held, service.store.request(f"sig:{checked.signature}") as sighting:
                if not sighting.first:
                    outcome["kind"] += " (replay)"
                    held.drop()
                    return answer(start_response, 200)
                response = service.app.dispatch(request)
        except BaseException:
            held.release()  # what was queued before the failure still runs
            raise
        if sighting.duplicate:  # its twin, delivered at the same moment, did the work
            outcome["kind"] += " (duplicate)"
            held.drop()
        payload = (response.body or "").encode("utf-8")
        out_headers = [(k, v) for k, values in response.headers.items() for v in values]
        out_headers = [(k, v) for k, v in out_headers if k.lower() != "content-length"]
        start_response(
            f"{response.status} {HTTPStatus(response.status).phrase}",
            [*out_headers, ("Content-Length", str(len(payload)))],
        )
        return ThenStart([payload], held)

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

"""The HTTP side of closebot: /slack/events through the edge checks to Bolt, GET /healthz,
GET /slack/install and /slack/oauth_redirect (the OAuth install, when installed in many
workspaces: issue 32), and the waitress server that serves them.

waitress is a production-grade, pure-Python WSGI server with a bounded thread pool, in one
process. One process matters here: the runner keeps the per-thread order of turns in
memory, which a pre-forking server (gunicorn) would split across workers.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from slack_bolt.request import BoltRequest

from bot.core.errors import BusyError, CorruptDatabaseError
from bot.core.runner import Held, Runner
from bot.slack.http import edge, rolling
from bot.store.ack_priority import ACKS

if TYPE_CHECKING:
    from bot.slack.app import Service

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
INSTALL_PATH = "/slack/install"  # Bolt's OAuthSettings defaults, kept
REDIRECT_PATH = "/slack/oauth_redirect"


def health(service: Service) -> tuple[int, dict[str, Any]]:
    """What /healthz answers: 503 when the bot cannot work (database or Slack)."""
    db = service.store.health()  # ok, locked, full, corrupt, read-only: …, outdated: …
    body: dict[str, Any] = {"ok": False, "db": db, "slack": service.work.slack_status}
    try:
        with service.store.quick():
            body["runs_waiting"] = len(service.store.runs.with_status("waiting"))
            body["runs_stuck"] = len(service.store.runs.stuck(idle_for=service.work.stuck_after))
    except BusyError:
        body["db"] = "locked"
    except CorruptDatabaseError:
        body["db"] = "corrupt"
    except Exception as e:  # the health check reports, it does not crash
        body["db"] = f"error: {e}"
    body["ok"] = body["db"] == "ok" and body["slack"] == "ok"
    return (200 if body["ok"] else 503), body


def bolt_request(body: dict[str, Any], *, query: str, headers: dict[str, str]) -> BoltRequest:
    """A Bolt request over a body the edge has already verified and parsed (exactly as Bolt's
    own parse_body would): a large form's payload is URL-decoded and JSON-parsed once, not
    twice. Bolt's public way to hand it a parsed body is Socket Mode's, whose only difference
    is that Bolt does not check the signature again (the edge has)."""
    return BoltRequest(body=body, query=query, headers=dict(headers), mode="socket_mode")


class ThenStart(list[bytes]):
    """A WSGI answer that starts the jobs its request queued when the server closes it:
    after the last byte is written (PEP 3333: the server always calls close()), from the
    runner's starter thread, so the request's thread is free for its connection at once."""

    def __init__(self, chunks: list[bytes], held: Held, runner: Runner) -> None:
        super().__init__(chunks)
        self.held = held
        self.runner = runner

    def close(self) -> None:
        self.runner.release_later(self.held)


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
        flow = service.app.oauth_flow
        if path in (INSTALL_PATH, REDIRECT_PATH) and flow is not None:
            outcome["kind"] = "install" if path == INSTALL_PATH else "oauth_redirect"
            if method not in ("GET", "HEAD"):
                return answer(start_response, 405, {"error": "GET only"})
            return _oauth(environ, start_response, path)
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
        if edge.is_ssl_check(raw, headers):
            outcome["kind"] = "ssl_check"
            return answer(start_response, 200)
        try:
            checked = edge.check(raw, headers, service.signing_secret)
        except edge.Refused as e:
            outcome["kind"] = f"refused({e.reason})"
            return answer(start_response, e.status, {"error": e.reason})
        outcome["kind"] = checked.kind
        if checked.kind != "url_verification" and service.store.newer_schema():
            outcome["kind"] += " (upgrading: a newer closebot serves)"
            status, polite = rolling.while_upgrading(service, checked)
            return answer(start_response, status, polite)
        request = bolt_request(
            checked.body, query=str(environ.get("QUERY_STRING") or ""), headers=headers
        )
        # The request's signature is recorded in the listener's own transaction (a replay is
        # answered once), and the work it queues starts once the answer has been written.
        held = service.runner.hold()
        try:
            with held, service.store.replay.request(f"sig:{checked.signature}") as sighting:
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
        return ThenStart([payload], held, service.runner)

    def _oauth(
        environ: dict[str, Any], start_response: Callable[..., Any], path: str
    ) -> Iterable[bytes]:
        """Bolt's own OAuth flow: the install page (its "Add to Slack" link carries a state
        kept in the state store and a cookie), and the redirect that checks both and
        exchanges the code at oauth.v2.access into the installation store."""
        flow = service.app.oauth_flow
        assert flow is not None
        headers: dict[str, str | Sequence[str]] = {
            k[5:].replace("_", "-").lower(): str(v)
            for k, v in environ.items()
            if k.startswith("HTTP_")
        }
        request = BoltRequest(
            body="", query=str(environ.get("QUERY_STRING") or ""), headers=headers
        )
        if path == INSTALL_PATH:
            response = flow.handle_installation(request)
        else:
            response = flow.handle_callback(request)
        payload = (response.body or "").encode("utf-8")
        out = [(k, v) for k, values in response.headers.items() for v in values]
        out = [(k, v) for k, v in out if k.lower() != "content-length"]
        start_response(
            f"{response.status} {HTTPStatus(response.status).phrase}",
            [*out, ("Content-Length", str(len(payload)))],
        )
        return [payload]

    return application


def connection_limit() -> int:
    """As many connections as the process may hold open, less room for the database, the
    Web API client and the rest (the soft limit on open files raised to the hard one first)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard if hard != resource.RLIM_INFINITY else 65_536, 65_536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    room = soft if soft != resource.RLIM_INFINITY else 65_536
    return max(100, min(10_000, room - 256))


class HttpServer:
    """waitress on host:port (port 0 picks a free one); start() returns once it listens."""

    def __init__(self, service: Service, *, host: str, port: int, threads: int = 8) -> None:
        from waitress.server import create_server

        self.server = create_server(
            wsgi_app(service),
            host=host,
            port=port,
            threads=threads,
            ident="closebot",
            # poll(), not select(): select() fails outright once a descriptor number
            # passes 1024, which a busy process (or a long test session) reaches
            asyncore_use_poll=True,
            # A server Slack reaches over the internet (issue 31): waitress reads headers
            # without a worker thread, so slow or idle clients cost only connection slots —
            # enough slots that 120 dripping and 1,000 idle connections leave room for Slack
            # (the default, 100, let them refuse it), idle ones closed after 30 s (default
            # 120), headers at most 64 KB (Slack's are a few hundred bytes; default 256 KB).
            connection_limit=connection_limit(),
            channel_timeout=30,
            cleanup_interval=10,
            max_request_header_size=65_536,
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

    def stop(self, *, grace: float = 5.0) -> None:
        """Stop taking connections, let the requests in flight finish and their answers go
        out (at most `grace` seconds), then close every socket from the server's own loop.

        waitress's own close() closes the sockets at once, under task threads still
        answering: a request in flight then dies writing to a closed descriptor (EBADF).
        """
        from waitress import wasyncore

        self._stopping.set()
        server = self.server
        server.accepting = False  # readable() says no: the loop accepts nothing more
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=grace)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(
            getattr(c, "total_outbufs_len", 0) for c in list(server._map.values())
        ):
            time.sleep(0.01)  # the loop is writing the last answers out
        if self._thread and self._thread.is_alive():
            # on the loop's own thread, so no socket is closed under its poll()
            server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))
            self._thread.join(timeout=10)
        if server._map:
            wasyncore.close_all(server._map)

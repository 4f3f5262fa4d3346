"""A small threaded HTTP server on loopback for the sandbox: routes in, responses out.

Standard library only: the sandbox's fake Slack and its page are development tools on
127.0.0.1, and server-sent events need a server that writes as it goes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: Message
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    stream: Iterator[bytes] | None = None  # written chunk by chunk (server-sent events)
    close: bool = False  # close the connection after answering, without saying so first
    drop: bool = False  # close the connection without answering at all


def json_response(data: Any, status: int = 200, **headers: str) -> Response:
    return Response(
        status, json.dumps(data).encode(), {"Content-Type": "application/json", **headers}
    )


def text_response(text: str, status: int = 200) -> Response:
    return Response(status, text.encode(), {"Content-Type": "text/plain; charset=utf-8"})


Route = Callable[[Request], Response | None]  # None: not this route's path


class LoopbackServer:
    """Serves `routes` (first answer wins) on host:port; port 0 lets the OS choose."""

    def __init__(
        self,
        routes: list[Route],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        on_connection: Callable[[], None] | None = None,
    ) -> None:
        self.routes = routes
        self.on_connection = on_connection  # told of each TCP connection accepted
        self.stopping = threading.Event()
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self.host = host
        self.port: int = self._server.server_address[1]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> LoopbackServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="sandbox-http",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._thread:  # shutdown() waits for a serve_forever that must have started
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # the bot's kept-alive calls: no delayed-ACK stalls

            def log_message(self, format: str, *args: object) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                if server.on_connection is not None:
                    server.on_connection()

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("content-length") or 0)
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=dict(parse_qsl(parts.query)),
                    headers=self.headers,
                    body=self.rfile.read(length) if length else b"",
                )
                response = next(
                    (r for r in (route(request) for route in server.routes) if r is not None),
                    text_response("not found", 404),
                )
                if response.drop:  # as a server closing an idle connection as a request came in
                    self.close_connection = True
                    return
                self.send_response(response.status)
                for key, value in response.headers.items():
                    self.send_header(key, value)
                if response.stream is None:
                    self.send_header("Content-Length", str(len(response.body)))
                    self.end_headers()
                    self.wfile.write(response.body)
                    if response.close:  # as a server timing out an idle kept-alive connection
                        self.close_connection = True
                    return
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    for chunk in response.stream:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the page went away

            do_GET = do_POST = do_HEAD = _serve

        return Handler

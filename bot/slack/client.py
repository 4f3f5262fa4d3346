"""slack_sdk's WebClient over kept-alive connections.

The stock client opens a new TCP (and, against Slack, TLS) connection for every Web API
call: a resume makes about a dozen calls, so a burst of 500 resumes opened 6,000 connections.
This client keeps one HTTP/1.1 connection per thread and host and reuses it, with TCP_NODELAY
set (without it, each call on a kept-alive connection can wait ~40 ms on a delayed ACK).
Everything above the socket is slack_sdk's own: its retry handlers (429 Retry-After,
connection errors), its SlackApiError, its request building.

A kept-alive connection the server has closed while it sat idle is noticed before it is used
(its socket reads as closed) and replaced. If the server closes it in the instant between
that check and the call, the call fails before any answer arrives (the server hung up
without answering, or the request could not be written); that call is sent once more on a
new connection. A call on a new connection is never sent twice here.

After Slack takes the token back (`tokens_revoked`, `app_uninstalled`: `revoked`), no call
goes out with it but auth.test (the watchdog's check of whether a token works again): each
is refused here with the reason, as a SlackApiError, without being sent.

Installed in many workspaces (issue 32), the client has no token of its own: each call
carries the token of the workspace the work in hand is for (`token_for`, from the
installation store: bot/slack/installations.py), and a call for no workspace, or one not
installed, is refused without being sent.
"""

from __future__ import annotations

import http.client
import io
import json
import random
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.error import HTTPError
from urllib.parse import SplitResult, urlsplit
from urllib.request import Request

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web import SlackResponse

from bot.core.config import Settings

# Writing a request on a connection the server has closed: nothing of it was read.
UNSENT = (BrokenPipeError, ConnectionResetError)


# Calls that carry no bot token: the OAuth exchange and refresh (client id and secret instead).
TOKENLESS = frozenset({"oauth.v2.access", "oauth.v2.exchange"})


def web_client(settings: Settings, *, token: str | None = None) -> KeepAliveWebClient:
    """The Web API client: SLACK_API_URL, with 429 (Retry-After) and connection retries,
    over kept-alive connections; the bot token unless another is given."""
    return KeepAliveWebClient(
        token=token or settings.slack_bot_token,
        base_url=settings.slack_api_url,
        timeout=15,
        retry_handlers=[
            ConnectionErrorRetryHandler(max_retry_count=2),
            RateLimitRetryHandler(max_retry_count=3),
        ],
    )


def bot_token(client: WebClient) -> str:
    """The token `client`'s calls carry now (for a file download, which sends it too)."""
    if isinstance(client, KeepAliveWebClient):
        return client.bearer()
    return str(client.token or "")


# How a 429's Retry-After is waited out: real time here; the tests put the fake Slack's clock
# in its place (tests/conftest.py), so Slack's real tiers cost them no wall time.
retry_wait: Callable[[float], None] = time.sleep


class RateLimitRetryHandler(RateLimitErrorRetryHandler):
    """slack_sdk's 429 handler (wait Retry-After seconds and a little more, try again), waiting
    through `retry_wait`."""

    def prepare_for_next_attempt(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        if response is None:
            raise error or RuntimeError("no response to retry")
        state.next_attempt_requested = True
        after = next((v for k, v in response.headers.items() if k.lower() == "retry-after"), None)
        try:
            seconds = float(after[0]) if after else 1.0
        except ValueError:
            seconds = 1.0
        retry_wait(seconds + random.random())
        state.increment_current_attempt()


class _NotSent(Exception):
    """The call failed before the server could have read it."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class KeepAliveWebClient(WebClient):
    """A WebClient whose calls reuse one connection per thread and host."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._local = threading.local()
        self.connections_opened = 0  # for the benchmark and the tests
        self._count = threading.Lock()
        self.revoked: str | None = None  # why Slack took the token back; None: it works
        # many workspaces: the token of the workspace the work in hand is for (or a refusal)
        self.token_for: Callable[[str], str] | None = None

    def bearer(self) -> str:
        """The token a call made now would carry (a file download sends it too)."""
        if self.token_for is not None:
            return self.token_for("url_private_download")
        return str(self.token or "")

    def api_call(self, api_method: str, **kwargs: Any) -> Any:
        """A Web API call, unless the token was taken back (then only auth.test is sent)."""
        if self.token_for is not None and api_method not in TOKENLESS:
            explicit = any(
                isinstance(kwargs.get(part), dict) and kwargs[part].get("token")
                for part in ("params", "json", "data")
            )
            if not explicit:  # Bolt's own auth.test passes the token it found
                token = self.token_for(api_method)
                kwargs["headers"] = {
                    **(kwargs.get("headers") or {}),
                    "Authorization": f"Bearer {token}",
                }
        reason = self.revoked
        if reason is not None and api_method != "auth.test":
            raise SlackApiError(
                f"not sent: Slack took the token back ({reason})",
                SlackResponse(
                    client=self,
                    http_verb="POST",
                    api_url=api_method,
                    req_args={},
                    data={"ok": False, "error": reason},
                    headers={},
                    status_code=200,
                ),
            )
        return super().api_call(api_method, **kwargs)

    def respond(self, url: str, body: dict[str, Any]) -> tuple[int, str]:
        """POST `body` as JSON to `url` — an interaction's response_url — over this thread's
        kept-alive connection to its host, as the Web API calls go: (HTTP status, the answer's
        text). No token is sent (a response_url needs none)."""
        request = Request(
            url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json;charset=utf-8"},
            method="POST",
        )
        try:
            answer = self._perform_urllib_http_request_internal(url, request)
        except HTTPError as e:
            return e.code, e.read().decode("utf-8", errors="replace")
        return int(answer["status"]), str(answer["body"])

    def _perform_urllib_http_request_internal(self, url: str, req: Request) -> dict[str, Any]:
        parts = urlsplit(url)
        if self.proxy is not None or parts.scheme not in ("http", "https"):
            return super()._perform_urllib_http_request_internal(url, req)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        headers = dict(req.header_items())
        for attempt in (1, 2):
            conn, reused = self._connection(parts)
            try:
                try:
                    conn.request(req.get_method(), target, body=req.data, headers=headers)
                except UNSENT as e:
                    raise _NotSent(e) from e  # the request did not get through
                try:
                    response = conn.getresponse()
                except http.client.RemoteDisconnected as e:
                    # Closed without a word of answer: how a server drops an idle kept-alive
                    # connection (it never read the request). Anything else is not retried.
                    raise _NotSent(e) from e
                raw = response.read()
            except _NotSent as e:
                self._drop(parts)
                if reused and attempt == 1:
                    continue  # once more, on a new connection
                raise e.error from None
            except BaseException:
                self._drop(parts)  # a timeout or a half-read answer: never reuse this one
                raise
            if response.will_close:
                self._drop(parts)
            return _answer(url, response, raw)
        raise AssertionError("unreachable")  # pragma: no cover

    def _connection(self, parts: SplitResult) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection to the host (and whether it was used before)."""
        pool: dict[str, http.client.HTTPConnection] = self._local.__dict__.setdefault("pool", {})
        key = f"{parts.scheme}://{parts.netloc}"
        conn = pool.get(key)
        if conn is not None and not _closed_by_peer(conn):
            return conn, True
        if conn is not None:  # the server closed it while it sat idle
            del pool[key]
            conn.close()
        host, port = parts.hostname or "", parts.port
        if parts.scheme == "https":
            context = self.ssl or ssl.create_default_context()
            conn = http.client.HTTPSConnection(host, port, timeout=self.timeout, context=context)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=self.timeout)
        conn.connect()
        if conn.sock is not None:
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._count:
            self.connections_opened += 1
        pool[key] = conn
        return conn, False

    def _drop(self, parts: SplitResult) -> None:
        pool: dict[str, http.client.HTTPConnection] = self._local.__dict__.get("pool", {})
        conn = pool.pop(f"{parts.scheme}://{parts.netloc}", None)
        if conn is not None:
            conn.close()


def _closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """Whether an idle kept-alive connection can no longer take a request: its socket is
    readable (the server's FIN, or bytes nobody asked for) or gone."""
    if conn.sock is None:
        return True
    try:
        readable, _, _ = select.select([conn.sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _answer(url: str, response: http.client.HTTPResponse, raw: bytes) -> dict[str, Any]:
    """What slack_sdk's urllib path returns, or the HTTPError it raises, for one response."""
    if response.status >= 400:  # urllib raises these; slack_sdk's retry handlers expect that
        raise HTTPError(url, response.status, response.reason, response.headers, io.BytesIO(raw))
    if response.headers.get_content_type() == "application/gzip":
        return {"status": response.status, "headers": response.headers, "body": raw}
    charset = response.headers.get_content_charset() or "utf-8"
    return {"status": response.status, "headers": response.headers, "body": raw.decode(charset)}

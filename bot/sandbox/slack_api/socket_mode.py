"""Socket Mode in the fake Slack: `apps.connections.open` with an app-level token, and the
WebSocket on loopback it names, which says hello and answers pings — enough for slack_sdk's
own Socket Mode client to connect as it connects to Slack.

Slack's rules kept here (docs.slack.dev/apis/events-api/using-socket-mode;
docs.slack.dev/reference/methods/apps.connections.open):
- the method takes an app-level token (`xapp-…`) with `connections:write`; a bot token is
  refused `not_allowed_token_type`, an unknown one `invalid_auth`;
- it answers `{"ok": true, "url": "wss://…"}`, a URL made for this connection;
- on connecting, Slack sends `{"type": "hello", …}` first; events then arrive as envelopes
  (`envelope_id`, `type`, `payload`, `accepts_response_payload`) that the app acknowledges
  by sending back `{"envelope_id": …}`.
Here the URL is `ws://127.0.0.1:PORT/…` (slack_sdk connects without TLS to a port other
than 443, for its own tests).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import socket
import struct
import threading
import uuid
from typing import Any

# RFC 6455 §1.3: the accept key is base64(SHA-1(key + this GUID))
_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA


class SocketModeServer:
    """WebSocket connections on 127.0.0.1 (port 0), each greeted with hello; `send` an
    envelope to the newest, `acks` the envelope ids the app acknowledged."""

    def __init__(self, app_id: str = "A0SANDBOX") -> None:
        self.app_id = app_id
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._changed = threading.Condition()
        self._sockets: list[socket.socket] = []
        self.acks: dict[str, dict[str, Any]] = {}
        self.hellos = 0  # connections greeted
        self._stopped = False
        threading.Thread(target=self._accept, name="fake-socket-mode", daemon=True).start()

    def new_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/link/?ticket={uuid.uuid4()}&app_id={self.app_id}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            key = ""
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.strip().lower() == "sec-websocket-key":
                    key = value.strip()
            accept = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
            conn.sendall(
                (
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                ).encode()
            )
            hello = {
                "type": "hello",
                "num_connections": 1,
                "debug_info": {"host": "fake-socket-mode", "approximate_connection_time": 18060},
                "connection_info": {"app_id": self.app_id},
            }
            with self._changed:
                self._sockets.append(conn)
                _send(conn, TEXT, json.dumps(hello).encode())
                self.hellos += 1
                self._changed.notify_all()
            self._read(conn)
        except OSError:
            pass
        finally:
            with self._changed:
                if conn in self._sockets:
                    self._sockets.remove(conn)
            conn.close()

    def _read(self, conn: socket.socket) -> None:
        while True:
            opcode, data = _receive(conn)
            if opcode is None or opcode == CLOSE:
                return
            if opcode == PING:
                with self._changed:
                    _send(conn, PONG, data)
            elif opcode == TEXT:
                message = json.loads(data.decode("utf-8"))
                if isinstance(message, dict) and message.get("envelope_id"):
                    with self._changed:
                        self.acks[str(message["envelope_id"])] = message
                        self._changed.notify_all()

    def send(self, kind: str, payload: dict[str, Any], *, timeout: float = 10.0) -> str:
        """Deliver one envelope (`events_api`, `slash_commands`, `interactive`) to the newest
        connection; its envelope id (wait for the app's ack with `wait_ack`)."""
        envelope_id = str(uuid.uuid4())
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": 0,
            "retry_reason": "",
        }
        with self._changed:
            if not self._changed.wait_for(lambda: bool(self._sockets), timeout):
                raise TimeoutError("no Socket Mode connection to send to")
            _send(self._sockets[-1], TEXT, json.dumps(envelope).encode())
        return envelope_id

    def wait_ack(self, envelope_id: str, timeout: float = 10.0) -> dict[str, Any]:
        with self._changed:
            if not self._changed.wait_for(lambda: envelope_id in self.acks, timeout):
                raise TimeoutError(f"envelope {envelope_id} was not acknowledged")
            return self.acks[envelope_id]

    def wait_hello(self, count: int = 1, timeout: float = 10.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.hellos >= count, timeout)

    def close(self) -> None:
        self._listener.close()
        with self._changed:
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)


def _send(conn: socket.socket, opcode: int, data: bytes) -> None:
    """One unmasked frame, server to client (RFC 6455 §5.2)."""
    head = bytes([0x80 | opcode])
    if len(data) < 126:
        head += bytes([len(data)])
    elif len(data) < 1 << 16:
        head += bytes([126]) + struct.pack("!H", len(data))
    else:
        head += bytes([127]) + struct.pack("!Q", len(data))
    conn.sendall(head + data)


def _exactly(conn: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _receive(conn: socket.socket) -> tuple[int | None, bytes]:
    """One frame from the client, unmasked (clients mask every frame: RFC 6455 §5.3)."""
    head = _exactly(conn, 2)
    if head is None:
        return None, b""
    opcode, length = head[0] & 0x0F, head[1] & 0x7F
    if length == 126:
        raw = _exactly(conn, 2)
        length = struct.unpack("!H", raw)[0] if raw else 0
    elif length == 127:
        raw = _exactly(conn, 8)
        length = struct.unpack("!Q", raw)[0] if raw else 0
    mask = _exactly(conn, 4) if head[1] & 0x80 else b"\0\0\0\0"
    body = _exactly(conn, length) if length else b""
    if mask is None or body is None:
        return None, b""
    return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(body))

"""A loopback stand-in for the Anthropic Messages API that the real SDK talks to."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.loopback import QuietHandler, loopback


@dataclass
class FakeAnthropic:
    """Answers POST /v1/messages from a queue and records every request."""

    url: str = ""
    answers: list[tuple[int, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)

    def reply(self, *content: dict[str, Any], stop_reason: str = "end_turn") -> None:
        body = {
            "id": f"msg_{len(self.answers)}",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": list(content),
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 8,
            },
        }
        self.answers.append((200, body, {}))

    def hang(self) -> None:
        """The next request gets no answer until `released` is set (a model call in flight)."""
        self.answers.append((0, {}, {}))

    def fail(self, status: int, error_type: str, message: str) -> None:
        body = {"type": "error", "error": {"type": error_type, "message": message}}
        # retry-after-ms keeps the SDK's backoff short in tests
        self.answers.append((status, body, {"retry-after-ms": "5"}))


@contextmanager
def fake_anthropic() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic()

    class Handler(QuietHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            fake.requests.append(json.loads(self.rfile.read(length)))
            fake.headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.path != "/v1/messages" or not fake.answers:
                status, body, headers = (
                    500,
                    {
                        "type": "error",
                        "error": {"type": "api_error", "message": f"unscripted {self.path}"},
                    },
                    {"x-should-retry": "false"},
                )
            else:
                status, body, headers = fake.answers.pop(0)
            if status == 0:  # hang(): answer only once released, and then with a failure
                fake.released.wait(120)
                status, body, headers = 500, {"type": "error", "error": {}}, {}
            self.send(
                status, json.dumps(body).encode(), {"content-type": "application/json", **headers}
            )

    with loopback(Handler) as url:
        fake.url = url
        yield fake

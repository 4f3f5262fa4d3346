"""A bare slack-bolt app for the benchmark's reference figures: every listener only acks.

Run: SLACK_API_URL=… python bench/reference_app.py pbr|defaults — serves /slack/events with waitress (the
server closebot uses, same thread count) on 127.0.0.1, a free port, and prints
`listening on PORT`. `pbr` is process_before_response=True, `defaults` Bolt's defaults.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from slack_bolt import Ack, App
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_sdk import WebClient
from waitress.server import create_server

SECRET = "test-signing-secret"  # the same secret the benchmark signs with


def build(mode: str) -> App:
    # Like closebot's: one auth.test at start-up (against the benchmark's fake Slack), cached.
    client = WebClient(token="xoxb-reference", base_url=os.environ["SLACK_API_URL"])
    app = App(client=client, signing_secret=SECRET, process_before_response=mode == "pbr")

    @app.command("/close")
    def close(ack: Ack) -> None:
        ack()

    @app.action(re.compile(".*"))
    def action(ack: Ack) -> None:
        ack()

    @app.event("message")
    def message(ack: Ack, event: dict[str, Any]) -> None:
        ack()

    return app


def main() -> None:
    mode = sys.argv[1]
    handler = SlackRequestHandler(build(mode), path="/slack/events")
    server = create_server(handler, host="127.0.0.1", port=0, threads=8, ident="reference")
    print(f"listening on {server.effective_port}", flush=True)
    server.run()


if __name__ == "__main__":
    main()

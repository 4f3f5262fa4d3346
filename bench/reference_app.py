"""A bare slack-bolt app for the benchmark's reference figures: every listener only acks.

Run: SLACK_API_URL=… python bench/reference_app.py pbr|dev|defaults — serves /slack/events on
127.0.0.1, a free port, and prints `listening on PORT`. `pbr` is process_before_response=True on
waitress (the server closebot uses, same thread count); `dev` the same app on Bolt's own
development server (`app.start()`: http.server, one request at a time); `defaults` Bolt's
defaults on waitress.
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


def dev_server(app: App) -> None:
    """Bolt's development server (what app.start() runs), bound to 127.0.0.1 on a free port."""
    import slack_bolt.app.app as bolt_app

    real = bolt_app.HTTPServer
    bolt_app.HTTPServer = lambda _address, handler: real(("127.0.0.1", 0), handler)  # type: ignore[misc,assignment]
    server = bolt_app.SlackAppDevelopmentServer(port=0, path="/slack/events", app=app)
    print(f"listening on {server._server.server_address[1]}", flush=True)
    server._server.serve_forever()


def main() -> None:
    mode = sys.argv[1]
    if mode == "dev":
        dev_server(build("pbr"))
        return
    handler = SlackRequestHandler(build(mode), path="/slack/events")
    server = create_server(handler, host="127.0.0.1", port=0, threads=8, ident="reference")
    print(f"listening on {server.effective_port}", flush=True)
    server.run()


if __name__ == "__main__":
    main()

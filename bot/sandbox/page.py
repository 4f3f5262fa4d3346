"""The sandbox page's server: static files, the workspace as JSON, live updates, and actions.

Routes (all on loopback):
  GET  /                   the page            GET /static/<file>   its CSS and JavaScript
  GET  /sandbox/state      what `user` sees    GET /sandbox/events  server-sent events on change
  POST /sandbox/say        a message or /command from a composer
  POST /sandbox/action     a click (buttons, menus in actions blocks) with the form's picks
  POST /sandbox/options    an external select's options
  POST /sandbox/react      a reaction clicked
  POST /sandbox/file       a file dropped on a conversation or chosen with its + button
  GET  /sandbox/files/<id>/<name>   a file, as the person's own client downloads it
  POST /sandbox/home       closebot's App Home opened (app_home_opened)

Loopback-only in fact, not just by the address it binds: every request (the fake Web API's
too) must name this server in `Host` (a page on another site reached through DNS
rebinding names its own), a request with an `Origin` must come from this server's page,
and a POST must carry this start's token (`X-Sandbox-Token`), which only the page this
server serves knows. So no other page, and no other site's form, can act as anyone here.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import threading
from collections.abc import Iterator
from importlib import resources
from typing import Any
from urllib.parse import quote

from bot.sandbox.client import ActionError, SlackClient
from bot.sandbox.http import Request, Response, json_response, text_response
from bot.sandbox.slack_api import BOT_USER, FakeSlack, SlackError

STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
KEEPALIVE_SECONDS = 15.0
MAX_FILE_BYTES = 20_000_000
TOKEN_HEADER = "X-Sandbox-Token"
TOKEN_PLACEHOLDER = b"__SANDBOX_TOKEN__"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def refused(reason: str) -> Response:
    return json_response({"ok": False, "error": reason}, 403)


class Guard:
    """The route in front of every other: Host and Origin must be this server's own."""

    def __init__(self, port: int) -> None:
        self.hosts = {f"{name}:{port}" for name in LOOPBACK_NAMES}
        self.origins = {f"http://{host}" for host in self.hosts}

    def route(self, request: Request) -> Response | None:
        host = (request.headers.get("host") or "").strip().lower()
        if host not in self.hosts:
            return refused(f"the sandbox answers only to {sorted(self.hosts)[0]}, not {host!r}")
        origin = request.headers.get("origin")
        if origin is not None and origin.strip().lower() not in self.origins:
            return refused("the sandbox takes requests only from its own page")
        return None


class Page:
    """Serves the page and turns what a person does into Slack's requests (through SlackClient)."""

    def __init__(
        self,
        fake: FakeSlack,
        client: SlackClient,
        stopping: threading.Event,
        *,
        token: str | None = None,
    ) -> None:
        self.fake = fake
        self.client = client
        self.stopping = stopping
        self.token = token or secrets.token_urlsafe(24)  # per start: only our page has it

    def route(self, request: Request) -> Response | None:
        path, method = request.path, request.method
        if method in ("GET", "HEAD"):
            if path in ("/", "/index.html"):
                page = _static("index.html")
                page.body = page.body.replace(TOKEN_PLACEHOLDER, self.token.encode())
                return page
            if path.startswith("/static/"):
                return _static(path.removeprefix("/static/"))
            if path == "/sandbox/state":
                return json_response(self.state(request.query.get("user", "")))
            if path.startswith("/sandbox/files/"):
                found = self.fake.file_bytes(path.split("/")[3])
                if found is None:
                    return text_response("file_not_found", 404)
                data, f = found
                return Response(
                    200,
                    data,
                    {
                        "Content-Type": "application/octet-stream",
                        "Content-Disposition": f'attachment; filename="{f["name"]}"',
                    },
                )
            if path == "/sandbox/events":
                return Response(
                    200, headers={"Content-Type": "text/event-stream"}, stream=self.events()
                )
            return None
        posts = {
            "/sandbox/say": self.say,
            "/sandbox/action": self.action,
            "/sandbox/options": self.options,
            "/sandbox/react": self.react,
            "/sandbox/file": self.file,
            "/sandbox/home": self.home,
            "/sandbox/stop": self.stop,
            "/sandbox/close_modal": self.close_modal,
        }
        if method != "POST" or path not in posts:
            return None
        if not secrets.compare_digest(
            (request.headers.get(TOKEN_HEADER) or "").encode(), self.token.encode()
        ):
            return refused(f"a write needs this sandbox's {TOKEN_HEADER} (its page sends it)")
        media = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        if media != "application/json":
            # Only the page's own fetch() sends JSON; a form on another site cannot act here.
            return json_response({"ok": False, "error": "send application/json"}, 415)
        try:
            data = request.json()
            if not isinstance(data, dict):
                raise ActionError("send a JSON object")
            return json_response(posts[path](data))
        except (ActionError, SlackError, KeyError, ValueError) as e:
            reason = (
                e.error
                if isinstance(e, SlackError)
                else f"missing {e}"
                if isinstance(e, KeyError)
                else str(e)
            )
            return json_response({"ok": False, "error": reason}, 400)

    def say(self, d: dict[str, Any]) -> dict[str, Any]:
        return self.client.say(
            user=d["user"], channel=d["channel"], text=str(d["text"]), thread_ts=d.get("thread_ts")
        )

    def action(self, d: dict[str, Any]) -> dict[str, Any]:
        return self.client.action(
            user=d["user"],
            channel=d["channel"],
            message_ts=d["message_ts"],
            block_id=d["block_id"],
            action_id=d["action_id"],
            picks=d.get("picks") or {},
            selected=d.get("selected"),
        )

    def options(self, d: dict[str, Any]) -> dict[str, Any]:
        found = self.client.options(
            user=d["user"],
            channel=d["channel"],
            message_ts=d["message_ts"],
            block_id=d["block_id"],
            action_id=d["action_id"],
            value=str(d.get("value") or ""),
        )
        return {"ok": True, "options": found}

    def file(self, d: dict[str, Any]) -> dict[str, Any]:
        try:
            data = base64.b64decode(str(d["data"]), validate=True)
        except (binascii.Error, ValueError):
            raise ActionError("the file's content is not base64") from None
        if len(data) > MAX_FILE_BYTES:
            raise ActionError(f"the file is over {MAX_FILE_BYTES // 1_000_000} MB")
        return self.client.share_file(
            user=d["user"],
            channel=d["channel"],
            thread_ts=d.get("thread_ts"),
            name=str(d["name"]),
            data=data,
            text=str(d.get("text") or ""),
        )

    def home(self, d: dict[str, Any]) -> dict[str, Any]:
        return self.client.home_opened(user=d["user"], tab=str(d.get("tab") or "home"))

    def stop(self, d: dict[str, Any]) -> dict[str, Any]:
        return self.client.stop_stream(user=d["user"], channel=d["channel"], ts=d["ts"])

    def close_modal(self, d: dict[str, Any]) -> dict[str, Any]:
        self.fake.close_modal(str(d["user"]))
        return {"ok": True}

    def react(self, d: dict[str, Any]) -> dict[str, Any]:
        self.client.react(user=d["user"], channel=d["channel"], ts=d["ts"], name=d["name"])
        return {"ok": True}

    def state(self, user: str) -> dict[str, Any]:
        """Everything `user` sees: people, channels, messages (with thread counts), their ephemerals."""
        fake = self.fake
        with fake.lock:
            fake.expire_statuses()  # a status line set two minutes ago is gone (assistant.py)
            # only the conversations `user` can open: never another person's DM
            messages = json.loads(
                json.dumps([m for m in fake.sorted_messages() if fake.can_see(user, m["channel"])])
            )
            for m in messages:  # the person's own client downloads files with its session
                for f in m.get("files") or []:
                    f["url_private_download"] = (
                        f"{fake.url}/sandbox/files/{f['id']}/{quote(f['name'])}"
                    )
            replies: dict[str, list[dict[str, Any]]] = {}
            for m in messages:
                if m.get("thread_ts"):
                    replies.setdefault(m["thread_ts"], []).append(m)
            for m in messages:
                thread = replies.get(m["ts"], [])
                if thread and not m.get("thread_ts"):
                    m["reply_count"] = len(thread)
                    m["reply_users"] = list(dict.fromkeys(r.get("user") for r in thread))[:5]
                    m["latest_reply"] = thread[-1]["ts"]
            return {
                "version": fake.version,
                "team": fake.team_name,
                "me": user,
                "bot": BOT_USER,
                "people": {
                    p.id: {"name": p.name, "title": p.title, "color": p.color}
                    for p in fake.people.values()
                },
                "channels": [
                    {
                        "id": c.id,
                        "name": c.name,
                        "topic": c.topic,
                        "members": len(c.members),
                        "member": user in c.members,
                    }
                    for c in fake.channels.values()
                    if fake.can_see(user, c.id)
                ],
                "messages": messages,
                "ephemerals": [e for e in fake.ephemerals if e["visible_to"] == user],
                "statuses": json.loads(json.dumps(fake.statuses)),
                "home": json.loads(json.dumps(fake.homes.get(user))),
                "modal": json.loads(json.dumps(fake.modals.get(user))),
            }

    def events(self) -> Iterator[bytes]:
        """A server-sent event with the workspace's version whenever it changes."""
        seen = -1
        yield b"retry: 1000\n\n"
        while not self.stopping.is_set():
            now = self.fake.wait_change(seen, timeout=KEEPALIVE_SECONDS if seen >= 0 else 0)
            if now != seen:
                seen = now
                yield f"data: {now}\n\n".encode()
            else:
                yield b": keep-alive\n\n"


def _static(name: str) -> Response:
    if "/" in name or name.startswith("."):
        return text_response("not found", 404)
    resource = resources.files("bot.sandbox") / "static" / name
    if not resource.is_file():
        return text_response("not found", 404)
    suffix = name[name.rfind(".") :]
    return Response(
        200,
        resource.read_bytes(),
        {
            "Content-Type": STATIC_TYPES.get(suffix, "application/octet-stream"),
            "Cache-Control": "no-store",
        },
    )

"""FakeSlack: the workspace with every family of Web API methods, each call checked for
its token and dispatched to its `m_…` method (or failed on purpose), served over HTTP
on loopback (`fake_slack`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl

from bot.sandbox.http import LoopbackServer, Request, Response, json_response, text_response
from bot.sandbox.slack_api.app_config import export_answer, manifest_as_installed
from bot.sandbox.slack_api.assistant import AssistantMethods
from bot.sandbox.slack_api.chat import ChatMethods
from bot.sandbox.slack_api.conversations import ConversationMethods
from bot.sandbox.slack_api.faults import FaultInjection
from bot.sandbox.slack_api.files import SIGN_IN_PAGE, FileMethods
from bot.sandbox.slack_api.reactions import ReactionMethods
from bot.sandbox.slack_api.response_url import ResponseUrls
from bot.sandbox.slack_api.scopes import Grants, conversation_kind
from bot.sandbox.slack_api.socket_mode import SocketModeServer
from bot.sandbox.slack_api.streams import StreamMethods
from bot.sandbox.slack_api.views import ViewMethods
from bot.sandbox.slack_api.workspace import BOT_ID, BOT_USER, Call, SlackError


def parse_params(content_type: str, raw: bytes, query: dict[str, str]) -> dict[str, Any]:
    """A Web API call's arguments, from JSON or a form body; JSON-valued fields decoded."""
    params: dict[str, Any] = dict(query)
    if "json" in content_type:
        body = json.loads(raw or b"{}")
        if isinstance(body, dict):
            params.update(body)
    else:
        params.update(parse_qsl(raw.decode("utf-8", "replace")))
    for key in ("blocks", "files", "attachments"):
        if isinstance(params.get(key), str) and params[key].strip():
            try:
                params[key] = json.loads(params[key])
            except json.JSONDecodeError:
                params[key] = "<not JSON>"
    return params


class FakeSlack(
    FaultInjection,
    ChatMethods,
    StreamMethods,
    ReactionMethods,
    FileMethods,
    AssistantMethods,
    ViewMethods,
    ConversationMethods,
    ResponseUrls,
):
    """The workspace and its Web API. Thread-safe; every change wakes `wait_for` and the page.

    `scopes` / `events`: what the app was granted (default: the project's manifest.yml);
    a call whose scope is not among them is answered `missing_scope`."""

    def __init__(
        self,
        *,
        scopes: Iterable[str] | None = None,
        events: Iterable[str] | None = None,
        app_token: str | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        self.grants = Grants.of(scopes, events)
        # the app-level token Socket Mode takes (None: any xapp-… token without "invalid")
        self.app_token = app_token
        self.socket_mode: SocketModeServer | None = None  # made by apps.connections.open
        self.app_manifest = manifest_as_installed()  # what apps.manifest.export answers

    def grant(self, *scopes: str) -> None:
        """Grant more scopes (a workspace that installed closebot with an optional one,
        e.g. channels:history)."""
        with self._changed:
            self.grants = Grants(self.grants.scopes | set(scopes), self.grants.events)

    def call(
        self, method: str, params: dict[str, Any], token: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """A Web API request as it arrives over HTTP: the bot token checked, then answered."""
        self._held(method, params)
        token = token or params.get("token")
        if method == "apps.connections.open":
            return self.open_connection(token)
        if method == "apps.manifest.export":
            with self._changed:
                self.calls.append(Call(method, params))
                self._bump()
                return export_answer(token, params.get("app_id"), self.app_manifest)
        if self._token_ok(token):
            status, body, headers = self.answer(method, params)
            # Every answer to a call with a valid token names the token's scopes in the
            # x-oauth-scopes header (Bolt reads it from auth.test: slack_bolt/middleware/
            # authorization/internals.py; api.slack.com/legacy/oauth-scopes, "Working with
            # scopes"): `closebot doctor --slack` compares it with manifest.yml.
            return status, body, {"x-oauth-scopes": ",".join(sorted(self.grants.scopes)), **headers}
        with self._changed:
            self.calls.append(Call(method, params))
            self._bump()
        return 200, {"ok": False, "error": "invalid_auth"}, {}

    def answer(
        self, method: str, params: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(HTTP status, JSON body, headers) for one authenticated Web API call, as Slack would answer it."""
        with self._changed:
            self.calls.append(Call(method, params))
            try:
                refused = self._scope_refusal(method, params)
                if refused is not None:
                    if self.on_refusal:
                        self.on_refusal(method, refused)
                    return 200, refused, {}
                fault = self._take_fault(method, params)
                if fault is not None:
                    return fault
                limited = self._over_tier(method, params)
                if limited is not None:
                    return limited
                handler = getattr(self, "m_" + method.replace(".", "_"), None)
                if handler is None:
                    return 200, {"ok": False, "error": "unknown_method"}, {}
                try:
                    return 200, {"ok": True, **handler(params)}, {}
                except SlackError as e:
                    body: dict[str, Any] = {"ok": False, "error": e.error}
                    if e.details:
                        body["errors"] = e.details
                        body["response_metadata"] = {
                            "messages": [f"[ERROR] {d}" for d in e.details]
                        }
                    if self.on_refusal:
                        self.on_refusal(method, body)
                    return 200, body, {}
            finally:
                self._bump()

    def _scope_refusal(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Slack's `missing_scope` answer when the app was not granted the scope `method`
        needs (for conversations.history/.replies/.info, the scope of the conversation's
        kind), with `needed` and `provided` as Slack gives them (docs.slack.dev/reference/
        methods/<method>, "Required scopes"; the table is bot/sandbox/slack_api/scopes.py)."""
        channel_id = str(params.get("channel") or "")
        known = self.channels.get(channel_id)
        private = bool(getattr(known, "private", False) or getattr(known, "is_private", False))
        return self.grants.refusal(method, conversation_kind(channel_id, private=private))

    def _over_tier(
        self, method: str, params: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]] | None:
        """Past the method's rate tier (tiers.py, each row citing its method page): HTTP 429
        `ratelimited` with Retry-After in seconds, as Slack answers
        (https://docs.slack.dev/apis/web-api/rate-limits, "Responding to rate limiting
        conditions")."""
        wait = self.tiers.check(method, params)
        if wait is None:
            return None
        return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(wait)}

    def open_connection(self, token: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
        """apps.connections.open: an app-level token gets a WebSocket URL for Socket Mode
        (socket_mode.py); a bot token is `not_allowed_token_type`, an unknown one
        `invalid_auth` (docs.slack.dev/reference/methods/apps.connections.open, "Errors")."""
        with self._changed:
            self.calls.append(Call("apps.connections.open", {}))
            self._bump()
            fault = self._take_fault("apps.connections.open", {})
            if fault is not None:
                return fault
            if not isinstance(token, str) or not token:
                return 200, {"ok": False, "error": "not_authed"}, {}
            if not token.startswith("xapp-"):
                return 200, {"ok": False, "error": "not_allowed_token_type"}, {}
            valid = token == self.app_token if self.app_token else "invalid" not in token
            if not valid:
                return 200, {"ok": False, "error": "invalid_auth"}, {}
            if self.socket_mode is None:
                self.socket_mode = SocketModeServer()
            return 200, {"ok": True, "url": self.socket_mode.new_url()}, {}

    def connected(self) -> None:
        with self._changed:
            self.connections += 1

    def _token_ok(self, token: Any) -> bool:
        if not isinstance(token, str) or not token:
            return False
        if token in self.issued_tokens:
            return not self.token_expired(token)
        return token == self.token if self.token else "invalid" not in token

    def token_expired(self, token: str) -> bool:
        """Whether an issued token is past its expiry (token rotation: an access token lives
        `expires_in` seconds, docs.slack.dev/authentication/using-token-rotation)."""
        expires = self.issued_tokens.get(token)
        return expires is not None and self.now() >= expires

    def m_auth_test(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": f"{self.url}/",
            "team": self.team_name,
            "user": "closebot",
            "team_id": self.team_id,
            "user_id": BOT_USER,
            "bot_id": BOT_ID,
            "enterprise_id": self.enterprise_id,
            "is_enterprise_install": False,
        }

    def route(self, request: Request) -> Response | None:
        """/api/<method>, /upload/<file id>, /files/<id>/<name>, /signin and /respond/<key>."""
        path = request.path
        with self._changed:
            dropped, self.drop = self.drop > 0, max(0, self.drop - 1)
        if dropped:
            return Response(drop=True)
        if path.startswith("/api/"):
            params = parse_params(
                request.headers.get("content-type", ""), request.body, request.query
            )
            auth = request.headers.get("authorization", "")
            token = auth.removeprefix("Bearer ").strip() or None
            status, body, headers = self.call(path.removeprefix("/api/"), params, token)
            response = json_response(body, status, **headers)
            response.close = self.hang_up
            return response
        if path.startswith("/upload/") and request.method == "POST":
            ok = self.upload(path.removeprefix("/upload/"), request.body)
            return text_response("OK" if ok else "file_not_found", 200 if ok else 404)
        if path.startswith("/files/"):
            # url_private(_download): only a request carrying a token (the bot's) gets the file
            auth = request.headers.get("authorization", "")
            token = auth.removeprefix("Bearer ").strip() or None
            with self._changed:
                self.calls.append(Call("url_private_download", {"path": path, "token": token}))
                self._bump()
            status, data, headers = self.download(path, authed=self._token_ok(token))
            slowly = self.drip(path, data) if status == 200 else None
            return Response(status, data, headers, stream=slowly)
        if path.startswith("/signin"):  # where Slack sends a download the token cannot read
            return Response(200, SIGN_IN_PAGE, {"Content-Type": "text/html; charset=utf-8"})
        if path.startswith("/respond/") and request.method == "POST":
            try:
                body = request.json()
            except ValueError:
                return json_response({"ok": False, "error": "invalid_payload"}, 400)
            with self._changed:  # a test may fail it: fake.fail("response_url", ...)
                fault = self._take_fault("response_url", body)
            if fault is not None:
                return json_response(fault[1], fault[0])
            status, answer = self.respond(path.removeprefix("/respond/"), body)
            return json_response(answer, status)
        return None


@contextmanager
def fake_slack(token: str | None = None, **kw: Any) -> Iterator[FakeSlack]:
    """A FakeSlack served on 127.0.0.1 (port 0) until the block ends."""
    fake = FakeSlack(token=token, **kw)
    with LoopbackServer([fake.route], on_connection=fake.connected) as server:
        fake.url = server.url
        try:
            yield fake
        finally:
            fake.drips_stopped.set()  # a dripping download ends before the server stops
            if fake.socket_mode is not None:
                fake.socket_mode.close()

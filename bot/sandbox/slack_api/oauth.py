"""Several workspaces behind one fake Slack, and the OAuth v2 install that joins an app to each.

`FakeSlackHost` holds one `FakeSlack` per workspace (each its own channels, people, messages)
and serves them all on one loopback address, as slack.com serves every workspace: a Web API
call on /api/<method> reaches the workspace whose token it carries, and nothing else; the
links a workspace hands out (files, uploads, response_urls) live under /t/<team id>/.

The install is Slack's OAuth v2 flow (docs.slack.dev/authentication/installing-with-oauth):
the installing person's browser is sent to /oauth/v2/authorize with the app's client_id,
scopes, state and redirect_uri; on "Allow" (`approve`) Slack redirects it to redirect_uri with
a temporary `code` and the same `state`; the app exchanges the code at oauth.v2.access
(docs.slack.dev/reference/methods/oauth.v2.access) for the workspace's bot token. With token
rotation on (docs.slack.dev/authentication/using-token-rotation) the token expires after
`expires_in` seconds and comes with a refresh_token, exchanged at oauth.v2.access with
grant_type=refresh_token for a new pair.
"""

from __future__ import annotations

import base64
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from bot.sandbox.http import LoopbackServer, Request, Response, json_response
from bot.sandbox.slack_api.fake import FakeSlack, parse_params
from bot.sandbox.slack_api.workspace import BOT_USER

# oauth.v2.access: "The temporary authorization code expires after ten minutes", and a code
# is exchanged once (docs.slack.dev/authentication/installing-with-oauth, "Exchanging a
# temporary authorization code for an access token").
CODE_SECONDS = 10 * 60
# Rotated access tokens live 12 hours (`expires_in: 43200`, docs.slack.dev/authentication/
# using-token-rotation).
ROTATED_TOKEN_SECONDS = 12 * 60 * 60


@dataclass
class _Code:
    team_id: str
    redirect_uri: str | None
    expires: float
    org_wide: bool
    installer: str


class FakeSlackHost:
    """Many workspaces, one Slack app registered with `client_id`/`client_secret`, installed
    into each through OAuth v2. Thread-safe."""

    def __init__(
        self,
        *,
        client_id: str = "1111.2222",
        client_secret: str = "fake-client-secret",
        app_id: str = "A0CLOSEBOT",
        rotation: bool = False,
        token_seconds: int = ROTATED_TOKEN_SECONDS,
    ) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.app_id = app_id
        self.rotation = rotation  # token rotation turned on in the app's settings
        self.token_seconds = token_seconds
        self.workspaces: dict[str, FakeSlack] = {}
        self.url = ""
        # the app's Redirect URL (its OAuth settings): where Allow sends the browser when
        # the authorize URL names none
        self.redirect_url = ""
        self.exchanges: list[dict[str, Any]] = []  # every oauth.v2.access call, as sent
        self._codes: dict[str, _Code] = {}
        self._refresh: dict[str, str] = {}  # refresh token → the team (or org) it renews
        self._lock = threading.RLock()

    # -- the workspaces ------------------------------------------------------------

    def add(self, team_id: str, *, enterprise_id: str | None = None, **kw: Any) -> FakeSlack:
        """A workspace of its own (its people and channels from `kw`, as FakeSlack takes them);
        no token works in it until the app is installed there."""
        fake = FakeSlack(
            token=f"unissued-{team_id}", team_id=team_id, enterprise_id=enterprise_id, **kw
        )
        fake.url = f"{self.url}/t/{team_id}"
        fake.file_prefix = f"F{team_id[1:3]}"  # ids never shared between workspaces
        self.workspaces[team_id] = fake
        return fake

    @property
    def api_url(self) -> str:
        """Slack's Web API, the same for every workspace (the token says which)."""
        return f"{self.url}/api/"

    def owner_of(self, token: str) -> FakeSlack | None:
        """The workspace a token was issued for (an org-wide token: the org's first)."""
        for fake in self.workspaces.values():
            if token in fake.issued_tokens:
                return fake
        return None

    def revoke(self, team_id: str) -> None:
        """The workspace uninstalled the app: its tokens stop working."""
        fake = self.workspaces[team_id]
        with fake.lock:
            fake.issued_tokens.clear()

    # -- the install -------------------------------------------------------------

    def approve(
        self, authorize_url: str, *, team_id: str, installer: str = "UADMIN", org_wide: bool = False
    ) -> str:
        """A person of `team_id` opened the app's authorize URL (the /slack/install page's
        "Add to Slack" link) and pressed Allow: the redirect URL their browser is sent to,
        with a one-time `code` and the `state` the app sent. The authorize URL must name this
        app's client_id (else Slack shows an error page: ValueError here)."""
        query = dict(parse_qsl(authorize_url.partition("?")[2]))
        if query.get("client_id") != self.client_id:
            raise ValueError(f"authorize URL with another client_id: {authorize_url}")
        if team_id not in self.workspaces:
            raise ValueError(f"no workspace {team_id}")
        code = f"code-{team_id}-{secrets.token_hex(6)}"
        redirect_uri = query.get("redirect_uri")
        with self._lock:
            self._codes[code] = _Code(
                team_id,
                redirect_uri,
                self.workspaces[team_id].now() + CODE_SECONDS,
                org_wide,
                installer,
            )
        target = redirect_uri or self.redirect_url
        if not target:
            raise ValueError("the app has no Redirect URL and the authorize URL names none")
        return f"{target}?{urlencode({'code': code, 'state': query.get('state', '')})}"

    def access(self, params: dict[str, Any], basic: tuple[str, str] | None) -> dict[str, Any]:
        """oauth.v2.access, strictly as docs.slack.dev/reference/methods/oauth.v2.access
        documents it: client_id and client_secret (in the body, or as HTTP Basic auth, the
        way the docs prefer) are required and checked (`invalid_client_id`,
        `bad_client_secret`); `code` is exchanged once, within ten minutes (`invalid_code`);
        `redirect_uri` must be the one the authorize step was given, when it was given one
        (`bad_redirect_uri`); `grant_type=refresh_token` with a `refresh_token` renews a
        rotating token (`invalid_refresh_token`; docs.slack.dev/authentication/
        using-token-rotation)."""
        client_id, client_secret = basic or (params.get("client_id"), params.get("client_secret"))
        with self._lock:
            self.exchanges.append(dict(params))
            if client_id != self.client_id:
                return {"ok": False, "error": "invalid_client_id"}
            if client_secret != self.client_secret:
                return {"ok": False, "error": "bad_client_secret"}
            grant = params.get("grant_type")
            if grant == "refresh_token":
                team_id = self._refresh.pop(str(params.get("refresh_token") or ""), None)
                if team_id is None:
                    return {"ok": False, "error": "invalid_refresh_token"}
                return self._issue(self.workspaces[team_id], installer=None, org_wide=False)
            if grant not in (None, "", "authorization_code"):
                return {"ok": False, "error": "invalid_grant_type"}
            code = self._codes.pop(str(params.get("code") or ""), None)
            if code is None or self.workspaces[code.team_id].now() > code.expires:
                return {"ok": False, "error": "invalid_code"}
            if code.redirect_uri and params.get("redirect_uri") != code.redirect_uri:
                return {"ok": False, "error": "bad_redirect_uri"}
            fake = self.workspaces[code.team_id]
            return self._issue(fake, installer=code.installer, org_wide=code.org_wide)

    def _issue(self, fake: FakeSlack, *, installer: str | None, org_wide: bool) -> dict[str, Any]:
        """A new bot token for the workspace (and, rotating, its refresh token), as
        oauth.v2.access answers (its "Example response" and, org-wide, its
        `is_enterprise_install` / `enterprise` fields)."""
        prefix = "xoxe.xoxb-1-" if self.rotation else "xoxb-"
        token = f"{prefix}{fake.team_id}-{secrets.token_hex(8)}"
        with fake.lock:
            fake.issued_tokens[token] = fake.now() + self.token_seconds if self.rotation else None
        org = org_wide and fake.enterprise_id is not None
        body: dict[str, Any] = {
            "ok": True,
            "access_token": token,
            "token_type": "bot",
            "scope": ",".join(sorted(fake.grants.scopes)),
            "bot_user_id": BOT_USER,
            "app_id": self.app_id,
            "team": None if org else {"id": fake.team_id, "name": fake.team_name},
            "enterprise": {"id": fake.enterprise_id, "name": f"Org {fake.enterprise_id}"}
            if fake.enterprise_id
            else None,
            "is_enterprise_install": org,
            "authed_user": {"id": installer or "UADMIN"},
        }
        if self.rotation:
            refresh = f"xoxe-1-{secrets.token_hex(10)}"
            self._refresh[refresh] = fake.team_id
            body.update(expires_in=self.token_seconds, refresh_token=refresh)
        return body

    # -- HTTP ----------------------------------------------------------------------

    def route(self, request: Request) -> Response | None:
        """/api/oauth.v2.access; /api/<method> to the token's workspace; /t/<team>/… to a
        workspace's own links."""
        path = request.path
        if path == "/api/oauth.v2.access":
            params = parse_params(
                request.headers.get("content-type", ""), request.body, request.query
            )
            return json_response(
                self.access(params, _basic(request.headers.get("authorization", "")))
            )
        if path.startswith("/api/"):
            auth = request.headers.get("authorization", "")
            token = auth.removeprefix("Bearer ").strip() or None
            if token is None:
                params = parse_params(
                    request.headers.get("content-type", ""), request.body, request.query
                )
                token = params.get("token")
            fake = self.owner_of(str(token or ""))
            if fake is None:  # a token no workspace issued: Slack answers invalid_auth
                return json_response({"ok": False, "error": "invalid_auth"})
            if fake.token_expired(str(token)):
                return json_response({"ok": False, "error": "token_expired"})
            return fake.route(request)
        if path.startswith("/t/"):
            team_id, _, rest = path.removeprefix("/t/").partition("/")
            fake = self.workspaces.get(team_id)
            if fake is None:
                return None
            request.path = "/" + rest
            return fake.route(request)
        return None


def _basic(header: str) -> tuple[str, str] | None:
    """client_id and client_secret from an HTTP Basic Authorization header."""
    if not header.startswith("Basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    except ValueError:
        return None
    return user, password


@contextmanager
def fake_slack_host(**kw: Any) -> Iterator[FakeSlackHost]:
    """A FakeSlackHost served on 127.0.0.1 (port 0) until the block ends; add workspaces to it."""
    host = FakeSlackHost(**kw)
    with LoopbackServer([host.route]) as server:
        host.url = server.url
        try:
            yield host
        finally:
            for fake in host.workspaces.values():
                fake.drips_stopped.set()

"""The workspaces closebot is installed in, when it serves many (issue 32).

Installed through Slack's OAuth v2 flow with Bolt's own `OAuthSettings` (/slack/install,
/slack/oauth_redirect), each workspace's installation kept by slack_sdk's SQLite installation
store and the flow's `state` by its SQLite state store, in one file beside the database
(`closebot.db` → `closebot.installations.db`; the same stores exist for SQLAlchemy, for a
shared database). Per request Bolt finds the workspace's installation by team_id /
enterprise_id (its authorize); per Slack call the client asks `Installations.token()` for the
token of the workspace the work in hand is for (bot/core/tenancy.py), rotated when it is due
(token rotation: a refresh at oauth.v2.access before it expires).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from slack_bolt.authorization.authorize import InstallationStoreAuthorize
from slack_bolt.oauth.oauth_settings import OAuthSettings
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackTokenRotationError
from slack_sdk.oauth.installation_store import Bot
from slack_sdk.oauth.installation_store.sqlite3 import SQLite3InstallationStore
from slack_sdk.oauth.state_store.sqlite3 import SQLite3OAuthStateStore
from slack_sdk.oauth.token_rotation import TokenRotator
from slack_sdk.web import SlackResponse

from bot.core.config import Settings
from bot.core.tenancy import Tenant, current

log = logging.getLogger(__name__)

# What an install asks for: manifest.yml's bot scopes (tests/test_installations.py holds the
# two equal).
INSTALL_SCOPES = (
    "chat:write",
    "commands",
    "app_mentions:read",
    "assistant:write",
    "im:history",
    "im:write",
    "files:write",
    "files:read",
    "users:read",
    "channels:read",  # conversations.info: doctor --slack, the bot in the finance channel
    "groups:read",
)
# A token that expires within this many minutes is refreshed before it is used (Bolt's own
# default for `token_rotation_expiration_minutes`).
ROTATE_MINUTES = 120
STATE_SECONDS = 600  # an install begun must be finished within ten minutes


def installations_path(db_path: Path) -> Path:
    """The installation and state stores' file, beside the database."""
    return db_path.with_name(f"{db_path.stem}.installations{db_path.suffix or '.db'}")


def authorize_url(settings: Settings) -> str:
    """Slack's authorize page, on the host SLACK_API_URL names (slack.com/oauth/v2/authorize
    for slack.com/api/; the fake Slack's own for the fake)."""
    base = settings.slack_api_url.removesuffix("/").removesuffix("/api")
    return f"{base}/oauth/v2/authorize"


def not_installed(tenant: Tenant | None, method: str) -> SlackApiError:
    """The refusal of a call no installation can make (as Slack's `not_authed` reads)."""
    reason = "no workspace for this call" if tenant is None else f"not installed in {tenant}"
    return SlackApiError(
        f"not sent: {reason}",
        SlackResponse(
            client=None,
            http_verb="POST",
            api_url=method,
            req_args={},
            data={"ok": False, "error": "not_authed"},
            headers={},
            status_code=200,
        ),
    )


class Installations:
    """The installation and state stores, and each workspace's bot token."""

    def __init__(self, settings: Settings, client: WebClient) -> None:
        assert settings.slack_client_id and settings.slack_client_secret
        path = str(installations_path(settings.db_path))
        self.settings = settings
        self.client = client
        self.store = SQLite3InstallationStore(database=path, client_id=settings.slack_client_id)
        self.states = SQLite3OAuthStateStore(database=path, expiration_seconds=STATE_SECONDS)
        self.rotator = TokenRotator(
            client_id=settings.slack_client_id,
            client_secret=settings.slack_client_secret,
            client=client,
        )
        self._rotating = threading.Lock()

    def oauth_settings(self) -> OAuthSettings:
        """Bolt's OAuth flow over these stores: /slack/install and /slack/oauth_redirect."""
        return OAuthSettings(
            client_id=self.settings.slack_client_id,
            client_secret=self.settings.slack_client_secret,
            scopes=list(INSTALL_SCOPES),
            redirect_uri=self.settings.slack_redirect_uri,
            authorization_url=authorize_url(self.settings),
            installation_store=self.store,
            installation_store_bot_only=True,
            token_rotation_expiration_minutes=ROTATE_MINUTES,
            state_store=self.states,
            state_expiration_seconds=STATE_SECONDS,
        )

    def authorize(self) -> InstallationStoreAuthorize:
        """Bolt's authorize from the installation store, per request by team_id /
        enterprise_id, refreshing a rotating token through this client (OAuthSettings'
        own would send the refresh to slack.com whatever SLACK_API_URL says)."""
        return InstallationStoreAuthorize(
            logger=logging.getLogger("slack_bolt.authorize"),
            installation_store=self.store,
            client_id=self.settings.slack_client_id,
            client_secret=self.settings.slack_client_secret,
            token_rotation_expiration_minutes=ROTATE_MINUTES,
            bot_only=True,
            client=self.client,
            # auth.test once per token, not once per request (an ack waits on it); kept by
            # token, after the store is read: a workspace uninstalled finds no token at all
            cache_enabled=True,
        )

    def bot(self, tenant: Tenant) -> Bot | None:
        """The workspace's installation: its own, else its org's org-wide one."""
        bot = None
        if tenant.team_id is not None:
            bot = self.store.find_bot(
                enterprise_id=tenant.enterprise_id,
                team_id=tenant.team_id,
                is_enterprise_install=False,
            )
        if bot is None and tenant.enterprise_id is not None:
            bot = self.store.find_bot(
                enterprise_id=tenant.enterprise_id, team_id=None, is_enterprise_install=True
            )
        return bot

    def token(self, method: str = "") -> str:
        """The bot token of the workspace the work in hand is for, refreshed first when it
        expires within ROTATE_MINUTES; SlackApiError (not sent) when there is none."""
        tenant = current()
        bot = self.bot(tenant) if tenant is not None else None
        if bot is None or not bot.bot_token:
            raise not_installed(tenant, method)
        if bot.bot_refresh_token and bot.bot_token_expires_at is not None:
            bot = self._rotated(tenant, bot)  # type: ignore[arg-type]
        return str(bot.bot_token)

    def _rotated(self, tenant: Tenant, bot: Bot) -> Bot:
        with self._rotating:
            fresh = self.bot(tenant) or bot  # another thread may have rotated it already
            try:
                rotated = self.rotator.perform_bot_token_rotation(
                    bot=fresh, minutes_before_expiration=ROTATE_MINUTES
                )
            except SlackTokenRotationError as e:
                log.warning("workspace %s: the token could not be refreshed: %s", tenant, e)
                return fresh
            if rotated is None:
                return fresh
            self.store.save_bot(rotated)
            log.info("workspace %s: bot token refreshed", tenant)
            return rotated

    def uninstalled(self, tenant: Tenant) -> None:
        """The workspace took the app out (app_uninstalled, tokens_revoked): its tokens are
        deleted; its books stay (README: "Many workspaces")."""
        self.store.delete_bot(enterprise_id=tenant.enterprise_id, team_id=tenant.team_id)
        self.store.delete_installation(enterprise_id=tenant.enterprise_id, team_id=tenant.team_id)
        log.warning("workspace %s uninstalled closebot: its tokens are deleted", tenant)

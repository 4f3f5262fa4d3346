"""Settings from the environment: read once, validated, secrets masked in repr."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path

from bot.core.errors import ConfigError
from bot.core.identity import LOGIN_NAME, SLACK_USER_ID

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_SLACK_API_URL = "https://slack.com/api/"
DEFAULT_DB = "closebot.db"
DEFAULT_MAX_STEPS = 60
DEFAULT_REMINDER_MINUTES = 60
EFFORTS = ("low", "medium", "high", "xhigh", "max")
DEFAULT_EFFORT = "medium"
# Turn workers: a turn mostly waits on the model (network), so a few per core; bounded, since
# each holds a thread and a turn's memory (issue 33: threads set by configuration, not load).
DEFAULT_TURN_WORKERS = max(4, min(16, 4 * (os.cpu_count() or 1)))
MAX_TURN_WORKERS = 64
# CLOSEBOT_THREAD_REPLY_SECONDS: a person writing in a close's thread gets one answer of a
# kind per this many seconds, not one per message (issue 31: a flood); 0 answers each
DEFAULT_THREAD_REPLY_SECONDS = 60
# CLOSEBOT_DB_WAIT_SECONDS: how long `closebot run` / `resume` wait for a database another
# process holds before giving up, saying so (issue 31)
DEFAULT_DB_WAIT_SECONDS = 30
MAX_DB_WAIT_SECONDS = 60 * 60
MAX_THREAD_REPLY_SECONDS = 24 * 60 * 60

# What a workspace's admins may change in Slack (closebot's Home tab → Settings, issue 32),
# by the variable each overrides: the environment stays the default.
SLACK_SETTABLE = (
    "CLOSEBOT_APPROVERS",
    "CLOSEBOT_APPROVAL_LIMIT",
    "CLOSEBOT_CLOSE_CHANNEL",
    "CLOSEBOT_DATA",
)

CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]{2,}$")  # a channel (public or private), not a DM
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]*$")


def _mask(secret: str | None) -> str:
    if not secret:
        return "None"
    return f"'{secret[:4]}…' ({len(secret)} chars)"


@dataclass(frozen=True)
class Settings:
    """Everything closebot reads from its environment."""

    db_path: Path = Path(DEFAULT_DB)
    # CLOSEBOT_DB=postgresql://…: the hosted deployment's shared database (bot/store/pg/)
    db_url: str | None = field(default=None, repr=False)
    model: str = DEFAULT_MODEL
    anthropic_api_key: str | None = field(default=None, repr=False)
    slack_bot_token: str | None = field(default=None, repr=False)
    slack_signing_secret: str | None = field(default=None, repr=False)
    slack_app_token: str | None = field(default=None, repr=False)
    slack_api_url: str = DEFAULT_SLACK_API_URL
    approvers: frozenset[str] = frozenset()
    # CLOSEBOT_FINANCE: besides approvers and a close's starter, who may drop a period's files
    # and start a close from the DM (issue 31)
    finance: frozenset[str] = frozenset()
    data_dir: Path | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    question_timeout_minutes: int = 0
    reminder_minutes: int = DEFAULT_REMINDER_MINUTES
    effort: str = DEFAULT_EFFORT
    approval_limit: Decimal = Decimal("250000.00")
    # the channel a close started from the DM runs in (where its approvers can act)
    close_channel: str | None = None
    # CLOSEBOT_TURN_WORKERS: how many runs' turns advance at once (issue 33)
    turn_workers: int = DEFAULT_TURN_WORKERS
    # issue 32: installed into many workspaces through OAuth v2 (HTTP mode, no bot token)
    slack_client_id: str | None = None
    slack_client_secret: str | None = field(default=None, repr=False)
    slack_redirect_uri: str | None = None

    @property
    def many_workspaces(self) -> bool:
        """Installed through OAuth (a client id and secret, no SLACK_BOT_TOKEN): each
        workspace's token from the installation store, per request and per run."""
        return bool(self.slack_client_id and self.slack_client_secret) and not self.slack_bot_token

    # CLOSEBOT_SETTINGS_OWNERS: besides workspace admins and owners, who may change
    # closebot's settings in its Home tab (issue 32)
    settings_owners: frozenset[str] = frozenset()

    # issue 31: one answer of a kind per person and thread per this many seconds
    thread_reply_seconds: int = DEFAULT_THREAD_REPLY_SECONDS
    db_wait_seconds: int = DEFAULT_DB_WAIT_SECONDS

    @property
    def database(self) -> str:
        """The database in words: its file, or its URL without the password."""
        if self.db_url:
            return re.sub(r"(//[^:/@]+):[^@]*@", r"\1:***@", self.db_url)
        return str(self.db_path)

    def __repr__(self) -> str:
        return (
            f"Settings(db_path={str(self.db_path)!r}, model={self.model!r}, "
            f"anthropic_api_key={_mask(self.anthropic_api_key)}, "
            f"slack_bot_token={_mask(self.slack_bot_token)}, "
            f"slack_signing_secret={_mask(self.slack_signing_secret)}, "
            f"slack_app_token={_mask(self.slack_app_token)}, "
            f"slack_api_url={self.slack_api_url!r}, approvers={sorted(self.approvers)!r}, "
            f"finance={sorted(self.finance)!r}, "
            f"data_dir={str(self.data_dir) if self.data_dir else None!r}, "
            f"max_steps={self.max_steps}, "
            f"question_timeout_minutes={self.question_timeout_minutes}, "
            f"reminder_minutes={self.reminder_minutes}, effort={self.effort!r}, "
            f"approval_limit={self.approval_limit}, close_channel={self.close_channel!r}, "
            f"turn_workers={self.turn_workers}, "
            f"slack_client_id={self.slack_client_id!r}, "
            f"slack_client_secret={_mask(self.slack_client_secret)}, "
            f"thread_reply_seconds={self.thread_reply_seconds}, "
            f"db_wait_seconds={self.db_wait_seconds}, "
            f"settings_owners={sorted(self.settings_owners)!r})"
        )

    def with_overrides(self, values: Mapping[str, str]) -> Settings:
        """These settings with `values` (SLACK_SETTABLE variables, as the environment would
        hold them: what a workspace set in Slack) in place of the environment's; each checked
        as `from_env` checks it. Console approvers (OS logins) are kept: Slack sets Slack ids."""
        given = {k: v for k, v in values.items() if k in SLACK_SETTABLE and v.strip()}
        if not given:
            return self
        parsed = Settings.from_env({"CLOSEBOT_DB": str(self.db_path), **given})
        changes: dict[str, object] = {}
        if "CLOSEBOT_APPROVERS" in given:
            logins = {a for a in self.approvers if not SLACK_USER_ID.match(a)}
            changes["approvers"] = parsed.approvers | logins
        if "CLOSEBOT_APPROVAL_LIMIT" in given:
            changes["approval_limit"] = parsed.approval_limit
        if "CLOSEBOT_CLOSE_CHANNEL" in given:
            changes["close_channel"] = parsed.close_channel
        if "CLOSEBOT_DATA" in given:
            changes["data_dir"] = parsed.data_dir
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def uses_claude(self) -> bool:
        """True when an API key is set: Claude drives runs, else the offline playbook."""
        return bool(self.anthropic_api_key)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read and validate the environment; raise ConfigError naming the variable."""
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        db = get("CLOSEBOT_DB") or DEFAULT_DB
        db_url = db if db.startswith(("postgresql://", "postgres://")) else None
        db_path = Path(DEFAULT_DB if db_url else db).expanduser()
        if db_url:
            pass  # a server's database: nothing on this machine's disk to check
        elif db_path.is_dir():
            raise ConfigError(f"CLOSEBOT_DB={db_path} is a directory; give a file path")
        if not db_path.parent.is_dir():
            raise ConfigError(
                f"CLOSEBOT_DB={db_path}: the directory {db_path.parent} does not exist"
            )

        model = get("CLOSEBOT_MODEL") or DEFAULT_MODEL
        if not _MODEL_NAME.match(model):
            raise ConfigError(f"CLOSEBOT_MODEL={model!r} is not a model name")

        approvers = _names(
            get,
            "CLOSEBOT_APPROVERS",
            SLACK_USER_ID,
            "is not a Slack user id (like U024BE7LH); separate ids with commas (console "
            "approvers are OS logins, in CLOSEBOT_CONSOLE_APPROVERS)",
        )
        approvers |= _names(
            get,
            "CLOSEBOT_CONSOLE_APPROVERS",
            LOGIN_NAME,
            "is not an OS login name; separate logins with commas",
        )
        finance = _names(
            get,
            "CLOSEBOT_FINANCE",
            SLACK_USER_ID,
            "is not a Slack user id (like U024BE7LH); separate ids with commas",
        )

        slack_api_url = get("SLACK_API_URL") or DEFAULT_SLACK_API_URL
        if not re.match(r"^https?://[^/\s]+", slack_api_url):
            raise ConfigError(f"SLACK_API_URL={slack_api_url!r} is not an http(s) URL")
        if not slack_api_url.endswith("/"):
            slack_api_url += "/"

        data_dir = None
        if raw_data := get("CLOSEBOT_DATA"):
            data_dir = Path(raw_data).expanduser()
            if not data_dir.is_dir():
                raise ConfigError(f"CLOSEBOT_DATA={raw_data}: no such directory")

        max_steps = DEFAULT_MAX_STEPS
        if raw_steps := get("CLOSEBOT_MAX_STEPS"):
            if not raw_steps.isdigit() or not 1 <= int(raw_steps) <= 1000:
                raise ConfigError(
                    f"CLOSEBOT_MAX_STEPS={raw_steps!r} must be a whole number from 1 to 1000"
                )
            max_steps = int(raw_steps)

        timeout = 0
        if raw_timeout := get("CLOSEBOT_QUESTION_TIMEOUT_MINUTES"):
            if not raw_timeout.isdigit() or int(raw_timeout) > 60 * 24 * 90:
                raise ConfigError(
                    f"CLOSEBOT_QUESTION_TIMEOUT_MINUTES={raw_timeout!r} must be a whole number of minutes "
                    "(0 = questions never time out; at most 90 days)"
                )
            timeout = int(raw_timeout)

        reminder = DEFAULT_REMINDER_MINUTES
        if raw_reminder := get("CLOSEBOT_REMINDER_MINUTES"):
            if not raw_reminder.isdigit() or int(raw_reminder) > 60 * 24 * 30:
                raise ConfigError(
                    f"CLOSEBOT_REMINDER_MINUTES={raw_reminder!r} must be a whole number of minutes "
                    "(0 = no reminders; at most 30 days)"
                )
            reminder = int(raw_reminder)

        effort = (get("CLOSEBOT_EFFORT") or DEFAULT_EFFORT).lower()
        if effort not in EFFORTS:
            raise ConfigError(f"CLOSEBOT_EFFORT={effort!r} must be one of {', '.join(EFFORTS)}")
        limit = Decimal("250000.00")
        if raw_limit := get("CLOSEBOT_APPROVAL_LIMIT"):
            try:
                limit = Decimal(raw_limit.replace(",", ""))
            except InvalidOperation:
                limit = Decimal(-1)
            if not limit.is_finite() or limit <= 0 or limit != limit.quantize(Decimal("0.01")):
                raise ConfigError(
                    f"CLOSEBOT_APPROVAL_LIMIT={raw_limit!r} must be an amount above zero, e.g. 250000"
                )

        turn_workers = DEFAULT_TURN_WORKERS
        if raw_workers := get("CLOSEBOT_TURN_WORKERS"):
            if not raw_workers.isdigit() or not 1 <= int(raw_workers) <= MAX_TURN_WORKERS:
                raise ConfigError(
                    f"CLOSEBOT_TURN_WORKERS={raw_workers!r} must be a whole number from 1 to "
                    f"{MAX_TURN_WORKERS}"
                )
            turn_workers = int(raw_workers)

        thread_reply = DEFAULT_THREAD_REPLY_SECONDS
        if (raw_reply := get("CLOSEBOT_THREAD_REPLY_SECONDS")) is not None:
            if not raw_reply.isdigit() or int(raw_reply) > MAX_THREAD_REPLY_SECONDS:
                raise ConfigError(
                    f"CLOSEBOT_THREAD_REPLY_SECONDS={raw_reply!r} must be a whole number of "
                    f"seconds from 0 (answer every thread message) to {MAX_THREAD_REPLY_SECONDS}"
                )
            thread_reply = int(raw_reply)

        db_wait = DEFAULT_DB_WAIT_SECONDS
        if (raw_wait := get("CLOSEBOT_DB_WAIT_SECONDS")) is not None:
            if not raw_wait.isdigit() or int(raw_wait) > MAX_DB_WAIT_SECONDS:
                raise ConfigError(
                    f"CLOSEBOT_DB_WAIT_SECONDS={raw_wait!r} must be a whole number of seconds "
                    f"from 0 (do not wait) to {MAX_DB_WAIT_SECONDS}"
                )
            db_wait = int(raw_wait)

        close_channel = get("CLOSEBOT_CLOSE_CHANNEL")
        if close_channel is not None and not CHANNEL_ID.match(close_channel):
            raise ConfigError(
                f"CLOSEBOT_CLOSE_CHANNEL={close_channel!r} is not a channel id (like C0123ABCD: "
                "the channel's details in Slack show it); closes started from the DM run there"
            )

        redirect_uri = get("SLACK_REDIRECT_URI")
        if redirect_uri is not None and not re.match(r"^https?://[^/\s]+/", redirect_uri):
            raise ConfigError(
                f"SLACK_REDIRECT_URI={redirect_uri!r} is not an http(s) URL; it is the app's "
                "/slack/oauth_redirect address as the app's OAuth settings list it"
            )
        if bool(get("SLACK_CLIENT_ID")) != bool(get("SLACK_CLIENT_SECRET")):
            raise ConfigError(
                "SLACK_CLIENT_ID and SLACK_CLIENT_SECRET go together (the app's Basic "
                "Information page shows both); set both to install through OAuth, or neither"
            )

        settings_owners = _names(
            get,
            "CLOSEBOT_SETTINGS_OWNERS",
            SLACK_USER_ID,
            "is not a Slack user id (like U024BE7LH); separate ids with commas",
        )

        return cls(
            thread_reply_seconds=thread_reply,
            db_wait_seconds=db_wait,
            turn_workers=turn_workers,
            slack_client_id=get("SLACK_CLIENT_ID"),
            slack_client_secret=get("SLACK_CLIENT_SECRET"),
            slack_redirect_uri=redirect_uri,
            settings_owners=settings_owners,
            close_channel=close_channel,
            approval_limit=limit,
            question_timeout_minutes=timeout,
            reminder_minutes=reminder,
            effort=effort,
            db_path=db_path,
            db_url=db_url,
            model=model,
            anthropic_api_key=get("ANTHROPIC_API_KEY"),
            slack_bot_token=get("SLACK_BOT_TOKEN"),
            slack_signing_secret=get("SLACK_SIGNING_SECRET"),
            slack_app_token=get("SLACK_APP_TOKEN"),
            slack_api_url=slack_api_url,
            approvers=approvers,
            finance=finance,
            data_dir=data_dir,
            max_steps=max_steps,
        )


def _names(
    get: Callable[[str], str | None], var: str, pattern: re.Pattern[str], what: str
) -> frozenset[str]:
    """A comma-separated list of ids or logins from `var`, each checked against `pattern`;
    the ones that are not said with `what`."""
    names = frozenset(a.strip() for a in (get(var) or "").split(",") if a.strip())
    bad = sorted(a for a in names if not pattern.match(a))
    if bad:
        raise ConfigError(f"{var}: {', '.join(repr(b) for b in bad)} {what}")
    return names

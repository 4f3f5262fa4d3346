"""Settings: read once from the environment, validated, secrets masked."""

from pathlib import Path

import pytest

from bot.core.config import DEFAULT_MODEL, Settings
from bot.core.errors import ConfigError


def test_defaults_and_parsing(tmp_path: Path) -> None:
    s = Settings.from_env(
        {
            "CLOSEBOT_DB": str(tmp_path / "x.db"),
            "CLOSEBOT_APPROVERS": " U1AB, W2CD ,",
            "SLACK_API_URL": "http://127.0.0.1:9/api",
        }
    )
    assert s.model == DEFAULT_MODEL and not s.uses_claude
    assert s.approvers == frozenset({"U1AB", "W2CD"})
    assert s.slack_api_url == "http://127.0.0.1:9/api/"
    assert s.question_timeout_minutes == 0 and s.max_steps == 60
    assert s.reminder_minutes == 60 and s.effort == "medium"
    assert s.close_channel is None
    with_channel = Settings.from_env(
        {"CLOSEBOT_DB": str(tmp_path / "x.db"), "CLOSEBOT_CLOSE_CHANNEL": "C0FINANCE"}
    )
    assert with_channel.close_channel == "C0FINANCE"


def test_reminders_and_effort_are_read(tmp_path: Path) -> None:
    s = Settings.from_env(
        {
            "CLOSEBOT_DB": str(tmp_path / "x.db"),
            "CLOSEBOT_REMINDER_MINUTES": "0",
            "CLOSEBOT_EFFORT": "HIGH",
        }
    )
    assert s.reminder_minutes == 0 and s.effort == "high"
    assert "reminder_minutes=0, effort='high'" in repr(s)


def test_secrets_never_show_in_repr(tmp_path: Path) -> None:
    s = Settings.from_env(
        {
            "CLOSEBOT_DB": str(tmp_path / "x.db"),
            "ANTHROPIC_API_KEY": "sk-ant-supersecret",
            "SLACK_BOT_TOKEN": "xoxb-123456789",
            "SLACK_SIGNING_SECRET": "shh-very-secret",
        }
    )
    text = repr(s)
    assert "supersecret" not in text and "123456789" not in text and "very-secret" not in text
    assert "'sk-a…' (18 chars)" in text and s.uses_claude


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"CLOSEBOT_DB": "/nope/x.db"},
            "CLOSEBOT_DB=/nope/x.db: the directory /nope does not exist",
        ),
        ({"CLOSEBOT_MODEL": "claude sonnet"}, "CLOSEBOT_MODEL='claude sonnet' is not a model name"),
        ({"CLOSEBOT_APPROVERS": "alice"}, "CLOSEBOT_APPROVERS: 'alice' is not a Slack user id"),
        ({"SLACK_API_URL": "slack.com/api"}, "SLACK_API_URL='slack.com/api' is not an http(s) URL"),
        ({"CLOSEBOT_DATA": "/no/such/data"}, "CLOSEBOT_DATA=/no/such/data: no such directory"),
        (
            {"CLOSEBOT_MAX_STEPS": "0"},
            "CLOSEBOT_MAX_STEPS='0' must be a whole number from 1 to 1000",
        ),
        (
            {"CLOSEBOT_QUESTION_TIMEOUT_MINUTES": "-5"},
            "CLOSEBOT_QUESTION_TIMEOUT_MINUTES='-5' must be a whole number of minutes",
        ),
        (
            {"CLOSEBOT_REMINDER_MINUTES": "soon"},
            "CLOSEBOT_REMINDER_MINUTES='soon' must be a whole number of minutes",
        ),
        (
            {"CLOSEBOT_CLOSE_CHANNEL": "#finance"},
            "CLOSEBOT_CLOSE_CHANNEL='#finance' is not a channel id",
        ),
        (
            {"CLOSEBOT_CLOSE_CHANNEL": "DUALICE"},  # a DM: nobody else could see the close
            "CLOSEBOT_CLOSE_CHANNEL='DUALICE' is not a channel id",
        ),
        (
            {"CLOSEBOT_EFFORT": "extreme"},
            "CLOSEBOT_EFFORT='extreme' must be one of low, medium, high, xhigh, max",
        ),
    ],
)
def test_bad_settings_name_the_variable(tmp_path: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"CLOSEBOT_DB": str(tmp_path / "x.db"), **env})
    assert str(info.value).startswith(message)


def test_a_directory_is_not_a_database(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        Settings.from_env({"CLOSEBOT_DB": str(tmp_path)})


def test_turn_workers_is_a_setting_with_a_bounded_default(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    default = Settings.from_env({"CLOSEBOT_DB": db}).turn_workers
    assert 4 <= default <= 16  # a few per core, bounded whatever the machine
    s = Settings.from_env({"CLOSEBOT_DB": db, "CLOSEBOT_TURN_WORKERS": "12"})
    assert s.turn_workers == 12 and "turn_workers=12" in repr(s)
    for bad in ("0", "65", "four", "-2"):
        with pytest.raises(ConfigError, match="CLOSEBOT_TURN_WORKERS"):
            Settings.from_env({"CLOSEBOT_DB": db, "CLOSEBOT_TURN_WORKERS": bad})

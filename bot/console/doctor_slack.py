"""`closebot doctor --slack`: the installed Slack app checked against what closebot needs
(bot/slack/doctor.py says which check comes from where); `--health`, the container's
healthcheck: Slack accepts the bot token and the database opens. Exit 0 when every check
passes, 1 otherwise."""

from __future__ import annotations

import argparse
import os
from typing import TextIO

from bot.console.presenter import EXIT_FAILED, EXIT_OK
from bot.console.session import open_store, settings_of


def cmd_doctor_slack(args: argparse.Namespace, out: TextIO) -> int:
    from bot.slack.client import web_client  # Slack's libraries load only for this command
    from bot.slack.doctor import Check, slack_checks
    from bot.slack.manifest import Manifest, manifest_path

    settings = settings_of(args)
    store = open_store(settings)
    try:
        health = store.health()
        checks = [
            Check(
                "database (CLOSEBOT_DB)",
                health == "ok",
                f"{settings.db_path}: {health}",
                "" if health == "ok" else "`closebot doctor` checks the database and says more",
            )
        ]
        checks += slack_checks(
            settings,
            Manifest.read(manifest_path()),
            client_for=lambda token: web_client(settings, token=token),
            config_token=os.environ.get("SLACK_CONFIG_TOKEN", "").strip() or None,
            app_id=os.environ.get("SLACK_APP_ID", "").strip() or None,
            effective=lambda team: store.settings.effective(team, settings),
            health=args.health,
        )
    finally:
        store.close()
    for check in checks:
        for line in check.lines():
            print(line, file=out)
    failed = sum(c.ok is False for c in checks)
    if failed:
        print(f"closebot doctor --slack: {failed} problem(s); each says its fix", file=out)
        return EXIT_FAILED
    print("closebot doctor --slack: the Slack app is ready", file=out)
    return EXIT_OK

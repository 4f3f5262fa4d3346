"""Fewer Slack calls: a status update that would change nothing is not sent."""

from __future__ import annotations

import json
from pathlib import Path

from bot.sandbox.slack_api import fake_slack
from tests.slack_harness import Harness


def test_no_chat_update_repeats_what_the_message_already_shows(db_path: Path) -> None:
    with fake_slack() as fake:
        bot = Harness(fake, db_path)
        run = bot.start()
        bot.finish(run.id)
        status = bot.store.runs.get(run.id).status
        bot.close()
        shown: dict[str, str] = {}
        repeats = 0
        for update in fake.to("chat.update"):
            now = json.dumps([update.get("text"), update.get("blocks")], sort_keys=True)
            repeats += shown.get(update["ts"]) == now
            shown[update["ts"]] = now
        assert status == "done"
        assert len(shown) >= 2  # the status message and the forms were updated
        assert repeats == 0

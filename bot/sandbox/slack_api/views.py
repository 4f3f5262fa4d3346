"""views.publish (the App Home tab published for a person) and views.open (a modal opened
for the person whose click gave the trigger_id), checked as Slack checks a view."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from bot.sandbox.blockkit import view_problems
from bot.sandbox.slack_api.workspace import SlackError, Workspace

# A trigger_id can be exchanged for a modal within 3 seconds of the interaction, and once
# (docs.slack.dev/surfaces/modals#opening "Opening modals": "triggers expire in three
# seconds"; docs.slack.dev/reference/methods/views.open, errors expired_trigger_id,
# exchanged_trigger_id, invalid_trigger_id — "the expected format … is 132456.7890123.abcdef").
TRIGGER_SECONDS = 3.0
TRIGGER_FORMAT = re.compile(r"^\d+\.\d+\.[0-9a-f]+$")


class ViewMethods(Workspace):
    """Home tabs and modals, checked as Slack checks a view."""

    def issue_trigger(self, user: str) -> str:
        """A trigger_id for one interaction of `user` (what their click's payload carries)."""
        trigger = f"{int(self.now())}.{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:16]}"
        with self.lock:
            self.triggers[trigger] = (user, self.now())
        return trigger

    def m_views_publish(self, p: dict[str, Any]) -> dict[str, Any]:
        user = p.get("user_id")
        if not isinstance(user, str) or not user:
            raise SlackError("invalid_arguments", ["user_id: must provide a string"])
        view = p.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        found = view_problems(view)
        if found:
            raise SlackError("invalid_arguments", found)
        assert isinstance(view, dict)
        published = {**view, "id": f"V{self._next():08d}"}
        self.homes[user] = published
        return {"view": published}

    def m_views_open(self, p: dict[str, Any]) -> dict[str, Any]:
        """A modal for the person whose interaction issued `trigger_id`: refused when the
        trigger is malformed or unknown, older than 3 s, or already exchanged."""
        trigger = p.get("trigger_id")
        if not isinstance(trigger, str) or not TRIGGER_FORMAT.match(trigger):
            raise SlackError("invalid_trigger_id")
        issued = self.triggers.get(trigger)
        if issued is None:
            raise SlackError("invalid_trigger_id")
        if trigger in self.exchanged_triggers:
            raise SlackError("exchanged_trigger_id")
        user, at = issued
        if self.now() - at > TRIGGER_SECONDS:
            raise SlackError("expired_trigger_id")
        view = p.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        found = view_problems(view, kind="modal")
        if found:
            raise SlackError("invalid_arguments", found)
        assert isinstance(view, dict)
        self.exchanged_triggers.add(trigger)
        opened = {**view, "id": f"V{self._next():08d}"}
        self.modals[user] = opened
        return {"view": opened}

    def close_modal(self, user: str) -> None:
        """The person closed their modal (its Close button)."""
        with self.lock:
            self.modals.pop(user, None)
            self._bump()

"""views.publish: the App Home tab published for a person."""

from __future__ import annotations

import json
from typing import Any

from bot.sandbox.blockkit import view_problems
from bot.sandbox.slack_api.workspace import SlackError, Workspace


class ViewMethods(Workspace):
    """Home tabs, checked as Slack checks a view."""

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

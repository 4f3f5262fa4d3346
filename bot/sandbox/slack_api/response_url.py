"""response_url: a URL for one interaction (5 uses within 30 minutes), and what a POST to
it does (an ephemeral or in-channel reply, replacing or deleting the original)."""

from __future__ import annotations

import uuid
from typing import Any

from bot.sandbox.slack_api.workspace import (
    BOT_ID,
    BOT_USER,
    RESPONSE_URL_SECONDS,
    RESPONSE_URL_USES,
    SlackError,
    Workspace,
)


class ResponseUrls(Workspace):
    """Interactions' response URLs."""

    def response_url(
        self, *, channel: str = "CFIN", user: str = "UALICE", message_ts: str | None = None
    ) -> str:
        """A response_url for one interaction: 5 uses within 30 minutes."""
        key = uuid.uuid4().hex
        with self._changed:
            self._responses[key] = {
                "channel": channel,
                "user": user,
                "message_ts": message_ts,
                "uses": 0,
                "expires": self._clock() + RESPONSE_URL_SECONDS,
            }
        return f"{self.url}/respond/{key}"

    def respond(self, key: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """A POST to a response_url: ephemeral (default), in_channel, replace or delete the original."""
        with self._changed:
            self.responses.append(body)
            ctx = self._responses.get(key)
            if ctx is None or self._clock() > ctx["expires"]:
                return 404, {"ok": False, "error": "expired_url"}
            if ctx["uses"] >= RESPONSE_URL_USES:
                return 404, {"ok": False, "error": "used_url"}
            ctx["uses"] += 1
            try:
                text, blocks = self._content(body, require=not body.get("delete_original"))
                original = self.messages.get(ctx["message_ts"] or "")
                mine = next(  # or the ephemeral message the interaction came from
                    (
                        e
                        for e in self.ephemerals
                        if e["ts"] == ctx["message_ts"] and e["visible_to"] == ctx["user"]
                    ),
                    None,
                )
                if body.get("delete_original"):
                    if original is not None:
                        del self.messages[original["ts"]]
                    elif mine is not None:
                        self.ephemerals.remove(mine)
                elif body.get("replace_original") and original is not None:
                    original.update(text=text, blocks=blocks)
                elif body.get("replace_original") and mine is not None:
                    mine.update(text=text, blocks=blocks)
                elif body.get("response_type") == "in_channel":
                    thread = body.get("thread_ts") or (original or {}).get("thread_ts")
                    self.add_message(
                        ctx["channel"],
                        text=text,
                        blocks=blocks,
                        thread_ts=thread,
                        user=BOT_USER,
                        bot_id=BOT_ID,
                    )
                else:
                    thread = body.get("thread_ts") or (original or {}).get("thread_ts")
                    self.add_ephemeral(
                        ctx["channel"], ctx["user"], text=text, blocks=blocks, thread_ts=thread
                    )
            except SlackError as e:
                return 400, {"ok": False, "error": e.error, "errors": e.details}
            finally:
                self._bump()
        return 200, {"ok": True}

"""What Slack does when a person acts in the sandbox page: signed requests to the bot.

The page never talks to the bot. It tells this module what a person did (typed a
message or `/close`, clicked a button, opened an external select); this module
builds the request Slack would send — a signed form body for a slash command,
`payload=` for an interaction, event JSON with an `event_id` — POSTs it to the
bot's `/slack/events`, and does with the answer what Slack would (an ephemeral
reply, options for a menu, "dispatch_failed").

The package: sending (signed requests, the event queue), messages (messages,
files, commands, App Home), interactions (clicks, options, reactions, form state).
"""

from __future__ import annotations

from bot.sandbox.client.interactions import Interactions, form_state
from bot.sandbox.client.messages import MessageActions
from bot.sandbox.client.sending import ActionError, Delivery


class SlackClient(MessageActions, Interactions):
    """Slack's side of each thing a person does, aimed at the bot's request URL."""


__all__ = ["ActionError", "Delivery", "SlackClient", "form_state"]

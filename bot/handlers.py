"""The Bolt listeners' front door: `register(app, deps)` attaches one module per surface of
bot/slack/listeners/, in order, then the catch-all.

Each listener parses, authorizes, claims and acks — then hands the work to the work queue;
none runs the agent or waits on a Web API call before it acks (process_before_response=True:
the HTTP answer leaves when the listener returns). A new surface (a shortcut, a modal) is a
listener module with its own `register`, listed in SURFACES.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType

from slack_bolt import Ack, App

from bot.slack.listeners import (
    assistant,
    commands,
    controls,
    errors,
    events,
    files,
    forms,
    home,
    modals,
    options,
    settings,
)
from bot.slack.listeners.shared import Deps

__all__ = ["SURFACES", "Deps", "register"]

# The surfaces, each a module with register(app, deps). Their listeners match disjoint
# requests, so their order does not matter — except the catch-all's, added after them all.
SURFACES: tuple[ModuleType, ...] = (
    commands,  # /close and its which-period form
    forms,  # a question's Submit, choice buttons, Cancel
    modals,  # a card's Details (a modal) and its owners' pickers
    controls,  # Stop, Retry, Decide, Change a decision
    options,  # a large question's external select
    files,  # dropped files, a file's form
    events,  # mentions, thread replies, the DM's routing, tokens taken back
    home,  # the App Home
    settings,  # the App Home's Settings: its modal (issue 32)
    assistant,  # the assistant pane (Bolt middleware)
    errors,  # Bolt's error handler
)


def register(app: App, deps: Deps) -> None:
    """Attach every surface's listeners to `app`, then the catch-all: Bolt runs the first
    listener that matches, so the catch-all comes after every specific one by construction."""
    for surface in SURFACES:
        register_surface: Callable[[App, Deps], None] = surface.register
        register_surface(app, deps)
    app.action(re.compile(".*"))(any_other_action)


def any_other_action(ack: Ack) -> None:
    """Radio buttons, selects and the like need an ack and nothing more."""
    ack()

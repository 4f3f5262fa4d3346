"""Slack's limits on Block Kit, as closebot enforces them (SLACK.md)."""

from __future__ import annotations

# Limits from SLACK.md.
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_CONTEXT_ELEMENTS = 10
MAX_LABEL = 2000
MAX_ID = 255
MAX_CHOICE_BUTTONS = 10
MAX_ACTIONS = 25  # elements of an actions block
MAX_SELECT_OPTIONS = 100
MAX_OPTION_TEXT = 75
MAX_OPTION_DESCRIPTION = 75
MAX_OPTION_VALUE = 150
MAX_BUTTON_TEXT = 75
MAX_CONFIRM_TITLE, MAX_CONFIRM_TEXT, MAX_CONFIRM_BUTTON = 100, 300, 30
MAX_MESSAGE_CHARS = 12_000  # Slack answers msg_blocks_too_long around 13k

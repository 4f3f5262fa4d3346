"""Slack's Block Kit limits, as SLACK.md and the block and element reference pages give them:
how many blocks, characters, options and cells Slack accepts, and which types exist."""

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_FIELDS, MAX_FIELD_TEXT = 10, 2000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS_ELEMENTS = 25
MAX_LABEL, MAX_HINT = 2000, 2000
MAX_ID = 255
MAX_CHOICE_OPTIONS = 10
MAX_SELECT_OPTIONS = 100
MAX_OPTION_TEXT, MAX_OPTION_DESCRIPTION, MAX_OPTION_VALUE = 75, 75, 150
MAX_BUTTON_TEXT, MAX_BUTTON_VALUE = 75, 2000
MAX_CONFIRM_TITLE, MAX_CONFIRM_TEXT, MAX_CONFIRM_BUTTON = 100, 300, 30
MAX_PLACEHOLDER = 150
MAX_INPUT_LENGTH = 3000
MAX_MESSAGE_BLOCKS_CHARS = 13_000  # Slack answers msg_blocks_too_long around here
MAX_VIEW_BLOCKS = 100  # a Home tab or a modal
MAX_VIEW_TITLE = (
    24  # a modal's title, close and submit (docs.slack.dev/reference/views/modal-views)
)
MAX_TABLE_ROWS, MAX_TABLE_CELLS = 100, 20
# A table's text across all its cells (docs.slack.dev/reference/block-kit/blocks/table-block,
# "Usage info"; the same cap on data_table: .../blocks/data-table-block).
MAX_TABLE_CHARS = 10_000
TABLE_ALIGN = {"left", "center", "right"}
MAX_LOADING_MESSAGES = 10
MAX_STREAM_MARKDOWN = 12_000
TASK_STATUSES = {"pending", "in_progress", "complete", "error"}
TASK_DISPLAY_MODES = {"timeline", "plan"}
CHUNK_TYPES = {"markdown_text", "task_update", "plan_update", "blocks"}

BLOCK_TYPES = {
    "section",
    "header",
    "context",
    "divider",
    "actions",
    "input",
    "rich_text",
    "image",
    "table",
    "plan",
    "task_card",
    "container",
}
# A container's children: at most 10, of these types, and no container inside a container
# (docs.slack.dev/reference/block-kit/blocks/container-block, "Supported child blocks"; the
# block is new: changelog 2026-06-29). Its title and subtitle: at most 150 characters.
CONTAINER_CHILDREN = {
    "actions",
    "context",
    "divider",
    "file",
    "header",
    "image",
    "input",
    "rich_text",
    "section",
    "table",
    "video",
}
MAX_CONTAINER_CHILDREN = 10
MAX_CONTAINER_TITLE = 150
CONTAINER_WIDTHS = {"narrow", "standard", "wide", "full"}
CHOICE_ELEMENTS = {"radio_buttons", "checkboxes"}
STATIC_SELECTS = {"static_select", "multi_static_select"}
EXTERNAL_SELECTS = {"external_select", "multi_external_select"}
INPUT_ELEMENTS = {
    *CHOICE_ELEMENTS,
    *STATIC_SELECTS,
    *EXTERNAL_SELECTS,
    "plain_text_input",
    "users_select",
    "multi_users_select",  # approvers, picked in closebot's Settings (issue 32)
    "conversations_select",
    "datepicker",
    "number_input",
}
ACTION_ELEMENTS = {"button", "overflow", *INPUT_ELEMENTS}
RICH_TEXT_PARTS = {
    "rich_text_section",
    "rich_text_list",
    "rich_text_preformatted",
    "rich_text_quote",
}

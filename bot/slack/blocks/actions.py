"""The action and block ids closebot's blocks carry, which the listeners route on."""

from __future__ import annotations

import re

SUBMIT_ACTION = "closebot_submit"
CANCEL_ACTION = "closebot_cancel"
STOP_ACTION = "closebot_stop"
RETRY_ACTION = "closebot_retry"
DECIDE_ACTION = "closebot_decide"  # a question put off: post its form again
DETAILS_ACTION = "closebot_details"  # a decision card's detail: a modal (views.open)
EXPAND_ACTION = "closebot_expand"  # a card's owners and due dates: their pickers shown
CHANGE_ACTION = "closebot_change"  # before posting: ask a decision again
CHOICE_ACTION = "closebot_choose_"  # + the option's number: a choice made by its own button
CHOICE_ACTION_RE = re.compile(r"^closebot_choose_(\d+)$")
ANSWER_ACTION = "answer"
OTHER_ACTION = "other"
OTHER_VALUE = "other"  # a table row's menu option "Other…": its answer is the card's Other text
WHY_ACTION = "why"
BLOCK_PREFIX = "closebot"
PER_QUESTION_WHY = "v"  # a form whose questions each have their own Why (where it can be needed)

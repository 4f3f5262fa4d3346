"""Block Kit elements checked the way Slack checks them: buttons, choices, selects, text
inputs, user and date pickers, their options, initial options and confirm dialogs."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from bot.sandbox.blockkit.base import Checker
from bot.sandbox.blockkit.limits import (
    CHOICE_ELEMENTS,
    MAX_BUTTON_TEXT,
    MAX_BUTTON_VALUE,
    MAX_CHOICE_OPTIONS,
    MAX_CONFIRM_BUTTON,
    MAX_CONFIRM_TEXT,
    MAX_CONFIRM_TITLE,
    MAX_INPUT_LENGTH,
    MAX_OPTION_DESCRIPTION,
    MAX_OPTION_TEXT,
    MAX_OPTION_VALUE,
    MAX_PLACEHOLDER,
    MAX_SELECT_OPTIONS,
    STATIC_SELECTS,
)


class ElementChecks(Checker):
    """The checks of one element (and its options and confirm dialog)."""

    def element(self, el: Any, p: str, allowed: set[str]) -> None:
        if not isinstance(el, dict):
            self.bad(p, "must provide an object")
            return
        kind = el.get("type")
        if kind not in allowed:
            self.bad(f"{p}/type", f"element type {kind!r} is not allowed here")
            return
        self.ident(el.get("action_id"), f"{p}/action_id")
        if el.get("placeholder") is not None:
            self.text(el["placeholder"], MAX_PLACEHOLDER, f"{p}/placeholder", plain_only=True)
        if el.get("confirm") is not None:
            self.confirm(el["confirm"], f"{p}/confirm")
        if kind == "button":
            self.text(el.get("text"), MAX_BUTTON_TEXT, f"{p}/text", plain_only=True)
            if el.get("value") is not None:
                self.length(el["value"], MAX_BUTTON_VALUE, f"{p}/value")
            if el.get("style") not in (None, "primary", "danger"):
                self.bad(f"{p}/style", "must be one of primary, danger")
        elif kind in CHOICE_ELEMENTS:
            self.options(el.get("options"), MAX_CHOICE_OPTIONS, f"{p}/options")
        elif kind in STATIC_SELECTS:
            if el.get("option_groups") is not None:
                groups = self.items(el["option_groups"], MAX_SELECT_OPTIONS, f"{p}/option_groups")
                for i, group in enumerate(groups):
                    self.options(
                        (group or {}).get("options"),
                        MAX_SELECT_OPTIONS,
                        f"{p}/option_groups/{i}/options",
                    )
            else:
                self.options(el.get("options"), MAX_SELECT_OPTIONS, f"{p}/options")
        elif kind == "plain_text_input":
            limit = el.get("max_length")
            if limit is not None and (
                not isinstance(limit, int) or not 1 <= limit <= MAX_INPUT_LENGTH
            ):
                self.bad(f"{p}/max_length", f"must be between 1 and {MAX_INPUT_LENGTH}")
        elif kind == "users_select":
            user = el.get("initial_user")
            if user is not None and not (isinstance(user, str) and USER_ID.match(user)):
                self.bad(f"{p}/initial_user", "must be a valid user ID")
        elif kind == "multi_users_select":
            # docs.slack.dev/reference/block-kit/block-elements/multi-select-menu-element
            # (#users_multi_select): initial_users, an array of user IDs; max_selected_items >= 1
            users = el.get("initial_users")
            if users is not None:
                for i, u in enumerate(self.items(users, 100, f"{p}/initial_users", least=0)):
                    if not (isinstance(u, str) and USER_ID.match(u)):
                        self.bad(f"{p}/initial_users/{i}", "must be a valid user ID")
            most = el.get("max_selected_items")
            if most is not None and not (isinstance(most, int) and most >= 1):
                self.bad(f"{p}/max_selected_items", "must be an integer of at least 1")
        elif kind == "conversations_select":
            # …/block-elements/select-menu-element#conversations_select: initial_conversation
            # a conversation ID; filter.include among im, mpim, private, public
            convo = el.get("initial_conversation")
            if convo is not None and not (isinstance(convo, str) and CONVERSATION_ID.match(convo)):
                self.bad(f"{p}/initial_conversation", "must be a valid conversation ID")
            include = (el.get("filter") or {}).get("include")
            if include is not None and not (
                isinstance(include, list)
                and include
                and set(include) <= {"im", "mpim", "private", "public"}
            ):
                self.bad(
                    f"{p}/filter/include", "must be a non-empty list of im, mpim, private, public"
                )
        elif kind == "number_input":
            self.number_input(el, p)
        elif kind == "datepicker":
            day = el.get("initial_date")
            if day is not None and not _iso_date(day):
                self.bad(f"{p}/initial_date", "must be a valid date in the format YYYY-MM-DD")
        if kind in CHOICE_ELEMENTS or kind in STATIC_SELECTS:
            self.initial(el, p)

    def number_input(self, el: dict[str, Any], p: str) -> None:
        """docs.slack.dev/reference/block-kit/block-elements/number-input-element:
        is_decimal_allowed is required; initial_value, min_value and max_value are numbers
        as strings (whole numbers unless decimals are allowed), min <= initial <= max."""
        decimals = el.get("is_decimal_allowed")
        if not isinstance(decimals, bool):
            self.bad(f"{p}/is_decimal_allowed", "must provide a boolean")
            return
        numbers: dict[str, float] = {}
        for key in ("initial_value", "min_value", "max_value"):
            raw = el.get(key)
            if raw is None:
                continue
            shape = r"-?\d+(\.\d+)?" if decimals else r"-?\d+"
            if not (isinstance(raw, str) and re.fullmatch(shape, raw)):
                self.bad(
                    f"{p}/{key}", "must be a number as a string" + ("" if decimals else ", whole")
                )
                continue
            numbers[key] = float(raw)
        low, high = numbers.get("min_value"), numbers.get("max_value")
        if low is not None and high is not None and low > high:
            self.bad(f"{p}/min_value", "must be less than or equal to max_value")
        start = numbers.get("initial_value")
        if start is not None and (
            (low is not None and start < low) or (high is not None and start > high)
        ):
            self.bad(f"{p}/initial_value", "must be between min_value and max_value")

    def initial(self, el: dict[str, Any], p: str) -> None:
        """initial_option(s) must be exactly one of the element's options."""
        offered = [o for o in _options_of(el) if isinstance(o, dict)]
        given = (
            [el["initial_option"]]
            if el.get("initial_option") is not None
            else list(el.get("initial_options") or [])
        )
        name = "initial_option" if el.get("initial_option") is not None else "initial_options"
        if el.get("initial_option") is not None and el["type"] in (
            "checkboxes",
            "multi_static_select",
        ):
            self.bad(f"{p}/initial_option", "use initial_options for a multi-select element")
        for i, option in enumerate(given):
            if option not in offered:
                where = f"{p}/{name}" + ("" if name == "initial_option" else f"/{i}")
                self.bad(where, "must match one of the provided options")

    def options(self, options: Any, limit: int, p: str) -> None:
        for i, opt in enumerate(self.items(options, limit, p)):
            q = f"{p}/{i}"
            if not isinstance(opt, dict):
                self.bad(q, "must provide an object")
                continue
            self.text(opt.get("text"), MAX_OPTION_TEXT, f"{q}/text")
            self.length(opt.get("value"), MAX_OPTION_VALUE, f"{q}/value")
            self.text(
                opt.get("description"),
                MAX_OPTION_DESCRIPTION,
                f"{q}/description",
                plain_only=True,
                required=False,
            )

    def confirm(self, c: Any, p: str) -> None:
        if not isinstance(c, dict):
            self.bad(p, "must provide an object")
            return
        self.text(c.get("title"), MAX_CONFIRM_TITLE, f"{p}/title", plain_only=True)
        self.text(c.get("text"), MAX_CONFIRM_TEXT, f"{p}/text")
        self.text(c.get("confirm"), MAX_CONFIRM_BUTTON, f"{p}/confirm", plain_only=True)
        self.text(c.get("deny"), MAX_CONFIRM_BUTTON, f"{p}/deny", plain_only=True)


USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
CONVERSATION_ID = re.compile(r"^[CGD][A-Z0-9]{2,}$")


def _iso_date(value: Any) -> bool:
    if not (isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value)):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _options_of(el: dict[str, Any]) -> list[Any]:
    options = list(el.get("options") or [])
    for group in el.get("option_groups") or []:
        if isinstance(group, dict):
            options.extend(group.get("options") or [])
    return options

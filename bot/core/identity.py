"""Who a person is: one canonical id, compared the same way at the console and in Slack.

In Slack a person is their user id (Slack says who pressed Submit); at the console a person
is the operating-system login that runs the command (the process's real user, read from the
password database: never a name typed at a prompt or set in the environment).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

SLACK_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
LOGIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")


def canonical(who: str | None) -> str:
    """The form identities are compared in: trimmed and case-folded ('ALICE' is 'alice')."""
    return (who or "").strip().casefold()


def same_person(a: str | None, b: str | None) -> bool:
    """Two identities name the same person (never true of an empty one)."""
    return bool(canonical(a)) and canonical(a) == canonical(b)


def one_of(who: str | None, people: Iterable[str]) -> bool:
    """`who` is one of `people`, compared canonically."""
    return bool(canonical(who)) and canonical(who) in {canonical(p) for p in people}


def mention(who: str) -> str:
    """A Slack user id as a mention; a console login as itself."""
    return f"<@{who}>" if SLACK_USER_ID.match(who) else who


def os_login() -> str:
    """The login of the user this process runs as (its effective uid in the password database).

    Not getpass.getuser(), which believes $LOGNAME and $USER: an identity is never typed.
    """
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError, OSError):  # no password database (Windows) or no entry
        import getpass

        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return f"uid-{os.getuid()}" if hasattr(os, "getuid") else "unknown"

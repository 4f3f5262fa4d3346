"""manifest.yml, the app's configuration as closebot ships it, read without a YAML library:
the block lists (bot scopes, bot events, slash commands) and the few switches closebot's
checks compare with the installed app (`closebot doctor --slack`; the fake Slack's grants).

Where it is: $CLOSEBOT_MANIFEST (the container image sets it), else the checkout's own."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from bot.core.errors import ConfigError

CHECKOUT_MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yml"
MANIFEST_ENV = "CLOSEBOT_MANIFEST"


def manifest_path() -> Path:
    """$CLOSEBOT_MANIFEST, else the manifest.yml of the checkout closebot runs from."""
    given = os.environ.get(MANIFEST_ENV, "").strip()
    path = Path(given).expanduser() if given else CHECKOUT_MANIFEST
    if not path.is_file():
        raise ConfigError(
            f"cannot read the app manifest at {path}: set {MANIFEST_ENV} to closebot's manifest.yml"
        )
    return path


@dataclass(frozen=True)
class Manifest:
    """What closebot's checks read from manifest.yml."""

    scopes: frozenset[str]  # oauth_config.scopes.bot
    events: frozenset[str]  # settings.event_subscriptions.bot_events
    commands: frozenset[str]  # features.slash_commands[].command
    switches: dict[str, bool]  # every `key: true|false` line, by key (home_tab_enabled, …)

    @classmethod
    def read(cls, path: Path) -> Manifest:
        lines = path.read_text(encoding="utf-8").splitlines()
        switches: dict[str, bool] = {}
        commands = set()
        for line in lines:
            bare = line.split("#", 1)[0].rstrip()
            found = re.fullmatch(r"\s*-?\s*([a-z_]+):\s*(true|false)", bare)
            if found:
                switches[found.group(1)] = found.group(2) == "true"
            command = re.fullmatch(r"\s*-\s*command:\s*(/\S+)", bare)
            if command:
                commands.add(command.group(1))
        return cls(
            scopes=listed(lines, "bot"),
            events=listed(lines, "bot_events"),
            commands=frozenset(commands),
            switches=switches,
        )


def listed(lines: list[str], key: str) -> frozenset[str]:
    """The items of the block list under the one `key:` line of a YAML file."""
    items: list[str] = []
    indent = None
    for line in lines:
        bare = line.split("#", 1)[0].rstrip()
        if indent is None:
            found = re.fullmatch(rf"(\s*){re.escape(key)}:", bare)
            indent = len(found.group(1)) if found else None
            continue
        if not bare:
            continue
        item = re.fullmatch(r"(\s*)- *([^\s]+)", bare)
        if item is None or len(item.group(1)) < indent:
            break
        items.append(item.group(2).strip("\"'"))
    return frozenset(items)

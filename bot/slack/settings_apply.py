"""Settings changed in Slack taking effect in the running bot, without a restart.

The parts a bot is built from (bot/slack/app.py) were each handed the settings they use —
the approvers, the approval limit, the data folder (and its account map), the finance
channel — as plain values. `retarget` walks those parts and, wherever an attribute or a
closure variable of that name still holds the value the bot started with, puts the new value
in its place: the next close (and every form asked from then on) uses the settings set in
Slack. Only closebot's own objects are walked (their classes live under `bot.`), by
attribute name and only where the value is the old one, so nothing else is touched;
`holders` lists what still holds an old value (tests/test_settings_slack.py asserts none).

One workspace per process: with many (OAuth installs, bot/core/tenancy.py) each
workspace's settings are read per request through `store.settings.effective(team, …)`
instead, never written into shared parts.
"""

from __future__ import annotations

import types
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bot.close import map_path
from bot.core.config import Settings

# the attribute (or closure variable) names that hold a setting Slack can change
NAMES = ("approvers", "approval_limit", "data_dir", "close_channel", "account_map")
MAX_DEPTH = 12
MAX_ITEMS = 256  # containers larger than this are not looked into


@dataclass(frozen=True)
class Holder:
    """Where a setting's value is held: the object (or function) and the name."""

    owner: Any
    name: str
    value: Any


def _values(settings: Settings) -> dict[str, Any]:
    return {
        "approvers": settings.approvers,
        "approval_limit": settings.approval_limit,
        "data_dir": settings.data_dir,
        "close_channel": settings.close_channel,
        "account_map": map_path(settings.data_dir),
    }


def _ours(obj: Any) -> bool:
    module = type(obj).__module__ or ""
    return module.startswith("bot.") and not module.startswith("bot.store")


def _walk(roots: Iterable[Any]) -> Iterator[Holder]:
    """Every (owner, name, value) of NAMES reachable from `roots` through closebot's objects,
    their containers, bound methods, partials and closures."""
    seen: set[int] = set()
    # breadth first: each object is reached by its shortest path, within MAX_DEPTH
    stack: deque[tuple[Any, int]] = deque((r, 0) for r in roots)
    while stack:
        obj, depth = stack.popleft()
        if id(obj) in seen or depth > MAX_DEPTH or obj is None:
            continue
        seen.add(id(obj))
        if isinstance(obj, str | bytes | int | float | Path | frozenset | type | types.ModuleType):
            continue
        if isinstance(obj, Settings):  # the environment's, kept as the defaults: never changed
            continue
        if isinstance(obj, dict | list | tuple | set) and len(obj) > MAX_ITEMS:
            continue  # a cache or a period's rows: no part keeps its settings there
        if isinstance(obj, dict):
            stack.extend((v, depth + 1) for v in list(obj.values()))
        elif isinstance(obj, list | tuple | set):
            stack.extend((v, depth + 1) for v in list(obj))
        elif isinstance(obj, types.MethodType):
            stack.append((obj.__self__, depth + 1))
        elif isinstance(obj, partial):
            stack.extend((v, depth + 1) for v in (obj.func, *obj.args, *obj.keywords.values()))
        elif isinstance(obj, types.FunctionType):
            for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or (), strict=True):
                try:
                    value = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if name in NAMES:
                    yield Holder(cell, name, value)
                stack.append((value, depth + 1))
        elif _ours(obj):
            for name, value in _attributes(obj):
                if name in NAMES and not callable(value):
                    yield Holder(obj, name, value)
                stack.append((value, depth + 1))


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    """An object's attributes: its __dict__ and its slots (a slotted dataclass has no dict)."""
    found = list(vars(obj).items()) if hasattr(obj, "__dict__") else []
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if hasattr(obj, name) and not name.startswith("__"):
                found.append((name, getattr(obj, name)))
    return found


def holders(roots: Iterable[Any], settings: Settings) -> list[Holder]:
    """Where a value of `settings` is held under its name, in the parts reachable from `roots`."""
    values = _values(settings)
    return [h for h in _walk(roots) if h.value == values[h.name]]


def retarget(roots: Iterable[Any], old: Settings, new: Settings) -> int:
    """Put `new`'s values wherever `old`'s are held under their names; how many were changed."""
    before, after = _values(old), _values(new)
    changed = 0
    for h in list(_walk(roots)):
        if before[h.name] == after[h.name] or h.value != before[h.name]:
            continue
        if isinstance(h.owner, types.CellType):
            h.owner.cell_contents = after[h.name]
        else:
            object.__setattr__(h.owner, h.name, after[h.name])  # frozen dataclasses too
        changed += 1
    return changed

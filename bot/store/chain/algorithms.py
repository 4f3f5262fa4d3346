"""The audit chain's key (kept outside the database) and its named, versioned hashing
algorithms: an event is always checked with the algorithm that wrote it."""

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.core.errors import ConfigError

EVENT_FIELDS = ("run_id", "at", "kind", "actor", "detail")
KEY_ENV = "CLOSEBOT_AUDIT_KEY"


# -- the key ----------------------------------------------------------------------------


def key_file_for(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".auditkey")


def load_key(db_path: Path | None, env: Mapping[str, str] | None = None) -> tuple[bytes, bool]:
    """(the audit key, whether its file was made just now): $CLOSEBOT_AUDIT_KEY, else the key
    file beside the database, made on first start with mode 0600. A database in memory gets a
    key of its own."""
    env = os.environ if env is None else env
    given = (env.get(KEY_ENV) or "").strip()
    if given:
        if len(given) < 16:
            raise ConfigError(f"{KEY_ENV} must be at least 16 characters (64 hex digits is best)")
        return given.encode(), False
    if db_path is None:
        return secrets.token_bytes(32), False
    path = key_file_for(db_path)
    created = False
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError as e:
        raise ConfigError(
            f"cannot create the audit key file {path}: {e.strerror or e}; set {KEY_ENV} instead"
        ) from e
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        created = True
    try:
        text = path.read_text().strip()
    except OSError as e:
        raise ConfigError(
            f"cannot read the audit key file {path}: {e.strerror or e}; give this login read "
            f"access to it, or set {KEY_ENV}"
        ) from e
    if not text:
        raise ConfigError(f"the audit key file {path} is empty; restore it from your backup")
    return text.encode(), created


def key_id(key: bytes) -> str:
    """A fingerprint of the key (never the key itself): which key keyed a database."""
    return hmac.new(key, b"closebot audit key id", hashlib.sha256).hexdigest()[:16]


# json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")), made once:
# json.dumps builds a new encoder for every call with options (a journal has 300,000 lines)
CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def mac(key: bytes, value: Any) -> str:
    return hmac.digest(key, CANONICAL.encode(value).encode(), "sha256").hex()


# -- algorithms ----------------------------------------------------------------------------


def sha256_v1(prev: str, event: dict[str, Any]) -> str:
    """SHA-256 over the previous event's hash and this event's fields (releases 4db486f on)."""
    canonical = json.dumps([prev, event], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def hmac_sha256_v2(key: bytes, prev: str, event: dict[str, Any], covers: str) -> str:
    """HMAC-SHA256 under the audit key over the previous hash, the event and what it covers."""
    return mac(key, [prev, event, covers])


@dataclass(frozen=True)
class Algorithm:
    keyed: bool
    digest: Callable[[bytes, str, dict[str, Any], str], str]  # (key, prev, event, covers)


def unkeyed(fn: Callable[[str, dict[str, Any]], str]) -> Algorithm:
    return Algorithm(False, lambda _key, prev, event, _covers: fn(prev, event))


# name -> algorithm, oldest first. Append a new algorithm; never change one.
ALGORITHMS: dict[str, Algorithm] = {
    "sha256-v1": unkeyed(sha256_v1),
    "hmac-sha256-v2": Algorithm(True, hmac_sha256_v2),
}
CURRENT = "hmac-sha256-v2"  # what new events are written with
BEFORE_NAMES = "sha256-v1"  # what a hash with no hash_alg was made with (before versioning)


def seal(key: bytes, prev: str, event: dict[str, Any], covers: str = "") -> tuple[str, str]:
    """(hash, algorithm name) of a new event chained to `prev`."""
    return ALGORITHMS[CURRENT].digest(key, prev, event, covers), CURRENT

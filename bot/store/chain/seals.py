"""Each run's seal (its head under the key), the epoch that says when keyed hashing
began, and the upgrade boundary the database itself guards."""

import hmac
import json
from dataclasses import dataclass

from bot.store.chain.algorithms import key_id, mac

KEYED_AFTER = "audit_keyed_after"  # meta key: when keyed hashing began, under the key


# -- seals and the epoch ---------------------------------------------------------------------


@dataclass(frozen=True)
class Seal:
    run_id: str
    head_id: int
    head_hash: str
    events: int

    def short(self) -> str:
        """As printed in a summary: how many events, the head event, its hash's first digits."""
        return f"{self.events} events, head event {self.head_id}, hash {self.head_hash[:16]}"


def seal_mac(key: bytes, s: Seal) -> str:
    return mac(key, ["seal", s.run_id, s.head_id, s.head_hash, s.events])


def epoch_value(key: bytes, after: int, through: int | None = None) -> str:
    """The keyed record of when keyed hashing began (`after`) and, since the boundary was
    sealed, the last event an earlier release could have written (`through`)."""
    kid = key_id(key)
    if through is None:  # as the release that began keyed hashing wrote it
        return json.dumps({"after": after, "key_id": kid, "mac": mac(key, ["epoch", after, kid])})
    return json.dumps(
        {
            "after": after,
            "through": through,
            "key_id": kid,
            "mac": mac(key, ["epoch", after, kid, through]),
        }
    )


@dataclass(frozen=True)
class Epoch:
    after: int  # events with a higher id were written with the key
    key_id: str
    valid: bool  # its digest matches under this key
    # the sealed boundary: no event of an earlier algorithm after it is history (None: not
    # sealed yet, as a database keyed by the release before this one is until it starts)
    through: int | None = None

    @property
    def boundary(self) -> int:
        return self.after if self.through is None else self.through


def read_epoch(key: bytes, value: str | None) -> Epoch | None:
    if value is None:
        return None
    try:
        data = json.loads(value)
        after, kid = int(data["after"]), str(data["key_id"])
        if "through" in data:
            through = int(data["through"])
            expected = mac(key, ["epoch", after, kid, through])
            return Epoch(after, kid, hmac.compare_digest(str(data["mac"]), expected), through)
        return Epoch(
            after, kid, hmac.compare_digest(str(data["mac"]), mac(key, ["epoch", after, kid]))
        )
    except (ValueError, KeyError, TypeError):
        return Epoch(0, "", False)


# Once the boundary is sealed, the database itself refuses an event that names no algorithm
# (every release before 4db486f's successor: 0fd23f4 and earlier), so an earlier closebot still
# running after an upgrade changes nothing: its write is refused whole. An event of an earlier
# algorithm after the boundary can then only be a forgery, and verify says so.
GUARD = "audit_events_name_their_algorithm"
GUARD_SQL = (
    f"create trigger if not exists {GUARD} before insert on audit_events "
    "when new.hash_alg is null begin select raise(abort, "
    "'closebot: this database was upgraded and its audit trail is keyed; an earlier closebot "
    "may not write to it (stop it: the newer one carries its runs on)'); end"
)

"""Who a Slack user id is, as Slack last said (users.info): cached so names survive a restart
and the console, which has no Slack client, shows them too.

A name is shown beside what its person decided (the decision log, the DM, the Home tab), so
it is part of the record (issue 31): each new or changed name is an event of the register
(the audit events of no run) covering the row, and `closebot audit --verify` and `closebot
doctor` name a row edited, deleted or added outside closebot. Only when a fetch is recorded
and the names are unchanged is nothing audited. A database from before names were covered
has its rows recorded as they stand, once, on this release's first start (a new one: none).
"""

from __future__ import annotations

from typing import Any

from bot.store.audit import AuditChain
from bot.store.core import StoreCore

NAMES = ("real_name", "display_name", "handle")
ADOPTED_OR_NAMED = ("people_adopted", "person_named")  # the register's events of names


class People:
    """`store.people`: the cached names of Slack user ids, each change on the register."""

    def __init__(self, core: StoreCore, audit: AuditChain) -> None:
        self.core = core
        self.audit = audit
        self._adopt()

    def get(self, user_id: str) -> dict[str, Any] | None:
        """The cached names of a user id (real_name, display_name, handle, fetched_at), or None."""
        rows = self.core.query(
            "select id, real_name, display_name, handle, fetched_at from people where id = ?",
            (user_id,),
        )
        return rows[0] if rows else None

    def of(self, user_ids: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """The cached names of these ids (every cached id when None), by id."""
        rows = self.core.query("select id, real_name, display_name, handle, fetched_at from people")
        wanted = None if user_ids is None else set(user_ids)
        return {r["id"]: r for r in rows if wanted is None or r["id"] in wanted}

    def remember(self, user_id: str, *, real_name: str, display_name: str, handle: str) -> None:
        """What Slack says a user is called, now; a new or changed name audited."""
        names = {"real_name": real_name, "display_name": display_name, "handle": handle}
        with self.core.write() as db:
            known = self.core.query(
                "select real_name, display_name, handle from people where id = ?", (user_id,)
            )
            db.execute(
                "insert into people (id, real_name, display_name, handle, fetched_at) "
                "values (?, ?, ?, ?, ?) on conflict(id) do update set real_name = excluded.real_name, "
                "display_name = excluded.display_name, handle = excluded.handle, "
                "fetched_at = excluded.fetched_at",
                (user_id, real_name, display_name, handle, self.core.now()),
            )
            if known and {k: known[0][k] or "" for k in NAMES} == names:
                return  # only fetched again: the covered names are as recorded
            self.audit.append(
                db,
                run_id=None,
                kind="person_named",
                actor=None,
                detail={"user": user_id, **names},
                covers=[("people", "id", user_id)],
            )

    def _adopt(self) -> None:
        """On this release's first start on a database (an earlier release's, or a new
        one), its names — none, for a new one — recorded as they stand, once: from then on
        a name edited, deleted or added outside closebot shows."""
        if self.core.query(
            "select 1 from audit_events where run_id is null and kind in (?, ?) limit 1",
            ADOPTED_OR_NAMED,
        ):
            return
        with self.core.write() as db:
            self.audit.append(
                db,
                run_id=None,
                kind="people_adopted",
                actor=None,
                detail={
                    "names": len(self.core.query("select id from people")),
                    "why": "the names kept before names were part of the audited record "
                    "(an earlier closebot's; none on a new database), recorded as they stand",
                },
                covers=[
                    ("people", "id", r["id"]) for r in self.core.query("select id from people")
                ],
            )

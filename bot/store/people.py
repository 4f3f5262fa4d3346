"""Who a Slack user id is, as Slack last said (users.info): cached so names survive a restart
and the console, which has no Slack client, shows them too."""

from __future__ import annotations

from typing import Any

from bot.store.core import StoreCore


class People:
    """`store.people`: the cached names of Slack user ids."""

    def __init__(self, core: StoreCore) -> None:
        self.core = core

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
        """What Slack says a user is called, now."""
        with self.core.write() as db:
            db.execute(
                "insert into people (id, real_name, display_name, handle, fetched_at) "
                "values (?, ?, ?, ?, ?) on conflict(id) do update set real_name = excluded.real_name, "
                "display_name = excluded.display_name, handle = excluded.handle, "
                "fetched_at = excluded.fetched_at",
                (user_id, real_name, display_name, handle, self.core.now()),
            )

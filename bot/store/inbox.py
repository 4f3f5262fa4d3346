"""Messages written in a run's thread while it was busy, held until its next turn."""

from __future__ import annotations

from typing import Any

from bot.store.core import StoreCore, insert_row


class Inbox:
    """`store.inbox`: messages held for a busy run."""

    def __init__(self, core: StoreCore) -> None:
        self.core = core

    def hold(self, run_id: str, *, user: str | None, text: str) -> None:
        """Keep a message that arrived while the run was busy; take() hands it over."""
        with self.core.write() as db:
            insert_row(
                db,
                "inbox",
                {"run_id": run_id, "user": user, "text": text, "created_at": self.core.now()},
            )

    def take(self, run_id: str) -> list[dict[str, Any]]:
        """Held messages, oldest first, each handed over once."""
        with self.core.write() as db:
            rows = self.core.query(
                "select id, user, text from inbox where run_id = ? and delivered_at is null order by id",
                (run_id,),
            )
            for row in rows:
                db.execute(
                    "update inbox set delivered_at = ? where id = ?", (self.core.now(), row["id"])
                )
        return rows

    def since(self, run_id: str, at: str) -> list[dict[str, Any]]:
        """Messages written in the run's thread from `at` on (delivered or not), oldest first."""
        return self.core.query(
            "select id, user, text, created_at from inbox where run_id = ? and created_at >= ? "
            "order by id",
            (run_id, at),
        )

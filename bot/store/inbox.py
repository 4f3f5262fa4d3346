"""Messages written in a run's thread while it was busy, held until its next turn."""

from __future__ import annotations

from typing import Any

from bot.store.core import StoreCore, insert_row


class Inbox(StoreCore):
    def hold_message(self, run_id: str, *, user: str | None, text: str) -> None:
        """Keep a message that arrived while the run was busy; take_messages() hands it over."""
        with self.write() as db:
            insert_row(
                db,
                "inbox",
                {"run_id": run_id, "user": user, "text": text, "created_at": self.now()},
            )

    def take_messages(self, run_id: str) -> list[dict[str, Any]]:
        """Held messages, oldest first, each handed over once."""
        with self.write() as db:
            rows = self.query(
                "select id, user, text from inbox where run_id = ? and delivered_at is null order by id",
                (run_id,),
            )
            for row in rows:
                db.execute(
                    "update inbox set delivered_at = ? where id = ?", (self.now(), row["id"])
                )
        return rows

"""Settings changed in Slack, by workspace: `store.settings`. Each is kept under the name of
the environment variable it overrides (CLOSEBOT_APPROVERS, …), as text that variable would
hold, so one parser (bot/core/config.py) checks both; the environment stays the default.
Every change is audited in the register's chain: who, the setting, old → new."""

from __future__ import annotations

import json

from bot.core.config import SLACK_SETTABLE, Settings
from bot.store.audit import AuditChain, AuditEvent
from bot.store.core import StoreCore

SETTING_CHANGED = "setting_changed"  # the audit event's kind


class WorkspaceSettings:
    """`store.settings`: what a workspace set in Slack, read and changed."""

    def __init__(self, core: StoreCore, audit: AuditChain) -> None:
        self.core = core
        self.audit = audit

    def of(self, team_id: str) -> dict[str, str]:
        """The settings this workspace changed in Slack, by variable name."""
        rows = self.core.query(
            "select key, value from workspace_settings where team_id = ?", (team_id,)
        )
        return {r["key"]: r["value"] for r in rows}

    def history(self, team_id: str) -> list[AuditEvent]:
        """Every change of this workspace's settings, oldest first, as audited."""
        rows = self.core.query(
            "select id, run_id, at, kind, actor, detail from audit_events "
            "where run_id is null and kind = ? order by id",
            (SETTING_CHANGED,),
        )
        events = [AuditEvent(**{**r, "detail": json.loads(r["detail"] or "{}")}) for r in rows]
        return [e for e in events if e.detail.get("team_id") == team_id]

    def any_set(self) -> bool:
        """Whether any workspace changed a setting in Slack."""
        return bool(self.core.query("select 1 from workspace_settings limit 1"))

    def effective(self, team_id: str, defaults: Settings) -> Settings:
        """The settings a close of this workspace runs with: the environment's (`defaults`)
        with what its admins set in Slack in their place (the one reader of both)."""
        return defaults.with_overrides(self.of(team_id))

    def change(
        self, team_id: str, changes: dict[str, str], *, by: str
    ) -> dict[str, tuple[str, str]]:
        """Set these values (an empty one removes the setting: the environment's applies
        again); each change audited in the same transaction. What changed: key → (old, new)."""
        unknown = sorted(set(changes) - set(SLACK_SETTABLE))
        if unknown:
            raise ValueError(f"not a setting Slack may change: {', '.join(unknown)}")
        changed: dict[str, tuple[str, str]] = {}
        with self.core.write() as db:
            before = self.of(team_id)
            for key, new in sorted(changes.items()):
                old = before.get(key, "")
                if old == new:
                    continue
                if new:
                    db.execute(
                        "insert into workspace_settings (team_id, key, value, changed_by, changed_at) "
                        "values (?, ?, ?, ?, ?) on conflict(team_id, key) do update set "
                        "value = excluded.value, changed_by = excluded.changed_by, "
                        "changed_at = excluded.changed_at",
                        (team_id, key, new, by, self.core.now()),
                    )
                else:
                    db.execute(
                        "delete from workspace_settings where team_id = ? and key = ?",
                        (team_id, key),
                    )
                self.audit.append(
                    db,
                    run_id=None,
                    kind=SETTING_CHANGED,
                    actor=by,
                    detail={"team_id": team_id, "setting": key, "old": old, "new": new},
                )
                changed[key] = (old, new)
        return changed

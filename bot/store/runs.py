"""Runs: their status, steps, where in Slack they live, and Stop."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bot.core.errors import NotFoundError, PeriodTakenError
from bot.core.tenancy import Tenant, acting_for, current
from bot.store.audit import AuditChain
from bot.store.core import StoreCore, dumps, insert_row, known

RUN_STATUSES = ("running", "waiting", "done", "failed", "cancelled")


@dataclass(frozen=True)
class Run:
    id: str
    period: str
    mode: str
    status: str
    started_by: str | None
    channel: str | None
    thread_ts: str | None
    model: str | None
    steps: dict[str, str]
    error: str | None
    created_at: str
    updated_at: str
    status_ts: str | None = None
    stop_requested_by: str | None = None
    started_team: str | None = None  # the starter's team (Slack Connect, org-wide installs)
    retry_at: str | None = None  # waiting to retry a model call the API could not answer
    retries: int | None = None  # tries so far since the last answered model call
    team_id: str | None = None  # the workspace it belongs to (None: the one workspace)
    enterprise_id: str | None = None  # that workspace's Enterprise Grid org, if any

    @property
    def tenant(self) -> Tenant | None:
        """The workspace the run belongs to; None: the one workspace of a single install."""
        if self.team_id is None and self.enterprise_id is None:
            return None
        return Tenant(self.team_id, self.enterprise_id)


@dataclass(frozen=True)
class RunPrompt:
    """The system prompt and tool definitions a run started with, sent for its whole life;
    thinking blocks in messages before `stale_thinking_before` are never sent (a run from
    before copies were kept: they were bound to a prompt nobody kept)."""

    system: str
    tools: list[dict[str, Any]]
    stale_thinking_before: int | None = None


class Runs:
    """`store.runs`: a run's row, its steps, where in Slack it lives, Stop."""

    def __init__(self, core: StoreCore, audit: AuditChain) -> None:
        self.core = core
        self.audit = audit

    def create(
        self,
        *,
        period: str,
        mode: str,
        started_by: str | None,
        model: str | None,
        channel: str | None = None,
        thread_ts: str | None = None,
        one_per_period: bool = False,
    ) -> Run:
        """A new run, running, of the workspace the work in hand is for (bot/core/tenancy.py).
        `one_per_period`: the period's claim — PeriodTakenError when a run of `period` is
        still live in that workspace; the check and the insert are one write transaction
        (BEGIN IMMEDIATE), so of two starts at the same instant one run is made."""
        run_id = uuid.uuid4().hex[:12]
        now = self.core.now()
        tenant = current()
        row: dict[str, Any] = {
            "id": run_id,
            "period": period,
            "mode": mode,
            "status": "running",
            "started_by": started_by,
            "channel": channel,
            "thread_ts": thread_ts,
            "model": model,
            "steps": dumps({}),
            "error": None,
            "created_at": now,
            "updated_at": now,
        }
        if tenant is not None:  # a single install's runs keep the columns an older release knows
            row.update(team_id=tenant.team_id, enterprise_id=tenant.enterprise_id)
        with self.core.write() as db:
            live = self.live(period) if one_per_period else None
            if live is not None:
                raise PeriodTakenError(
                    f"the {period} close is already under way (run {live.id}, {live.status})",
                    run_id=live.id,
                )
            insert_row(db, "runs", row)
            self.audit.append(
                db,
                run_id=run_id,
                kind="run_started",
                actor=started_by,
                detail={"period": period, "mode": mode, "model": model}
                | ({"workspace": str(tenant)} if tenant is not None else {}),
                first=True,
                covers=[("runs", "id", run_id)],
            )
            self.audit.append(  # the register of runs: a run deleted whole still shows
                db,
                run_id=None,
                kind="run_registered",
                actor=started_by,
                detail={"run_id": run_id, "period": period},
            )
        return Run(**{**row, "steps": {}})

    def get(self, run_id: str) -> Run:
        rows = self.core.query("select * from runs where id = ?", (run_id,))
        if not rows:
            raise NotFoundError(f"no run with id {run_id!r} in {self.core.path}")
        row = rows[0]
        tenant = current()
        if tenant is not None and not tenant.owns(row.get("team_id"), row.get("enterprise_id")):
            # another workspace's run is, for this one, no run at all (issue 32)
            raise NotFoundError(f"no run with id {run_id!r} in {self.core.path}")
        row["steps"] = json.loads(row["steps"] or "{}")
        return Run(**known(Run, row))

    @contextmanager
    def acting_for(self, run_id: str) -> Iterator[None]:
        """Do the block for the run's workspace — upkeep (the watchdog, recovery) acting on a
        run outside any request; inside one (a workspace already named) as it is."""
        if current() is not None:
            yield
            return
        rows = self.core.query("select team_id, enterprise_id from runs where id = ?", (run_id,))
        team, enterprise = (rows[0]["team_id"], rows[0]["enterprise_id"]) if rows else (None, None)
        tenant = Tenant(team, enterprise) if team is not None or enterprise is not None else None
        with acting_for(tenant):
            yield

    def visible(self, run_id: str) -> bool:
        """Whether the work in hand may reach the run: it exists and is its workspace's."""
        try:
            self.get(run_id)
        except NotFoundError:
            return False
        return True

    @staticmethod
    def workspace_condition(alias: str = "") -> tuple[str, tuple[Any, ...]]:
        """The SQL condition (and its parameters) that keeps a query to the runs of the
        workspace the work in hand is for; none outside any workspace."""
        tenant = current()
        if tenant is None:
            return "", ()
        col = f"{alias}." if alias else ""
        if tenant.team_id is None:  # an org-wide install acting for the org itself
            return f" and {col}enterprise_id = ?", (tenant.enterprise_id,)
        return f" and {col}team_id = ?", (tenant.team_id,)

    def stop_requested(self, run_id: str) -> str | None:
        """Who pressed Stop on the run, if anyone (a turn asks before each step)."""
        rows = self.core.query("select stop_requested_by from runs where id = ?", (run_id,))
        return rows[0]["stop_requested_by"] if rows else None

    def recent(self, *, limit: int = 20) -> list[Run]:
        where, args = self.workspace_condition()
        rows = self.core.query(
            f"select id from runs where 1 = 1{where} order by created_at desc, rowid desc limit ?",
            (*args, limit),
        )
        return [self.get(r["id"]) for r in rows]

    def live(self, period: str) -> Run | None:
        """The latest run of `period` that is still going (running or waiting on someone), in
        the workspace the work in hand is for: one close per period per workspace."""
        where, args = self.workspace_condition()
        rows = self.core.query(
            "select id from runs where period = ? and status in ('running', 'waiting')"
            f"{where} order by created_at desc, rowid desc limit 1",
            (period, *args),
        )
        return self.get(rows[0]["id"]) if rows else None

    def for_thread(self, *, channel: str, thread_ts: str) -> Run | None:
        where, args = self.workspace_condition()
        rows = self.core.query(
            f"select id from runs where channel = ? and thread_ts = ?{where} "
            "order by created_at desc limit 1",
            (channel, thread_ts, *args),
        )
        return self.get(rows[0]["id"]) if rows else None

    def has_thread(self, *, channel: str, thread_ts: str) -> bool:
        """Whether a run lives in this thread: reads only columns every release has, so an
        older process can ask it of a newer database (and a newer of an older)."""
        rows = self.core.query(
            "select 1 from runs where channel = ? and thread_ts = ? limit 1", (channel, thread_ts)
        )
        return bool(rows)

    def set_thread(
        self, run_id: str, *, channel: str, thread_ts: str, status_ts: str | None
    ) -> None:
        """Where in Slack the run lives: its root message (the thread) and its status message."""
        with self.core.write() as db:
            db.execute(
                "update runs set channel = ?, thread_ts = ?, status_ts = ?, updated_at = ? where id = ?",
                (channel, thread_ts, status_ts, self.core.now(), run_id),
            )

    def with_status(self, *statuses: str) -> list[Run]:
        marks = ",".join("?" for _ in statuses)
        where, args = self.workspace_condition()
        rows = self.core.query(
            f"select id from runs where status in ({marks}){where} order by created_at",
            (*statuses, *args),
        )
        return [self.get(r["id"]) for r in rows]

    def set_team(self, run_id: str, team: str) -> None:
        """The team of the person who started the run (from the payload that started it)."""
        with self.core.write() as db:
            db.execute("update runs set started_team = ? where id = ?", (team, run_id))

    def set_status(self, run_id: str, status: str, *, error: str | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        with self.core.write() as db:
            previous = self.core.query("select status from runs where id = ?", (run_id,))
            db.execute(
                "update runs set status = ?, error = ?, updated_at = ? where id = ?",
                (status, error, self.core.now(), run_id),
            )
            if (
                previous
                and previous[0]["status"] != status
                and status in ("done", "failed", "cancelled")
            ):
                self.audit.append(
                    db, run_id=run_id, kind=f"run_{status}", actor=None, detail={"error": error}
                )

    def set_step(self, run_id: str, step: str, state: str) -> dict[str, str]:
        """Record a step's state (pending/running/waiting/done/failed); return all steps."""
        with self.core.write() as db:
            steps = json.loads(
                self.core.query("select steps from runs where id = ?", (run_id,))[0]["steps"]
            )
            if state in ("running", "waiting"):
                # one step moves at a time: the one before it is finished
                for name, old in steps.items():
                    if name != step and old in ("running", "waiting"):
                        steps[name] = "done"
            steps[step] = state
            db.execute(
                "update runs set steps = ?, updated_at = ? where id = ?",
                (dumps(steps), self.core.now(), run_id),
            )
        return steps

    def finish_steps(self, run_id: str) -> dict[str, str]:
        """At the end of a turn: the step that was running is done; one left waiting was stopped."""
        with self.core.write() as db:
            steps = json.loads(
                self.core.query("select steps from runs where id = ?", (run_id,))[0]["steps"]
            )
            moved = {"running": "done", "waiting": "stopped"}
            steps = {k: moved.get(v, v) for k, v in steps.items()}
            db.execute("update runs set steps = ? where id = ?", (dumps(steps), run_id))
        return steps

    def park_steps(self, run_id: str) -> dict[str, str]:
        """At the end of a turn that waits on questions put off: the step that was running
        is done; steps waiting on a decision keep waiting (Decide continues them)."""
        with self.core.write() as db:
            steps = json.loads(
                self.core.query("select steps from runs where id = ?", (run_id,))[0]["steps"]
            )
            steps = {k: "done" if v == "running" else v for k, v in steps.items()}
            db.execute("update runs set steps = ? where id = ?", (dumps(steps), run_id))
        return steps

    def set_model(self, run_id: str, model: str) -> None:
        """The model that carries the run on (one begun offline, resumed with a key)."""
        with self.core.write() as db:
            db.execute("update runs set model = ? where id = ?", (model, run_id))
            self.audit.append(
                db, run_id=run_id, kind="model_changed", actor=None, detail={"model": model}
            )

    # -- the prompt a run keeps ----------------------------------------------

    def prompt(self, run_id: str) -> RunPrompt | None:
        rows = self.core.query(
            "select system, tools, stale_thinking_before from run_prompts where run_id = ?",
            (run_id,),
        )
        if not rows:
            return None
        r = rows[0]
        return RunPrompt(r["system"], json.loads(r["tools"]), r["stale_thinking_before"])

    def keep_prompt(self, run_id: str, prompt: RunPrompt) -> RunPrompt:
        """Keep the run's prompt, once: the first copy kept wins (and is returned)."""
        with self.core.write() as db:
            db.execute(
                "insert or ignore into run_prompts (run_id, system, tools, stale_thinking_before, at) "
                "values (?, ?, ?, ?, ?)",
                (
                    run_id,
                    prompt.system,
                    dumps(prompt.tools),
                    prompt.stale_thinking_before,
                    self.core.now(),
                ),
            )
        kept = self.prompt(run_id)
        assert kept is not None
        return kept

    # -- waiting to retry ------------------------------------------------------

    def schedule_retry(self, run_id: str, *, at: str, retries: int, error: str) -> None:
        """The model API could not answer: the run waits and tries again at `at` by itself."""
        with self.core.write() as db:
            db.execute(
                "update runs set status = 'waiting', retry_at = ?, retries = ?, error = ?, "
                "updated_at = ? where id = ?",
                (at, retries, error, self.core.now(), run_id),
            )
            self.audit.append(
                db,
                run_id=run_id,
                kind="retry_scheduled",
                actor=None,
                detail={"at": at, "retries": retries, "error": error},
            )

    def retrying_now(self, run_id: str) -> None:
        """The scheduled try is under way: no longer due (the count of tries stays)."""
        with self.core.write() as db:
            db.execute(
                "update runs set retry_at = null where id = ? and retry_at is not null", (run_id,)
            )

    def answered(self, run_id: str) -> None:
        """A model call was answered: the count of tries starts again."""
        with self.core.write() as db:
            db.execute(
                "update runs set retries = null, retry_at = null where id = ? "
                "and (retries is not null or retry_at is not null)",
                (run_id,),
            )

    def due_retries(self) -> list[Run]:
        """Slack runs waiting to retry whose time has come, and no process holds (a console
        run's own process waits for its time; `closebot resume` continues one left)."""
        now = self.core.now()
        rows = self.core.query(
            "select r.id from runs r where r.status = 'waiting' and r.mode = 'slack' "
            "and r.retry_at is not null "
            "and r.retry_at <= ? "
            "and not exists (select 1 from leases l where l.run_id = r.id and l.expires_at > ?) "
            "order by r.retry_at",
            (now, now),
        )
        return [self.get(r["id"]) for r in rows]

    def touch(self, run_id: str) -> None:
        with self.core.write() as db:
            db.execute("update runs set updated_at = ? where id = ?", (self.core.now(), run_id))

    # -- stop ---------------------------------------------------------------

    def request_stop(self, run_id: str, *, by: str) -> None:
        """Ask the run to stop at its next step boundary."""
        with self.core.write() as db:
            db.execute(
                "update runs set stop_requested_by = coalesce(stop_requested_by, ?) where id = ?",
                (by, run_id),
            )
            self.audit.append(db, run_id=run_id, kind="stop_requested", actor=by, detail={})

    def stuck(self, *, idle_for: timedelta) -> list[Run]:
        """Runs that should be moving but nothing advances them: no lease, no pending question,
        untouched for `idle_for`."""
        cutoff = self.core.now(after=-idle_for)
        rows = self.core.query(
            "select r.id from runs r where r.status in ('running', 'waiting') and r.mode = 'slack' "
            "and r.updated_at <= ? and r.retry_at is null "
            "and not exists (select 1 from leases l where l.run_id = r.id and l.expires_at > ?) "
            "and not exists (select 1 from questions q where q.run_id = r.id and q.status = 'pending') "
            "order by r.created_at",
            (cutoff, self.core.now()),
        )
        return [self.get(r["id"]) for r in rows]

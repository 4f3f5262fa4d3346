"""Faults injected into the fake Slack by tests: the next N calls of a method (those
matching a predicate) fail with an HTTP status or a Slack error, `ratelimited` with a
Retry-After; a call can be held until the test releases it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.sandbox.slack_api.workspace import Workspace


@dataclass
class Fault:
    """The next `times` calls of a method answer this instead of working."""

    times: int
    error: str | None = None
    status: int = 200
    retry_after: int | None = None
    when: Callable[[dict[str, Any]], bool] | None = None  # only calls whose params match


@dataclass
class Hold:
    """One call held before it is answered (or applied) until `release` is set."""

    method: str
    when: Callable[[dict[str, Any]], bool] | None
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


class FaultInjection(Workspace):
    """Failing and holding calls on purpose (`fail`, `hold`, `clear_faults`)."""

    def fail(
        self,
        method: str,
        *,
        error: str | None = None,
        status: int = 200,
        times: int = 1,
        retry_after: int | None = None,
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """Make the next `times` calls of `method` (those whose params match `when`) fail.

        `error="not_in_channel"` (200, ok=false), `status=503` (an HTTP failure), or
        `error="ratelimited"` (429 with Retry-After, 1 s unless given).
        """
        if error is None and status == 200:
            raise ValueError("give an error code, an HTTP status, or both")
        if error == "ratelimited":
            status, retry_after = 429, retry_after or 1
        with self._changed:
            self.faults.setdefault(method, []).append(
                Fault(times=times, error=error, status=status, retry_after=retry_after, when=when)
            )

    def failures_left(self, method: str) -> int:
        with self._changed:
            return sum(f.times for f in self.faults.get(method, []))

    def hold(self, method: str, when: Callable[[dict[str, Any]], bool] | None = None) -> Hold:
        """Hold the next call of `method` (matching `when`) until hold.release is set."""
        hold = Hold(method, when)
        with self._changed:
            self.holds.append(hold)
        return hold

    def _held(self, method: str, params: dict[str, Any]) -> None:
        with self._changed:
            hold = next(
                (
                    h
                    for h in self.holds
                    if h.method == method and (h.when is None or h.when(params))
                ),
                None,
            )
            if hold is None:
                return
            self.holds.remove(hold)
        hold.arrived.set()
        hold.release.wait(timeout=15)

    def clear_faults(self) -> None:
        with self._changed:
            self.faults.clear()
            self.rate_limit.clear()
            self.drop, self.hang_up = 0, False

    def _take_fault(
        self, method: str, params: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]] | None:
        if self.rate_limit.get(method):
            self.rate_limit[method] -= 1
            return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"}
        queue = self.faults.get(method) or []
        fault = next((f for f in queue if f.when is None or f.when(params)), None)
        if fault is None:
            return None
        fault.times -= 1
        if fault.times <= 0:
            queue.remove(fault)
        headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after else {}
        return fault.status, {"ok": False, "error": fault.error or "fatal_error"}, headers

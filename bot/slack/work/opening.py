"""Opening a run's thread in Slack and beginning its close (or carrying on, if it had
begun): on the runner's fast pool, so a new close shows at once however many turns wait on
the model; a channel closebot cannot post in fails the run and tells the person why."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from slack_sdk.errors import SlackApiError

from bot.close import start_prompt
from bot.slack.presenter import CANNOT_POST, slack_error

if TYPE_CHECKING:
    from bot.slack.work import SlackWork

log = logging.getLogger(__name__)


class Opening:
    def __init__(self, work: SlackWork) -> None:
        self.work = work

    def start_close(
        self,
        run_id: str,
        *,
        response_url: str | None = None,
        held: bool = False,
        again: bool = False,
    ) -> None:
        """Open the run's thread in Slack and begin the close (or carry on, if it had begun).

        The thread opens on the runner's fast pool, so a new close shows at once however
        many turns are waiting on the model; the turn itself then queues as usual. The
        run's lease is held throughout: from `hold()` (`held`) or taken here, and handed
        from the opening to the turn. `again`: a retry or recovery, which first looks for
        a root message already posted.
        """
        work = self.work

        def open_thread() -> None:
            holder = None if held else work.hold(run_id)
            if holder:
                log.info("run %s: opening left to %s, which holds its lease", run_id, holder)
                return
            try:
                try:
                    work.presenter.open_thread(run_id, again=again)
                except SlackApiError as e:
                    code = slack_error(e)
                    if code in CANNOT_POST:
                        self._fail_unposted(run_id, code, response_url)
                        return
                    log.warning(
                        "run %s: thread not opened (%s); the watchdog tries again", run_id, code
                    )
                    return
                work.hold(run_id)  # one more hold, handed to the turn's job
                work.jobs.job(run_id, "starting the close", begin, held=True)
            finally:
                work.store.leases.let_go(run_id, owner=work.owner)

        def begin() -> None:
            store, loop = work.store, work.loop
            run = store.runs.get(run_id)  # its data is checked by the close's first step
            if store.transcript.messages(run_id):
                if run.status not in ("running", "waiting") or store.questions.pending(run_id):
                    return  # begun elsewhere already, and not stuck
                outcome = loop.advance(run_id)
            else:
                outcome = loop.start(run_id, start_prompt(run.period))
            work.turns.deliver_held_messages(run_id, outcome)

        work.runner.fast(open_thread, key=run_id)

    def _fail_unposted(self, run_id: str, code: str, response_url: str | None) -> None:
        store = self.work.store
        run = store.runs.get(run_id)
        store.runs.set_status(run_id, "failed", error=f"could not post in the channel: {code}")
        if response_url is None:  # started from the DM: the starter is told there
            self.work.presenter.failed(run_id, CANNOT_POST[code])
            return
        self.work.presenter.respond(response_url, CANNOT_POST[code], [run.started_by or ""])
        log.warning("run %s: cannot post in %s (%s); the run is closed", run_id, run.channel, code)

"""The one answer service: who may answer or steer a run, and settling a question with
exactly one winner. Slack, the console and the sandbox all come through here."""

from __future__ import annotations

from collections.abc import Callable

from bot.agent_loop import ask_of
from bot.errors import AlreadyAnsweredError, NotAuthorizedError
from bot.questions import Ask, Response, answer_payload
from bot.store import QuestionRecord, Run, Store

ReadAnswers = Callable[[Ask], dict[int, Response]]


def may_steer(run: Run, user: str | None, approvers: frozenset[str]) -> bool:
    """The person who started the run, or an approver: they answer, write to it, stop and retry it."""
    return bool(user) and (user == run.started_by or user in approvers)


class Answers:
    """Authorize, read, validate and claim — in that order, the claim atomic in the store."""

    def __init__(self, store: Store, approvers: frozenset[str]) -> None:
        self.store = store
        self.approvers = approvers

    def authorize(self, run: Run, user: str | None, *, action: str, detail: dict[str, str]) -> None:
        """NotAuthorizedError (and an audit event) unless `user` may steer `run`."""
        if may_steer(run, user, self.approvers):
            return
        self.store.audit(
            run_id=run.id,
            kind=f"{action}_refused",
            actor=user,
            detail={**detail, "reason": "not authorized"},
        )
        raise NotAuthorizedError(f"{user} may not {action} run {run.id}", started_by=run.started_by)

    def settle(
        self,
        question_id: str,
        *,
        user: str,
        source: str,
        read: ReadAnswers | None,
        check_user: bool = True,
    ) -> QuestionRecord:
        """Answer (`read` gives the responses) or cancel (`read` None) a pending question.

        Raises NotFoundError, AlreadyAnsweredError, NotAuthorizedError, or the reader's
        FormError / AnswerError; nothing changes unless it returns.
        """
        record = self.store.question(question_id)
        if record.status != "pending":
            raise AlreadyAnsweredError(
                f"this question was already {record.status}",
                status=record.status,
                by=record.answered_by,
            )
        if check_user:
            run = self.store.run(record.run_id)
            self.authorize(run, user, action="answer", detail={"question_id": question_id})
        if read is None:
            return self.store.cancel_question(question_id, cancelled_by=user, source=source)
        ask = ask_of(record)
        answer = answer_payload(ask, read(ask))
        return self.store.claim_answer(question_id, answer=answer, answered_by=user, source=source)

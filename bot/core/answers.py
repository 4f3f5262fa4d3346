"""The one answer service: who may answer or steer a run, and settling a question with
exactly one winner. Slack and the console come through here (the sandbox will too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.core.errors import AlreadyAnsweredError, NotAuthorizedError
from bot.core.identity import one_of, same_person
from bot.core.question_records import ask_of
from bot.core.questions import (
    Ask,
    Rationale,
    Response,
    answer_payload,
    overrides,
    question_whys,
    rationale_text,
    with_whys,
)
from bot.store import QuestionRecord, Run, Store

ReadAnswers = Callable[[Ask], dict[int, Response]]
# A control over a valid answer (the close's approval rules): a refusal, or None.
Vet = Callable[[QuestionRecord, Run, str, dict[str, Any]], str | None]


def may_steer(run: Run, user: str | None, approvers: frozenset[str]) -> bool:
    """The person who started the run, or an approver: they answer, write to it, stop and retry it.
    Compared on the canonical id."""
    return same_person(user, run.started_by) or one_of(user, approvers)


class Answers:
    """Authorize, read, validate, vet and claim — in that order, the claim atomic in the store."""

    def __init__(self, store: Store, approvers: frozenset[str], *, vet: Vet | None = None) -> None:
        self.store = store
        self.approvers = approvers
        self.vet = vet

    def authorize(self, run: Run, user: str | None, *, action: str, detail: dict[str, str]) -> None:
        """NotAuthorizedError (and an audit event) unless `user` may steer `run`."""
        if may_steer(run, user, self.approvers):
            return
        self.store.audit.record(
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
        rationale: Rationale = None,
        require_rationale: bool = True,
        evidence: dict[str, Any] | None = None,
        check_user: bool = True,
    ) -> QuestionRecord:
        """Answer (`read` gives the responses) or put off (`read` None: Cancel, "not now") a
        pending question.

        Each question that overrides its recommendation needs its own "Why" (`rationale`: per
        question number, 0 for a form-level text; see questions.question_whys), stored beside
        that question's answer (`require_rationale` False: the form had no "Why" box, an
        earlier release's). Every refusal is audited. Raises NotFoundError, AlreadyAnsweredError, NotAuthorizedError
        (a stranger, or a refusal by the vet), or the reader's FormError / AnswerError;
        nothing changes unless it returns.
        """
        record = self.store.questions.get(question_id)
        if record.status != "pending":
            raise AlreadyAnsweredError(
                f"this question was already {record.status}",
                status=record.status,
                by=record.answered_by,
            )
        run = self.store.runs.get(record.run_id)
        if check_user:
            self.authorize(run, user, action="answer", detail={"question_id": question_id})
        if read is None:
            if record.changes:  # Cancel on a change: the decision stays as it was
                return self.store.questions.cancel(question_id, cancelled_by=user, source=source)
            # Cancel is "not now": the question waits for Decide
            return self.store.questions.defer(question_id, deferred_by=user, source=source)
        ask = ask_of(record)
        responses = read(ask)
        answer = answer_payload(ask, responses)
        refusal = self.vet(record, run, user, answer) if self.vet else None
        if refusal:
            self.store.audit.record(
                run_id=run.id,
                kind="answer_refused",
                actor=user,
                detail={
                    "question_id": question_id,
                    "reason": refusal,
                    "answer": answer,
                    **(
                        {"channel": evidence["channel"]}
                        if evidence and "channel" in evidence
                        else {}
                    ),
                },
            )
            raise NotAuthorizedError(refusal, started_by=run.started_by, reason=refusal)
        whys = question_whys(ask, responses, rationale, required=require_rationale)
        answer = with_whys(answer, whys)
        return self.store.questions.claim(
            question_id,
            answer=answer,
            answered_by=user,
            source=source,
            rationale=rationale_text(ask, whys),
            overridden=bool(overrides(ask, responses)),
            evidence=evidence,
            known=record,
        )

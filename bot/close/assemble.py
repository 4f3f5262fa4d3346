"""One place that builds the close's agent loop, for every front end (terminal, Slack, tests)."""

from __future__ import annotations

from datetime import timedelta

from bot.agent_loop import AgentLoop, Presenter
from bot.close.playbook import PlaybookModel
from bot.close.prompts import SYSTEM_PROMPT
from bot.close.toolset import CloseTools
from bot.core.config import Settings
from bot.core.models import ClaudeModel, Model
from bot.store import Store


def build_model(settings: Settings) -> Model:
    """Claude with an API key, the offline playbook without one."""
    if settings.anthropic_api_key:
        return ClaudeModel(
            model=settings.model, api_key=settings.anthropic_api_key, effort=settings.effort
        )
    return PlaybookModel()


def close_loop(
    settings: Settings,
    *,
    store: Store,
    presenter: Presenter,
    model: Model | None = None,
    question_ttl: timedelta | None = None,
) -> AgentLoop:
    """The agent loop over the close toolset, as configured by `settings`."""
    tools = CloseTools(
        data_dir=settings.data_dir,
        approvers=settings.approvers,
        approval_limit=settings.approval_limit,
    )
    return AgentLoop(
        store=store,
        model=model or build_model(settings),
        tools=tools.registry(),
        presenter=presenter,
        system_prompt=SYSTEM_PROMPT,
        max_steps=settings.max_steps,
        question_ttl=question_ttl,
    )

"""The month-end close, behind one front door.

Front ends (bot/console/, bot/sandbox/, the Slack edge: bot/handlers.py, bot/blocks.py,
bot/slack/) import from here, never from the close's submodules. `DOMAIN` is the close as one
object: its steps, kinds, export formats, tools, prompt, playbook, migrations, how a close
starts, and the read models the front ends show (the ledger's views, what waits on whom).
The names below it are what the front ends call, each from the submodule that owns it.

The close's own modules never import this one (it imports them all).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.close.approval_changes import approval_notes
from bot.close.assemble import build_model, close_loop
from bot.close.books.migrations import close_migrations
from bot.close.cards import question_facts
from bot.close.controls import (
    APPROVAL_HEADER,
    APPROVAL_HEADERS,
    SECOND_APPROVAL_HEADER,
    approval_posts,
    approval_refusal,
    content_hash,
    eligible_approvers,
    first_approver,
    header_of,
    may_approve,
    over_limit,
    who_may_answer,
    who_may_approve,
)
from bot.close.data import SAMPLE_DIR, Problem, add_months, check_period, period_label
from bot.close.data import check as check_data
from bot.close.data import latest_period as latest_data_period
from bot.close.data import load as load_data
from bot.close.data import require_period as require_data_period
from bot.close.data import write_sample as write_sample_data
from bot.close.decisions import CannotChange, ask_change, changeable_decisions
from bot.close.doi_master import ACCOUNT_NAMES, APPROVAL_LIMIT, money
from bot.close.exception_questions import for_people
from bot.close.exports import Format, format_named, formats
from bot.close.exports import names as format_names
from bot.close.exports.batch import (
    MAP_FILE,
    Export,
    build_export,
    map_path,
    read_account_map,
    require_map,
    unmapped,
)
from bot.close.exports.batch import documents as export_documents
from bot.close.exports.batch import file_name as export_file_name
from bot.close.exports.batch import operators as export_operators
from bot.close.groups import asked_groups, console_listing, detail_file_name, detail_rows
from bot.close.groups import summary as group_summary
from bot.close.imports.intake import (
    Ask,
    Imports,
    Received,
    has_data,
    latest_period,
    load_period,
    periods_with_data,
    require_data,
)
from bot.close.imports.intake import preview as file_preview
from bot.close.imports.mapfile import FileMap, map_for, read_map_file
from bot.close.imports.mapfile import template as map_template
from bot.close.imports.mapping import FILE_LEVEL as FILE_LEVEL_COLUMNS
from bot.close.imports.mapping import (
    KIND_NAMES,
    column_label,
    fixed_value,
    kind_label,
)
from bot.close.imports.mapping import describe as describe_mapping
from bot.close.imports.mapping import fixed as whole_file_value
from bot.close.imports.recognize import FILE_KINDS
from bot.close.imports.recognize import optional as optional_file
from bot.close.inquiries import PROMPTS, Desk, Intent, how_answered, intent
from bot.close.kinds import KINDS, Kind
from bot.close.ledger import AlreadyPostedError, Ledger
from bot.close.playbook import PlaybookModel
from bot.close.preview import may_need as preview_may_need
from bot.close.preview import preview as answer_preview
from bot.close.preview import record_shown as record_preview_shown
from bot.close.preview import seen as preview_seen
from bot.close.preview import shown_at_console as preview_at_console
from bot.close.progress import (
    every_step_ran,
    intake_figures,
    loading_messages,
    step_lines,
    steps_done,
)
from bot.close.prompts import SYSTEM_PROMPT, start_prompt
from bot.close.rates.coverage import severance_questions
from bot.close.registry import Step
from bot.close.starting import PeriodPostedError, Taken, period_taken, start_close
from bot.close.steps import registry as steps
from bot.close.toolset import CloseTools


@dataclass(frozen=True)
class CloseDomain:
    """The close as one object, for the front ends."""

    steps: tuple[Step, ...]  # in the order they run (bot/close/steps/, one module each)
    kinds: Mapping[str, Kind]  # the exception kinds, by name (bot/close/kinds/)
    formats: tuple[Format, ...]  # the journal import formats (bot/close/exports/)
    tools: type[CloseTools]  # CloseTools(data_dir=, approvers=, approval_limit=)
    prompt: str  # the system prompt
    start_prompt: Callable[[str], str]  # the request that opens a run of a period
    playbook: type[PlaybookModel]  # the offline model
    migrations: Any  # the close's own tables (a sqlite_utils Migrations set)
    start: Callable[..., Any]  # start_close: a new run, one close per period
    taken: Callable[..., Taken | None]  # period_taken: why a period may not start now
    loop: Callable[..., Any]  # close_loop: the agent loop over the close's tools
    ledger: type[Ledger]  # the ledger's views: batches, lines, exceptions, DOI rows
    desk: type[Desk]  # what waits on whom, and the answers to "status"-like questions

    @property
    def step_names(self) -> tuple[str, ...]:
        """The steps' names, in order (the keys of a run's step states)."""
        return tuple(s.name for s in self.steps)

    def step(self, key: str) -> Step:
        """A step by its id or its name."""
        for s in self.steps:
            if key in (s.id, s.name):
                return s
        raise KeyError(f"no close step {key!r}; the steps are {', '.join(self.step_names)}")


DOMAIN = CloseDomain(
    steps=steps(),
    kinds=KINDS,
    formats=formats(),
    tools=CloseTools,
    prompt=SYSTEM_PROMPT,
    start_prompt=start_prompt,
    playbook=PlaybookModel,
    migrations=close_migrations,
    start=start_close,
    taken=period_taken,
    loop=close_loop,
    ledger=Ledger,
    desk=Desk,
)
STEPS = DOMAIN.step_names

__all__ = [
    "ACCOUNT_NAMES",
    "APPROVAL_HEADER",
    "APPROVAL_HEADERS",
    "APPROVAL_LIMIT",
    "DOMAIN",
    "FILE_KINDS",
    "FILE_LEVEL_COLUMNS",
    "KINDS",
    "KIND_NAMES",
    "MAP_FILE",
    "PROMPTS",
    "SAMPLE_DIR",
    "SECOND_APPROVAL_HEADER",
    "STEPS",
    "SYSTEM_PROMPT",
    "AlreadyPostedError",
    "Ask",
    "CannotChange",
    "CloseDomain",
    "CloseTools",
    "Desk",
    "Export",
    "FileMap",
    "Format",
    "Imports",
    "Intent",
    "Kind",
    "Ledger",
    "PeriodPostedError",
    "PlaybookModel",
    "Problem",
    "Received",
    "Step",
    "Taken",
    "add_months",
    "answer_preview",
    "approval_notes",
    "approval_posts",
    "approval_refusal",
    "ask_change",
    "asked_groups",
    "build_export",
    "build_model",
    "changeable_decisions",
    "check_data",
    "check_period",
    "close_loop",
    "column_label",
    "console_listing",
    "content_hash",
    "describe_mapping",
    "detail_file_name",
    "detail_rows",
    "eligible_approvers",
    "every_step_ran",
    "export_documents",
    "export_file_name",
    "export_operators",
    "file_preview",
    "first_approver",
    "fixed_value",
    "for_people",
    "format_named",
    "format_names",
    "formats",
    "group_summary",
    "has_data",
    "header_of",
    "how_answered",
    "intake_figures",
    "intent",
    "kind_label",
    "latest_data_period",
    "latest_period",
    "load_data",
    "load_period",
    "loading_messages",
    "map_for",
    "map_path",
    "map_template",
    "may_approve",
    "money",
    "optional_file",
    "over_limit",
    "period_label",
    "period_taken",
    "periods_with_data",
    "preview_at_console",
    "preview_may_need",
    "preview_seen",
    "question_facts",
    "read_account_map",
    "read_map_file",
    "record_preview_shown",
    "require_data",
    "require_data_period",
    "require_map",
    "severance_questions",
    "start_close",
    "start_prompt",
    "step_lines",
    "steps",
    "steps_done",
    "unmapped",
    "who_may_answer",
    "who_may_approve",
    "whole_file_value",
    "write_sample_data",
]

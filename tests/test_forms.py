"""The forms of a whole October close, read from the blocks Slack would draw (issue 17):
each option once, never cut inside an amount, the recommendation preselected."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.sandbox.slack_api import FakeSlack
from tests.slack_harness import Harness


@pytest.fixture
def bot(fake: FakeSlack, db_path: Path) -> Iterator[Harness]:
    h = Harness(fake, db_path)
    yield h
    h.close()


def texts(node: Any) -> Iterator[str]:
    """Every text a person reads in some blocks (not ids, values or types)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "text" and isinstance(value, str):
                yield value
            elif key not in ("initial_option", "initial_options"):  # the same option again
                yield from texts(value)
    elif isinstance(node, list):
        for value in node:
            yield from texts(value)


def close_forms(bot: Harness) -> list[dict[str, Any]]:
    """Every form of an October close answered with its recommendations (and approvals)."""
    run = bot.start()
    seen: list[dict[str, Any]] = []
    approvers = {"Posting": "UAPPROVER", "Second approval": "UAPPROVER2"}
    for _ in range(20):
        record = bot.store.questions.pending(run.id)
        if record is None:
            break
        seen.append(json.loads(json.dumps(bot.form_of(record.id))))  # as it was then
        who = approvers.get(record.questions[0].get("header") or "", "UALICE")
        bot.submit(record.id, bot.recommended_picks(record.id), user=who)
        bot.idle()
    assert bot.store.runs.get(run.id).status == "done"
    return seen


def test_every_form_shows_each_option_once_whole_with_the_recommendation_preselected(
    bot: Harness,
) -> None:
    forms = close_forms(bot)
    assert len(forms) >= 5
    for form in forms:
        blocks = form["blocks"]
        shown = list(texts(blocks))
        around = list(texts([b for b in blocks if b["type"] != "input"]))
        for block in blocks:
            element = block.get("element") or {}
            options = element.get("options") or []
            labels = [o["text"]["text"].rstrip(" ⭐").split(". ", 1)[-1] for o in options]
            assert len(set(labels)) == len(labels)
            for option, label in zip(options, labels, strict=True):
                for part in ("text", "description"):
                    words = (option.get(part) or {}).get("text", "")
                    # never an amount cut short: '$1,200.0…'
                    assert not re.search(r"\d…$", words), words
                # each option once: not listed again around the choice (as '• *label*: …')
                assert not [t for t in around if f"*{label}*" in t or f"• {label}" in t], label
            if options:
                stars = [o for o in options if "⭐" in o["text"]["text"]]
                if stars:  # the recommended option is the preselected one
                    key = "initial_options" if "checkboxes" in element["type"] else "initial_option"
                    picked = element[key]
                    assert (picked if isinstance(picked, list) else [picked]) == stars
        # what each option books is shown whole: no text of the form ends cut inside a number
        assert not any(re.search(r"\d…", t) for t in shown), json.dumps(blocks)[:500]

"""The close's steps are registered objects: their order comes from each step's after=/before=,
the plan, the prompt's list, the loading messages and the toolset all read the registry, and
no text names a step by its number."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.close.prompts import SYSTEM_PROMPT
from bot.close.registry import Step, in_order
from bot.close.steps import books_steps, names, registry, step
from bot.close.toolset import CloseTools

ROOT = Path(__file__).resolve().parents[1]


def steps(*declared: tuple[str, str | None, str | None]) -> dict[str, Step]:
    """Steps declared outside the close's registry (a test's own)."""
    out = {}
    for id, after, before in declared:
        s = object.__new__(Step)
        for name, value in {
            "id": id,
            "name": id,
            "prompt": "",
            "opening": "",
            "after": after,
            "before": before,
        }.items():
            object.__setattr__(s, name, value)
        out[id] = s
    return out


def test_the_order_comes_from_after_and_before() -> None:
    chain = steps(("a", None, None), ("b", "a", None), ("c", "b", None))
    assert [s.id for s in in_order(chain)] == ["a", "b", "c"]
    # a step inserted between two: the next one is not renumbered nor edited
    inserted = {**chain, **steps(("ab", "a", "b"))}
    assert [s.id for s in in_order(inserted)] == ["a", "ab", "b", "c"]


def test_an_order_left_open_or_circular_is_refused() -> None:
    with pytest.raises(ValueError, match="b and x could each come next"):
        in_order(steps(("a", None, None), ("b", "a", None), ("x", "a", None)))
    with pytest.raises(ValueError, match="in a circle"):
        in_order(steps(("a", "b", None), ("b", "a", None)))
    with pytest.raises(ValueError, match="names 'nope', not a step"):
        in_order(steps(("a", "nope", None)))


def test_the_close_runs_its_registered_steps_in_order() -> None:
    assert names() == tuple(s.name for s in registry())
    assert registry()[0].after is None
    ids = [s.id for s in registry()]
    for n, s in enumerate(registry()):  # each after the step it names, before the one it names
        assert s.after is None or ids.index(s.after) < n
        assert s.before is None or ids.index(s.before) > n
    assert books_steps()[-1] is step("journal")
    for s in registry():
        assert step(s.id) is step(s.name) is s
        assert s.tools and s.opening and s.prompt


def test_the_prompt_and_the_tools_read_the_registry() -> None:
    for n, s in enumerate(registry(), start=1):
        assert f"\n{n}. {s.tool_name}" in SYSTEM_PROMPT
    reg = CloseTools().registry()
    for s in registry():
        assert [t.name for t in reg.by_step(s.name)] == list(s.tool_names)
        for tool in reg.by_step(s.name):
            assert "tools" not in tool.input_schema["properties"]
            assert tool.input_schema["required"][:1] in (["period"], ["batch_id"])


def test_each_step_has_its_loading_messages() -> None:
    counts = {"jib_lines": 1214, "revenue_lines": 88, "wells": 12}
    for s in registry():
        said = s.messages("2026-10", counts)
        assert said and all(text.endswith("…") for text in said)
    assert "Reconciling 1,214 JIB lines…" in step("jibs").messages("2026-10", counts)
    assert "Reading the 2026-10 files…" in step("intake").messages("2026-10", {})


def test_no_text_names_a_step_by_its_number() -> None:
    numbered = re.compile(r"(?i:\bsteps? [0-9]|eight steps|\b8 steps)|STEPS\[")
    counted = re.compile(r"eight steps|\b8 steps|flux \(step")  # README's other lists are numbered
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path, pattern in [
            *((p, numbered) for p in (ROOT / "bot").rglob("*.py")),
            (ROOT / "README.md", counted),
        ]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if pattern.search(line)
    ]
    assert found == []


def test_a_check_registered_on_a_step_by_its_id_runs_after_the_steps_own() -> None:
    """A kind family's module cannot import the step that imports it; `check_on(step id)` lets
    a new kind bring its check in its own module, and the step runs it."""
    from bot.close.registry import CHECKS_ON, check_on, name_of

    step_ = steps(("a-test-step", None, None))["a-test-step"]
    object.__setattr__(step_, "checks", [lambda close: iter([("own", close)])])
    try:
        check_on("a-test-step")(lambda close: iter([("late", close)]))
        assert step_.findings("the close") == [("own", "the close"), ("late", "the close")]
        assert name_of("jibs") == "JIB reconciliation & LOE accrual"
    finally:
        CHECKS_ON.pop("a-test-step", None)

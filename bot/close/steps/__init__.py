"""The close's checks, one module per step; CHECKS maps a step to the check that finds its
exceptions (steps 4, 6 and 7 compute more than findings and are called by their tools)."""

from collections.abc import Callable, Iterator

from bot.close.checks import STEPS, Close, Finding
from bot.close.steps import intake, interests, jibs, revenue

CHECKS: dict[str, Callable[[Close], Iterator[Finding]]] = {
    STEPS[0]: intake.intake,
    STEPS[1]: interests.interests,
    STEPS[2]: jibs.jib_recon,
    STEPS[4]: revenue.severance,
}

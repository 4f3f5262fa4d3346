"""The close's checks, one module per step. Each check registers itself with its step in
`bot/close/registry.py` (`@INTAKE.check`); importing this package registers them all.
Steps 4, 6 and 7 compute more than findings (accruals, the batch, flux) and their tools
call those computations too."""

from bot.close.steps import flux, intake, interests, jibs, revenue

__all__ = ["flux", "intake", "interests", "jibs", "revenue"]

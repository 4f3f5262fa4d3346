"""closebot: a month-end close agent that asks a human when a decision is theirs."""

__version__ = "0.1.0"

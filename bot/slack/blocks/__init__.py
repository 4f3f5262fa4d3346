"""Block Kit builders, pure: plain data in, list[dict] out, every Slack limit enforced here.
bot/blocks.py is their front door."""

"""The Slack edge behind bot/handlers.py and bot/blocks.py: the Bolt app (app.py) and how it is
served (serve.py, http/), the listeners (listeners/), a run's Slack work (work/), the presenter
(presenter/), the Block Kit builders (blocks/), the Web API client and people. With the
sandbox, the only code that imports slack_bolt / slack_sdk (docs/architecture.md)."""

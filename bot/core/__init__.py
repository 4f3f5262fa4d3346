"""The platform beside the loop and the store: models (the Claude adapter), the tool registry,
the `ask_user_question` contract (questions/), who may answer and the claim (answers), the
per-run job queue (runner), settings, errors, logs, people's names and the decision log.
It imports nothing of the close, the console or Slack (docs/architecture.md)."""

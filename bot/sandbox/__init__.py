"""`closebot sandbox`: a fake Slack workspace on loopback, a Slack-like page, and the real bot."""

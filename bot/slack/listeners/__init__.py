"""The Bolt listeners, one module per surface (commands, forms, controls, options, files,
events, home, assistant); bot/handlers.py registers them in order, the catch-all last."""

"""The terminal front end: the `closebot` command (cli.py and one module per command group)
and the console presenter with the people, or defaults, who answer (presenter.py)."""

"""`python -m bot` is the `closebot` command."""

import sys

from bot.console.cli import main

sys.exit(main())

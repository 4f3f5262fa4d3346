"""`python -m bot` is the `closebot` command."""

import sys

from bot.cli import main

sys.exit(main())

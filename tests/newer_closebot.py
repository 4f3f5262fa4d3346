"""`closebot` as a newer release would be: today's code and one migration more, which adds a
column to `runs` (what made an older process answer 500 while the newer one migrated).

    python tests/newer_closebot.py serve --http --port 0
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlite_utils import Database

from bot.console.cli import main
from bot.store.migrations import migrations


@migrations()
def m999_from_a_newer_release(db: Database) -> None:
    db.table("runs").add_column("from_a_newer_release", str)


if __name__ == "__main__":
    sys.exit(main())

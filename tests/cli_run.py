"""The closebot command as a subprocess, the way a user runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from bot.core.identity import os_login

TIMEOUT = 90
LOGIN = os_login()  # who the console records: the OS login running closebot
ONE_APPROVAL = "CLOSEBOT_APPROVAL_LIMIT"
ONE = {ONE_APPROVAL: "5000000"}  # no entry of the sample is over it: one approval posts


def closebot(
    *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, **(env or {})},
    )


def run_id_of(output: str) -> str:
    m = re.search(r"run ([0-9a-f]{12})", output)
    assert m, output
    return m.group(1)

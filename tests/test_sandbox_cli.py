"""`closebot sandbox` as a person runs it: it prints the URL, serves the page, stops on Ctrl-C."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest


def _start(*args: str) -> subprocess.Popen[str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET")
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "sandbox", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_sandbox_prints_the_url_serves_the_page_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    db = tmp_path / "sandbox.db"
    proc = _start("--port", "0", "--db", str(db))
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        first = lines.get(timeout=60)
        found = re.search(r"open (http://127\.0\.0\.1:\d+/) in your browser", first)
        assert found, first
        url = found.group(1)
        with urllib.request.urlopen(url, timeout=10) as response:
            html = response.read().decode()
        assert "closebot sandbox" in html
        token = re.search(r'<meta name="sandbox-token" content="([^"]+)">', html)
        assert token, "the page carries no write token"
        request = urllib.request.Request(
            f"{url}sandbox/say",
            data=json.dumps({"user": "UALICE", "channel": "CFINANCE", "text": "/close"}).encode(),
            headers={"Content-Type": "application/json", "X-Sandbox-Token": token.group(1)},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read())["ok"]  # no period: the latest one with data
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
            pytest.fail("closebot sandbox was still running 60 s after Ctrl-C")
        reader.join(timeout=10)
        err = proc.stderr.read() if proc.stderr else ""
    rest = "".join(lines.get_nowait() for _ in range(lines.qsize()))
    assert proc.returncode == 0, err
    assert "closebot sandbox: stopped." in rest and "Traceback" not in err
    assert "offline playbook" in "".join([first, rest]) and str(db) in first + rest


def test_a_port_in_use_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _start("--port", str(port), "--db", str(tmp_path / "s.db"))
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(f"closebot: error: cannot listen on 127.0.0.1:{port}:")
    )
    assert "--port 0" in err and "Traceback" not in err

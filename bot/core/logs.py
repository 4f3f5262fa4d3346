"""Logging for the long-running bot: timestamps in UTC, plain lines or one JSON object a line."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

PLAIN = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class UtcFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        return f"{moment}.{int(record.msecs):03d}Z"


class JsonFormatter(UtcFormatter):
    """One JSON object per line: time, level, logger, message (and the traceback, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure(level: str = "INFO", *, json_lines: bool = False) -> None:
    """Replace the root handlers: stderr, UTC timestamps, plain or JSON."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if json_lines else UtcFormatter(PLAIN))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("slack_bolt", "slack_sdk", "urllib3", "httpx", "anthropic", "waitress"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))

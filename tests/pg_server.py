"""A real PostgreSQL server for the tests: Debian's `postgresql` package (initdb, pg_ctl),
on a temporary data directory, listening on 127.0.0.1 at a free port and on a unix socket in
that directory. initdb and postgres refuse to run as root: as root they run as the
`postgres` user (runuser), the directory handed to it."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg


def pg_bin() -> Path | None:
    """The newest PostgreSQL's bin directory, or None when the package is not installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _version(path: str) -> int:
    try:
        return int(Path(path).parent.parent.name)
    except ValueError:
        return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """A running server: `url(dbname)` connects to one of its databases."""

    root: Path
    port: int
    bin: Path
    user: str

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'create database "{name}" template template0')
        return self.url(name)

    def stop(self) -> None:
        self._as_owner(
            [str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "stop"]
        )
        shutil.rmtree(self.root, ignore_errors=True)

    def _as_owner(self, cmd: list[str]) -> subprocess.CompletedProcess[str]:
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)


def start() -> PgServer:
    """initdb on a temporary directory, then start the server; raises RuntimeError saying why
    it could not."""
    bin_dir = pg_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="closebot-pg-"))
    user = "closebot"
    server = PgServer(root=root, port=_free_port(), bin=bin_dir, user=user)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    made = server._as_owner(
        [
            str(bin_dir / "initdb"),
            "-D",
            str(root / "data"),
            "-U",
            user,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        ]
    )
    if made.returncode:
        raise RuntimeError(f"initdb failed: {made.stderr or made.stdout}")
    options = (
        f"-c listen_addresses=127.0.0.1 -c port={server.port} -c unix_socket_directories={root} "
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 "
        "-c shared_buffers=32MB"
    )
    started = server._as_owner(
        [
            str(bin_dir / "pg_ctl"),
            "-D",
            str(root / "data"),
            "-l",
            str(root / "log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        ]
    )
    if started.returncode:
        log = (root / "log").read_text() if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"postgres did not start: {started.stderr or started.stdout}\n{log}")
    return server

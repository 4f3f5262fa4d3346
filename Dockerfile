# closebot for one team: `closebot serve` in Socket Mode (no public URL), the database and
# its audit key on the /data volume, run as a non-root user. README: "Install in your
# workspace". tests/test_deploy.py runs this file's own install and start commands in a
# clean virtual environment against the fake Slack, and hadolint checks it (`make lint`).
#
# The base image is pinned to Python 3.11 (the version closebot is tested on); pin its
# digest too for byte-identical rebuilds:
#   docker pull python:3.11-slim
#   docker inspect --format '{{index .RepoDigests 0}}' python:3.11-slim
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    CLOSEBOT_MANIFEST=/src/manifest.yml \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/closebot/bin:$PATH \
    CLOSEBOT_DB=/data/closebot.db

# The user closebot runs as, and the folder its volume mounts on: the SQLite file, its
# -wal/-shm files and the audit key made beside it on the first start (closebot.db.auditkey).
RUN groupadd --system --gid 10001 closebot \
    && useradd --system --uid 10001 --gid closebot --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin closebot \
    && mkdir -p /data \
    && chown closebot:closebot /data

WORKDIR /src
COPY pyproject.toml README.md manifest.yml ./
COPY bot ./bot
RUN python -m venv /opt/closebot \
    && /opt/closebot/bin/pip install --no-cache-dir /src

USER 10001:10001
WORKDIR /data
VOLUME ["/data"]

# Healthy while Slack accepts the bot token and the database answers (two cheap calls;
# `closebot doctor --slack` is the full check of the installed app, run by hand).
HEALTHCHECK --interval=60s --timeout=20s --start-period=30s --retries=3 \
    CMD ["closebot", "doctor", "--slack", "--health"]

CMD ["closebot", "serve"]

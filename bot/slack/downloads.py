"""A dropped file's bytes, fetched from Slack only: the bot token goes to Slack's file host and
nowhere else.

Slack's file object carries `url_private(_download)`, read with the bot token — but for a
remote file "the URL can point to any host. Don't send Slack tokens or cookies to it"
(https://docs.slack.dev/reference/objects/file-object, "url_private"; api.slack.com/types/file
"Authentication"). So a download goes only to Slack's file host (https://files.slack.com) or to
the configured API host (the sandbox and the tests; plain http only when that host is
loopback), no other scheme (file://, ftp://) and no other host or port (a metadata-style
http://169.254.169.254/ or another loopback port). Redirects are followed by hand: within the
same origin with the token; to another origin never with it, and only to one that is allowed;
Slack's redirect of an unreadable file to its workspace sign-in page (another *.slack.com host)
is that answer, not followed. Each download has a size and a time budget, counted as it reads:
a server that drips one byte a second is cut off when the time is up.
"""

from __future__ import annotations

import http.client
import ipaddress
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

SLACK_FILE_HOST = "files.slack.com"
MAX_REDIRECTS = 5
CHUNK = 65_536


class DownloadRefused(OSError):
    """A download closebot will not make (a host, scheme or redirect off Slack's)."""


class DownloadTooBig(OSError):
    """Over the size budget."""


class DownloadTooSlow(OSError):
    """Over the time budget."""


class SignInPage(Exception):
    """A download answered with Slack's sign-in page (HTML), not the file: Slack redirects a
    request whose token cannot read the file there instead of refusing it (401/403)."""


def is_sign_in_page(content_type: str, data: bytes) -> bool:
    """HTML where a data file was asked for: by its Content-Type, or its first bytes."""
    head = data[:512].lstrip().lower()
    return content_type.lower().startswith("text/html") or head.startswith(
        (b"<!doctype html", b"<html")
    )


class SignInRedirect(OSError):
    """Slack sent the download to a workspace's sign-in page: the token cannot read the file."""


Origin = tuple[str, str, int]  # scheme, host, port


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origin_of(url: str) -> Origin | None:
    """(scheme, host, port) of an http(s) URL, else None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in ("http", "https") or not host:
        return None
    return scheme, host, port or (443 if scheme == "https" else 80)


def allowed_origins(api_url: str) -> frozenset[Origin]:
    """Slack's file host over https, and the configured API host (https, or http on loopback)."""
    allowed: set[Origin] = {("https", SLACK_FILE_HOST, 443)}
    api = origin_of(api_url)
    if api is not None and (api[0] == "https" or _loopback(api[1])):
        allowed.add(api)
    return frozenset(allowed)


@dataclass(frozen=True)
class Fetched:
    data: bytes
    content_type: str


@dataclass(frozen=True)
class SlackDownloads:
    """Downloads with the bot token from the allowed origins, within the budgets."""

    token: str
    allowed: frozenset[Origin]
    max_bytes: int = 20_000_000
    seconds: float = 60.0

    def fetch(self, url: str) -> Fetched:
        deadline = time.monotonic() + self.seconds
        first = self._check(url)
        for _ in range(MAX_REDIRECTS + 1):
            here = origin_of(url)
            assert here is not None
            # the token only ever to the origin Slack's files.info named, and only if allowed
            token = self.token if here == first else None
            status, location, fetched = self._get(url, here, token, deadline)
            if fetched is not None:
                return fetched
            if status not in (301, 302, 303, 307, 308) or not location:
                raise OSError(f"HTTP {status}")
            target = urljoin(url, location)
            there = origin_of(target)
            if there is not None and there not in self.allowed and _slack_sign_in(there):
                raise SignInRedirect(target)
            self._check(target)
            url = target
        raise DownloadRefused("too many redirects")

    def _check(self, url: str) -> Origin:
        origin = origin_of(url)
        if origin is None or origin not in self.allowed:
            shown = urlsplit(url).scheme + "://" + (urlsplit(url).netloc or "") if url else "''"
            raise DownloadRefused(f"not Slack's file host ({shown})")
        return origin

    def _get(
        self, url: str, origin: Origin, token: str | None, deadline: float
    ) -> tuple[int, str, Fetched | None]:
        scheme, host, port = origin
        left = deadline - time.monotonic()
        if left <= 0:
            raise DownloadTooSlow(f"not done within {self.seconds:g} s")
        connection: http.client.HTTPConnection = (
            http.client.HTTPSConnection(
                host, port, timeout=left, context=ssl.create_default_context()
            )
            if scheme == "https"
            else http.client.HTTPConnection(host, port, timeout=left)
        )
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            if response.status in (301, 302, 303, 307, 308):
                return response.status, str(response.getheader("Location") or ""), None
            if response.status != 200:
                return response.status, "", None
            declared = response.getheader("Content-Length")
            if declared and declared.isdigit() and int(declared) > self.max_bytes:
                raise DownloadTooBig(f"over {self.max_bytes // 1_000_000} MB")
            chunks: list[bytes] = []
            got = 0
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DownloadTooSlow(f"not done within {self.seconds:g} s")
                if connection.sock is not None:
                    connection.sock.settimeout(left)
                chunk = response.read1(CHUNK)
                if not chunk:
                    break
                got += len(chunk)
                if got > self.max_bytes:
                    raise DownloadTooBig(f"over {self.max_bytes // 1_000_000} MB")
                chunks.append(chunk)
            return 200, "", Fetched(b"".join(chunks), str(response.getheader("Content-Type") or ""))
        except TimeoutError as e:
            raise DownloadTooSlow(f"not done within {self.seconds:g} s") from e
        finally:
            connection.close()


def _slack_sign_in(origin: Origin) -> bool:
    """A workspace's own https host (acme.slack.com), where Slack sends a download it refuses."""
    scheme, host, _ = origin
    return scheme == "https" and host.endswith(".slack.com")

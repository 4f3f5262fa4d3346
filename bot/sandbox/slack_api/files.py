"""Files: the bot's uploads (files.getUploadURLExternal, the upload, files.completeUploadExternal),
files.info, a person's file dropped into a conversation, and its download (url_private), which
answers Slack's sign-in page for a file the token cannot read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from bot.sandbox.slack_api.workspace import BOT_ID, BOT_USER, SlackError, Workspace


class FileMethods(Workspace):
    """Uploading, sharing and describing files."""

    def m_files_getUploadURLExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        name = p.get("filename")
        if not name:
            raise SlackError("invalid_arguments")
        file_id = f"{self.file_prefix}{self._next():08d}"
        self.files[file_id] = {
            "id": file_id,
            "name": name,
            "title": name,
            "length": p.get("length"),
        }
        return {"upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}

    def m_files_completeUploadExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        listed = p.get("files")
        if not isinstance(listed, list) or not listed:
            raise SlackError("invalid_arguments")
        shared = []
        for item in listed:
            file_id = str((item or {}).get("id"))
            if file_id not in self.files or file_id not in self.uploads:
                raise SlackError("file_not_found")
            f = self.files[file_id]
            f["title"] = item.get("title") or f["name"]
            f["url_private_download"] = f"{self.url}/files/{file_id}/{f['name']}"
            f["size"] = len(self.uploads[file_id])
            shared.append({k: v for k, v in f.items() if k != "length"})
        if p.get("channel_id"):
            channel = self._bot_channel(p["channel_id"])
            self.add_message(
                channel.id,
                text=p.get("initial_comment") or "",
                thread_ts=self._thread_root(channel.id, p.get("thread_ts")),
                user=BOT_USER,
                bot_id=BOT_ID,
                files=shared,
            )
        return {"files": shared}

    def upload(self, file_id: str, data: bytes) -> bool:
        with self._changed:
            if file_id not in self.files:
                return False
            self.uploads[file_id] = data
            self._bump()
            return True

    def file_bytes(self, file_id: str) -> tuple[bytes, dict[str, Any]] | None:
        """A file's content and record, as the page (a person's own client) downloads it."""
        with self._changed:
            data, f = self.uploads.get(file_id), self.files.get(file_id)
        return None if data is None or f is None else (data, f)

    def share_file(
        self,
        *,
        user: str,
        channel: str,
        thread_ts: str | None,
        name: str,
        data: bytes,
        text: str = "",
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A person drops a file into a conversation (a thread, when `thread_ts`): the file,
        and its `file_share` message, as Slack keeps them."""
        with self._changed:
            return self._share_file(user, channel, thread_ts, name, data, text)

    def _share_file(
        self, user: str, channel: str, thread_ts: str | None, name: str, data: bytes, text: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        file_id = f"{self.file_prefix}{self._next():08d}"
        thread = self._thread_root(channel, thread_ts)
        ts = self._ts()
        share = {"ts": ts, **({"thread_ts": thread} if thread else {})}
        f = {
            "id": file_id,
            "name": name,
            "title": name,
            "user": user,
            "created": int(self._clock()),
            "filetype": name.rsplit(".", 1)[-1].lower() if "." in name else "",
            "mimetype": "text/csv"
            if name.lower().endswith(".csv")
            else "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
            if name.lower().endswith(".xlsx")
            else "application/octet-stream",
            "size": len(data),
            "url_private": f"{self.url}/files/{file_id}/{quote(name)}",
            "url_private_download": f"{self.url}/files/{file_id}/download/{quote(name)}",
            "shares": {"public" if channel[:1] == "C" else "private": {channel: [share]}},
        }
        self.files[file_id] = f
        self.uploads[file_id] = data
        message = {
            "type": "message",
            "ts": ts,
            "channel": channel,
            "thread_ts": thread,
            "text": text,
            "blocks": [],
            "reactions": [],
            "files": [f],
            "user": user,
            "subtype": "file_share",
            "upload": True,
        }
        self.messages[ts] = message
        self._bump()
        return message, f

    def hide_file(self, file_id: str) -> None:
        """The bot's token can no longer read this file (its download answers the sign-in page)."""
        with self._changed:
            self.unreadable_files.add(file_id)

    def drip_file(self, file_id: str, every: float) -> None:
        """A slow download: the file is served one byte every `every` seconds (a server
        dripping its answer), until drips_stopped is set."""
        with self._changed:
            self.dripping_files[file_id] = every

    def drip(self, path: str, data: bytes) -> Iterator[bytes] | None:
        """The download's bytes as a drip, if its file drips."""
        file_id = path.split("/")[2] if path.count("/") >= 2 else ""
        every = self.dripping_files.get(file_id)
        if every is None:
            return None

        def bytes_slowly() -> Iterator[bytes]:
            for n in range(len(data)):
                if self.drips_stopped.wait(every):
                    return
                yield data[n : n + 1]

        return bytes_slowly()

    def download(self, path: str, *, authed: bool) -> tuple[int, bytes, dict[str, str]]:
        """GET url_private(_download) (`authed`: with a valid token): the file, for a token
        that can read it. Otherwise Slack does not answer 401/403: it redirects ("Found", to
        the workspace's `/?redir=…`) to its sign-in page, HTML served 200
        (slackapi/deno-slack-sdk #285, slackapi/bolt-js #2585, api.slack.com/types/file#auth;
        SLACK.md "Files")."""
        file_id = path.split("/")[2] if path.count("/") >= 2 else ""
        found = self.file_bytes(file_id)
        if not authed or file_id in self.unreadable_files:
            return 302, b"", {"Location": f"{self.url}/signin?redir={quote(path)}"}
        if found is None:
            return 404, b"file_not_found", {"Content-Type": "text/plain"}
        data, f = found
        return (
            200,
            data,
            {
                "Content-Type": "text/csv; charset=utf-8"
                if f["name"].endswith(".csv")
                else "application/octet-stream",
                "Content-Disposition": f'attachment; filename="{f["name"]}"',
            },
        )

    def m_files_info(self, p: dict[str, Any]) -> dict[str, Any]:
        f = self.files.get(str(p.get("file") or ""))
        if f is None or f["id"] not in self.uploads:
            raise SlackError("file_not_found")
        return {"file": {k: v for k, v in f.items() if k != "length"}}


SIGN_IN_PAGE = (
    b'<!DOCTYPE html><html lang="en-US"><head><title>Slack</title></head><body>'
    b'<h1>Sign in to Sandbox</h1><form action="/signin" method="post">'
    b'<input type="email" name="email"></form></body></html>'
)

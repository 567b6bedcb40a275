"""File operations for the agent's tools: real file transfers (Docker archives), never shell text.

Contents travel as tar archives through the Docker API, so quotes, newlines and binary data in a
file or its name need no escaping. Sizes are capped; a read beyond the cap says how to read less.
"""

from __future__ import annotations

import io
import posixpath
import shlex
import tarfile
import time
from dataclasses import dataclass

from docker.errors import NotFound

from terminal_rl.sandbox.runtime.docker_client import AsyncDocker
from terminal_rl.sandbox.runtime.shell import ShellSession


class FileToolError(ValueError):
    """A file operation the agent asked for cannot be done; the message tells it why."""


@dataclass(frozen=True)
class FileStat:
    path: str
    kind: str  # "file" | "directory" | "symlink" | "other"
    size: int
    mode: int
    mtime: float


class ContainerFiles:
    def __init__(self, docker: AsyncDocker, container_id: str, control: ShellSession, max_bytes: int, workdir: str):
        self._docker = docker
        self._container_id = container_id
        self._control = control
        self._max_bytes = max_bytes
        self._workdir = workdir

    def resolve(self, path: str) -> str:
        """Absolute container path; relative paths are relative to the image's working directory."""
        if not path:
            raise FileToolError("path is empty")
        return posixpath.normpath(posixpath.join(self._workdir, path))

    async def read_bytes(self, path: str) -> bytes:
        path = self.resolve(path)
        info = await self.stat(path)
        if info.kind == "directory":
            raise FileToolError(f"{path} is a directory; list it instead")
        if info.size > self._max_bytes:
            raise FileToolError(
                f"{path} is {info.size} bytes, more than the {self._max_bytes}-byte limit; "
                "read part of it with bash (head, tail, sed -n 'A,Bp')"
            )
        try:
            stream, _ = await self._docker.call(self._docker.api.get_archive, self._container_id, path)
        except NotFound:
            raise FileToolError(f"{path} does not exist") from None
        data = await self._docker.call(lambda: b"".join(stream))
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            member = archive.next()
            if member is not None and member.issym():
                raise FileToolError(f"{path} is a symlink to {member.linkname}; read the target")
            extracted = archive.extractfile(member) if member is not None else None
            if extracted is None:
                raise FileToolError(f"{path} is not a regular file")
            return extracted.read()

    async def read_bytes_or_none(self, path: str) -> bytes | None:
        """The file's bytes, or None when it is not a regular file any more (gone, a directory, a
        symlink, over the size limit)."""
        try:
            return await self.read_bytes(path)
        except FileToolError:
            return None

    async def read_text(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Lines ``start_line``..``end_line`` (1-based, inclusive) of a text file, or all of it."""
        text = (await self.read_bytes(path)).decode("utf-8", errors="replace")
        if start_line is None and end_line is None:
            return text
        lines = text.splitlines(keepends=True)
        start = max(1, start_line or 1)
        end = len(lines) if end_line is None else end_line
        if start > max(len(lines), 1) or end < start:
            raise FileToolError(f"lines {start}-{end} are outside {self.resolve(path)} ({len(lines)} lines)")
        return "".join(lines[start - 1 : end])

    async def write_bytes(self, path: str, data: bytes, mode: int = 0o644) -> None:
        if len(data) > self._max_bytes:
            raise FileToolError(f"content is {len(data)} bytes, more than the {self._max_bytes}-byte limit")
        path = self.resolve(path)
        parent, name = posixpath.split(path)
        result = await self._control.run(f"mkdir -p -- {shlex.quote(parent)}", timeout=30, inline=True)
        if result.exit_code != 0:
            raise FileToolError(f"cannot create {parent}: {result.output.strip()}")
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            archive.addfile(info, io.BytesIO(data))
        ok = await self._docker.call(self._docker.api.put_archive, self._container_id, parent, buffer.getvalue())
        if not ok:
            raise FileToolError(f"could not write {path}")

    async def write_text(self, path: str, text: str) -> None:
        await self.write_bytes(path, text.encode())

    async def edit(self, path: str, old: str, new: str, replace_all: bool = False) -> int:
        """Replace ``old`` by ``new``; exactly one occurrence unless ``replace_all``. Returns the count."""
        text = await self.read_text(path)
        count = text.count(old)
        if not old:
            raise FileToolError("old text is empty")
        if count == 0:
            raise FileToolError(f"old text not found in {self.resolve(path)}")
        if count > 1 and not replace_all:
            raise FileToolError(
                f"old text occurs {count} times in {self.resolve(path)}; "
                "give more context to make it unique, or replace all"
            )
        await self.write_text(path, text.replace(old, new))
        return count

    async def stat(self, path: str) -> FileStat:
        path = self.resolve(path)
        result = await self._control.run(f"stat -c '%F|%s|%a|%Y' -- {shlex.quote(path)}", timeout=30, inline=True)
        if result.exit_code != 0:
            raise FileToolError(f"{path} does not exist")
        kind, size, mode, mtime = result.output.strip().rsplit("|", 3)
        kinds = {
            "regular file": "file",
            "regular empty file": "file",
            "directory": "directory",
            "symbolic link": "symlink",
        }
        return FileStat(path, kinds.get(kind, "other"), int(size), int(mode, 8), float(mtime))

    async def list_dir(self, path: str = ".", limit: int = 1000) -> list[FileStat]:
        path = self.resolve(path)
        command = f"find {shlex.quote(path)} -mindepth 1 -maxdepth 1 -printf '%y|%s|%m|%T@|%f\\n' | head -n {limit}"
        result = await self._control.run(command, timeout=30, inline=True)
        if result.exit_code != 0 or "No such file" in result.output:
            raise FileToolError(f"cannot list {path}: {result.output.strip()}")
        kinds = {"f": "file", "d": "directory", "l": "symlink"}
        entries = []
        for record in result.output.splitlines():
            if record.count("|") >= 4:
                kind, size, mode, mtime, name = record.split("|", 4)
                entries.append(
                    FileStat(
                        posixpath.join(path, name), kinds.get(kind, "other"), int(size), int(mode, 8), float(mtime)
                    )
                )
        return sorted(entries, key=lambda e: e.path)

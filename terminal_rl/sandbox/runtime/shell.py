"""A persistent bash inside a container, driven over one ``docker exec`` attach socket.

One exec per command costs ~95 ms; writing to a shell that is already running costs a few ms.

Agent commands run each in a subshell of the session shell (its own process group, stdin
``/dev/null``, stderr merged into stdout), so a timeout can kill the command and all its children
without killing the session. The working directory and exported variables are carried from one
command to the next through a state file, like a terminal; unexported shell variables, functions and
aliases are not (a subshell's cannot be). Background processes a command leaves running (services)
keep running. ``inline`` commands (our own, trusted: ``kill``, ``tmux``, ``stat``) run in the
session shell itself.

Protocol: the command is sent as a quoted heredoc, so no quoting of the agent's text is ever needed.
The shell answers with marker lines ``<MARK>P<seq> <pid>`` (job started) and ``<MARK>R<seq> <rc>``
(job done); the marker is random per session. After a timeout's kill, a last marker under the next
seq is read too: the killer returns once the job's process group is gone, and output a killed child
wrote after the done marker still belongs to the killed command.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from terminal_rl.sandbox.runtime.docker_client import AsyncDocker
from terminal_rl.sandbox.runtime.output import OutputCapture

# Where the session keeps its working directory and environment between commands (one per session).
STATE_DIR_PREFIX = "/tmp/.trl-shell-"

_BOOTSTRAP = r"""
exec 2>/dev/null
set -m +H
__trl_d=$(mktemp -d /tmp/.trl-shell-XXXXXXXX) || __trl_d=/tmp
__trl_save() { builtin pwd > "$__trl_d/cwd"; builtin export -p > "$__trl_d/env"; }
__trl_save
__trl_run() {
  local __trl_cmd
  IFS= read -r -d '' __trl_cmd
  ( trap __trl_save EXIT; eval "$__trl_cmd" ) </dev/null 2>&1 &
  __trl_pid=$!
  printf '%sP%s %s\n' "$__trl_mark" "$1" "$__trl_pid"
  wait "$__trl_pid"; __trl_rc=$?
  IFS= read -r __trl_cwd < "$__trl_d/cwd" && builtin cd -- "$__trl_cwd"
}
__trl_inline() {
  local __trl_cmd
  IFS= read -r -d '' __trl_cmd
  eval "$__trl_cmd" </dev/null 2>&1
  __trl_rc=$?
}
"""
# Sourced at top level, not in a function: `declare -x` inside a function would make locals.
_LOAD_ENV = '. "$__trl_d/env"'
_KILL_GRACE_SEC = 10.0


class SessionBroken(RuntimeError):
    """The shell stopped answering: an infrastructure failure, not the agent's."""


@dataclass(frozen=True)
class CommandResult:
    """What one command did. ``output`` is stdout and stderr merged, capped and sanitised."""

    output: str
    exit_code: int | None
    duration_sec: float
    timed_out: bool = False
    # Bytes the command wrote in all (the output may show fewer).
    output_bytes: int = 0


class ShellSession:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        head_bytes: int,
        tail_bytes: int,
        killer: Callable[[int], Awaitable[None]] | None,
    ):
        """``killer(pgid)`` kills a timed-out command's process group and returns once it is gone (or
        raises ``SessionBroken``); None: a timeout breaks the session."""
        self._reader = reader
        self._writer = writer
        self._head_bytes = head_bytes
        self._tail_bytes = tail_bytes
        self._killer = killer
        self._mark = f"__TRL{secrets.token_hex(8)}"
        self._eof = f"__TRL_EOF_{secrets.token_hex(8)}"
        self._marker = re.compile(re.escape(self._mark).encode() + rb"([PR])(\d+) (-?\d+)\n")
        self._pending = bytearray()
        self._frame_left = 0
        self._seq = 0
        self._lock = asyncio.Lock()

    @classmethod
    async def open(
        cls,
        docker: AsyncDocker,
        container_id: str,
        *,
        head_bytes: int,
        tail_bytes: int,
        killer: Callable[[int], Awaitable[None]] | None = None,
    ) -> ShellSession:
        """Start ``bash`` in the container and attach to its stdin/stdout/stderr."""
        exec_id = await docker.call(
            docker.api.exec_create,
            container_id,
            ["bash", "--noprofile", "--norc"],
            stdin=True,
            stdout=True,
            stderr=True,
            tty=False,
        )
        sock = await docker.call(docker.api.exec_start, exec_id, socket=True)
        raw = getattr(sock, "_sock", sock)
        reader, writer = await asyncio.open_connection(sock=raw)
        session = cls(reader, writer, head_bytes=head_bytes, tail_bytes=tail_bytes, killer=killer)
        session._writer.write(f"__trl_mark={session._mark}\n{_BOOTSTRAP}\n".encode())
        await session.run("true", timeout=60, inline=True)
        return session

    async def run(self, command: str, timeout: float, *, inline: bool = False) -> CommandResult:
        """Run ``command``; on timeout kill it (and its children) and return what it printed."""
        if "\0" in command:
            raise ValueError("command contains a NUL byte")
        if self._eof in command.splitlines():
            raise ValueError("command contains the session's heredoc delimiter")
        async with self._lock:
            self._seq += 1
            seq = self._seq
            function, load = ("__trl_inline", "") if inline else ("__trl_run", _LOAD_ENV + "; ")
            started = time.monotonic()
            self._writer.write(
                f"{function} {seq} <<'{self._eof}'\n{command}\n{self._eof}\n"
                f'{load}printf \'%sR%s %s\\n\' "$__trl_mark" {seq} "$__trl_rc"\n'.encode()
            )
            capture = OutputCapture(self._head_bytes, self._tail_bytes)
            state: dict[str, int] = {}
            timed_out = False
            try:
                await asyncio.wait_for(self._read_until_done(seq, capture, state), timeout)
            except TimeoutError:
                timed_out = True
                if inline or self._killer is None:
                    raise SessionBroken(f"inline command timed out after {timeout}s: {command[:80]!r}") from None
                await self._kill(seq, capture, state)
            except (ConnectionError, asyncio.IncompleteReadError) as error:
                raise SessionBroken(f"shell session closed: {error}") from error
            output = capture.text()
            if timed_out:
                output += f"\n[command timed out after {timeout:g}s and was killed]"
            return CommandResult(
                output=output,
                exit_code=state.get("R"),
                duration_sec=time.monotonic() - started,
                timed_out=timed_out,
                output_bytes=capture.total_bytes,
            )

    async def close(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    async def _kill(self, seq: int, capture: OutputCapture, state: dict[str, int]) -> None:
        """Kill the command's process group, then read to a fresh marker: the shell can reap the
        job and print its done marker while a killed child's last write is still landing, so
        output after the done marker still belongs to this command, not the next one."""
        try:
            async with asyncio.timeout(_KILL_GRACE_SEC):
                while "P" not in state:
                    await self._read_chunk(seq, capture, state)
                await self._killer(state["P"])
                await self._read_until_done(seq, capture, state)
                self._seq += 1
                self._writer.write(f"printf '%sR%s 0\\n' \"$__trl_mark\" {self._seq}\n".encode())
                await self._read_until_done(self._seq, capture, {})
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError) as error:
            raise SessionBroken(f"shell did not recover after killing a timed-out command: {error!r}") from error

    async def _read_until_done(self, seq: int, capture: OutputCapture, state: dict[str, int]) -> None:
        while "R" not in state:
            await self._read_chunk(seq, capture, state)

    async def _read_chunk(self, seq: int, capture: OutputCapture, state: dict[str, int]) -> None:
        """Read one piece of the multiplexed exec stream, routing output and marker lines."""
        if not self._frame_left:
            header = await self._reader.readexactly(8)
            self._frame_left = int.from_bytes(header[4:8], "big")
            if not self._frame_left:
                return
        data = await self._reader.read(min(self._frame_left, 1 << 16))
        if not data:
            raise asyncio.IncompleteReadError(b"", self._frame_left)
        self._frame_left -= len(data)
        self._pending += data
        self._route(seq, capture, state)

    def _route(self, seq: int, capture: OutputCapture, state: dict[str, int]) -> None:
        pending = self._pending
        while True:
            match = self._marker.search(pending)
            if match is None:
                start = pending.find(self._mark[:1].encode(), max(0, len(pending) - len(self._mark) - 24))
                keep = len(pending) - start if start >= 0 else 0
                capture.write(bytes(pending[: len(pending) - keep]))
                del pending[: len(pending) - keep]
                return
            capture.write(bytes(pending[: match.start()]))
            kind, marker_seq, value = match.group(1).decode(), int(match.group(2)), int(match.group(3))
            del pending[: match.end()]
            if marker_seq == seq:
                state[kind] = value
                if kind == "R":
                    return

"""The shell session's marker protocol over a scripted exec stream (no container, milliseconds).

The stream is framed as Docker's attach API frames a non-TTY exec: an 8-byte header
(stream type, three zero bytes, big-endian payload length) before each payload.
"""

import asyncio
import re

from terminal_rl.sandbox.runtime.shell import ShellSession


def frame(payload: bytes) -> bytes:
    return bytes([1, 0, 0, 0]) + len(payload).to_bytes(4, "big") + payload


class ScriptedShell:
    """Stands in for bash: answers each write the session sends with the next scripted reply."""

    def __init__(self, reader: asyncio.StreamReader, replies: list[bytes]):
        self.reader = reader
        self.replies = replies
        self.sent: list[str] = []

    def write(self, data: bytes) -> None:
        self.sent.append(data.decode())
        self.reader.feed_data(frame(self.replies.pop(0)))


def test_output_a_killed_command_writes_after_its_done_marker_stays_with_it():
    """The kernel can let bash reap a killed job and print its done marker before a killed child's
    last write lands (seen on podman: 8,192 bytes of `yes` at the head of the next command)."""

    async def scenario():
        reader = asyncio.StreamReader()
        mark = {}

        def marker(kind: str, seq: int, value: int) -> bytes:
            return f"{mark['m']}{kind}{seq} {value}\n".encode()

        async def killer(pgid: int) -> None:
            assert pgid == 42
            reader.feed_data(frame(b"y\n" * 5 + marker("R", 1, 137)))
            reader.feed_data(frame(b"y\n" * 3))  # a killed child's last write, after the done marker

        shell = ScriptedShell(reader, [])
        session = ShellSession(reader, shell, head_bytes=1000, tail_bytes=1000, killer=killer)
        mark["m"] = session._mark
        shell.replies += [
            marker("P", 1, 42) + b"y\n" * 10,
            marker("R", 2, 0),
            marker("P", 3, 43) + b"ok\n" + marker("R", 3, 0),
        ]
        killed = await session.run("yes", timeout=0.05)
        after = await session.run("echo ok", timeout=5)
        return killed, after, shell.sent

    killed, after, sent = asyncio.run(scenario())
    assert killed.timed_out and killed.exit_code == 137
    assert killed.output_bytes == 2 * (10 + 5 + 3)
    assert (after.exit_code, after.output, after.output_bytes) == (0, "ok\n", 3)
    assert re.fullmatch(r"printf '%sR%s 0\\n' \"\$__trl_mark\" 2\n", sent[1])

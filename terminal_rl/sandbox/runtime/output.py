"""Command output kept within bounds and made safe to show a model (pure, no I/O)."""

from __future__ import annotations

import re

_ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class OutputCapture:
    """Keeps the first ``head_bytes`` and the last ``tail_bytes`` of a stream of any length.

    Memory stays O(head + tail) however much is written (a `yes` runs until its timeout).
    """

    def __init__(self, head_bytes: int, tail_bytes: int):
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.head = bytearray()
        self.tail = bytearray()
        self.total_bytes = 0

    def write(self, data: bytes) -> None:
        self.total_bytes += len(data)
        room = self.head_bytes - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.tail_bytes:
                del self.tail[: len(self.tail) - self.tail_bytes]

    @property
    def elided_bytes(self) -> int:
        return max(0, self.total_bytes - len(self.head) - min(len(self.tail), self.tail_bytes))

    def text(self) -> str:
        """Head, an elision marker naming how much was dropped, tail; sanitised."""
        tail = bytes(self.tail[-self.tail_bytes :]) if self.tail_bytes else b""
        if not self.elided_bytes:
            return sanitize(bytes(self.head) + tail)
        marker = f"\n[... {self.elided_bytes} bytes of output elided ...]\n"
        return sanitize(bytes(self.head)) + marker + sanitize(tail)


def sanitize(data: bytes) -> str:
    """Terminal bytes -> printable text: ANSI escapes dropped, invalid UTF-8 and controls replaced."""
    text = _ANSI.sub(b"", data).decode("utf-8", errors="replace").replace("\r\n", "\n")
    return _CONTROL.sub("\N{REPLACEMENT CHARACTER}", text)

"""The keystroke channel for keystroke-driven agents (Terminus-2): a tmux terminal in the container.

Keys go in as tmux ``send-keys`` (control keys such as ``C-c``, ``C-d``, ``Enter`` by name, any other
text literally); the agent waits a given duration and gets the screen back, like Terminal-Bench's
harness.
"""

from __future__ import annotations

import asyncio
import re
import shlex

from terminal_rl.sandbox.runtime.output import sanitize
from terminal_rl.sandbox.runtime.shell import ShellSession

SESSION = "agent"
# tmux key names sent as keys rather than text.
_KEY_NAME = re.compile(
    r"^(?:[CM]-.|C-M-.|Enter|Escape|Tab|BSpace|Space|Up|Down|Left|Right|Home|End|"
    r"PageUp|PageDown|PPage|NPage|DC|IC|F\d{1,2})$"
)


def is_key_name(keys: str) -> bool:
    return bool(_KEY_NAME.match(keys))


class Terminal:
    def __init__(self, control: ShellSession, width: int, height: int):
        self._control = control
        self._width = width
        self._height = height
        self._started = False

    async def start(self) -> None:
        if self._started:
            return
        result = await self._control.run(
            f"tmux new-session -d -s {SESSION} -x {self._width} -y {self._height}", timeout=30, inline=True
        )
        if result.exit_code != 0:
            raise RuntimeError(f"could not start tmux in the sandbox: {result.output.strip()}")
        self._started = True

    async def send_keys(self, keys: str, wait_sec: float = 0.0) -> str:
        """Type ``keys`` (a key name such as ``C-c``, or text; ``\\n`` presses Enter), wait, return the screen."""
        await self.start()
        if is_key_name(keys):
            command = f"tmux send-keys -t {SESSION} {keys}"
        else:
            command = f"tmux send-keys -t {SESSION} -l -- {shlex.quote(keys)}"
        result = await self._control.run(command, timeout=30, inline=True)
        if result.exit_code != 0:
            raise RuntimeError(f"tmux send-keys failed: {result.output.strip()}")
        if wait_sec > 0:
            await asyncio.sleep(wait_sec)
        return await self.screen()

    async def screen(self, history_lines: int = 0) -> str:
        """The visible screen, plus up to ``history_lines`` lines scrolled off above it."""
        await self.start()
        start = f" -S -{history_lines}" if history_lines else ""
        result = await self._control.run(f"tmux capture-pane -p -J -t {SESSION}{start}", timeout=30, inline=True)
        return sanitize(result.output.encode()).rstrip("\n")

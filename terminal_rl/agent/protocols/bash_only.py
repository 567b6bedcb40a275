"""One shell command per turn plus a done signal (the Endless Terminals style)."""

from __future__ import annotations

import re

from terminal_rl.agent.actions import Action, ActionResult, ParseResult
from terminal_rl.agent.protocols.base import ActionProtocol, strip_thinking

_COMMAND = re.compile(r"<command>(.*?)</command>", re.DOTALL)
_DONE = re.compile(r"<done\s*/>")
FORMAT = "Give exactly one command as <command>...</command>, or <done/> when the task is finished."
# Commands run with the same timeout as the xml_yaml protocol's default.
COMMAND_TIMEOUT_SEC = 60


class BashOnlyProtocol(ActionProtocol):
    name = "bash_only"

    def parse(self, text: str) -> ParseResult:
        visible = strip_thinking(text)
        commands = [c.strip() for c in _COMMAND.findall(visible)]
        done = bool(_DONE.search(visible))
        if done and commands:
            return ParseResult(error=f"Both a command and <done/> found. {FORMAT}")
        if done:
            return ParseResult([Action("finish", {"message": ""})])
        if len(commands) > 1:
            return ParseResult(error=f"Found {len(commands)} commands; only one is allowed per turn. {FORMAT}")
        if not commands or not commands[0]:
            return ParseResult(error=f"No command found. {FORMAT}")
        return ParseResult([Action("bash", {"cmd": commands[0], "timeout_secs": COMMAND_TIMEOUT_SEC})])

    def render(self, results: list[ActionResult], skipped: int) -> str:
        result = results[-1]
        suffix = " (timed out)" if result.timed_out else ""
        return f"{result.output.rstrip(chr(10))}\n[exit code: {result.exit_code}{suffix}]".lstrip("\n")

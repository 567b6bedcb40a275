"""Terminus-2's JSON format (Terminal-Bench 2.0 evaluation), driven through the keystroke terminal.

The instructions live in the first user message (no system prompt), as Terminus-2 sends them, so a
model trained here sees exactly what it will be evaluated with.
"""

from __future__ import annotations

import json

from terminal_rl.agent.actions import Action, ActionResult, ParseResult
from terminal_rl.agent.protocols.base import ActionProtocol, strip_thinking

DEFAULT_DURATION_SEC = 1.0
MAX_DURATION_SEC = 60.0
_FORM = (
    'Respond with one JSON object: {"analysis": "...", "plan": "...", '
    '"commands": [{"keystrokes": "ls -la\\n", "duration": 0.1}], "task_complete": false}'
)


class TerminusJsonProtocol(ActionProtocol):
    name = "terminus_json"
    uses_terminal = True

    def initial_messages(self, instruction: str, terminal_state: str = "") -> list[dict[str, str]]:
        text = self.prompt_text().replace("{instruction}", instruction).replace("{terminal_state}", terminal_state)
        return [{"role": "user", "content": text.rstrip("\n")}]

    def parse(self, text: str) -> ParseResult:
        visible = strip_thinking(text)
        start, end = visible.find("{"), visible.rfind("}")
        if start < 0 or end < start:
            return ParseResult(error=f"No JSON object found in your response. {_FORM}")
        try:
            data = json.loads(visible[start : end + 1])
        except json.JSONDecodeError as error:
            return ParseResult(error=f"Invalid JSON: {error.msg} at line {error.lineno} column {error.colno}. {_FORM}")
        if not isinstance(data, dict):
            return ParseResult(error=f"The JSON must be an object. {_FORM}")
        missing = [k for k in ("analysis", "plan", "commands") if k not in data]
        if missing:
            return ParseResult(error=f"Missing required field(s): {', '.join(missing)}. {_FORM}")
        if not isinstance(data["commands"], list):
            return ParseResult(error=f'"commands" must be an array. {_FORM}')
        actions = []
        for number, command in enumerate(data["commands"], start=1):
            if not isinstance(command, dict) or not isinstance(command.get("keystrokes"), str):
                return ParseResult(error=f'Command {number} needs a "keystrokes" string. {_FORM}')
            duration = command.get("duration", DEFAULT_DURATION_SEC)
            if isinstance(duration, bool) or not isinstance(duration, (int, float)) or duration < 0:
                return ParseResult(error=f'Command {number}: "duration" must be a number of seconds >= 0. {_FORM}')
            actions.append(
                Action(
                    "keys", {"keystrokes": command["keystrokes"], "duration": min(float(duration), MAX_DURATION_SEC)}
                )
            )
        if data.get("task_complete") is True:
            actions.append(Action("finish", {"message": str(data.get("analysis", ""))}))
        if not actions:
            return ParseResult(error=f'No commands and "task_complete" is not true. {_FORM}')
        return ParseResult(actions)

    def render(self, results: list[ActionResult], skipped: int) -> str:
        screens = [r for r in results if r.tool == "keys"]
        screen = screens[-1].output if screens else ""
        return f"New Terminal Output:\n\n{screen}"

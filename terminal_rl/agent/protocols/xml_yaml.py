"""The reference design's format: XML tags with YAML bodies, several actions per turn."""

from __future__ import annotations

import re

import yaml

from terminal_rl.agent.actions import Action, ActionResult, ParseResult
from terminal_rl.agent.protocols.base import ActionProtocol, strip_thinking
from terminal_rl.agent.tools import TOOLS, validate_args

_BLOCK = re.compile(r"<([a-z_][a-z0-9_]*)>(.*?)</\1>", re.DOTALL)
_OPEN = re.compile(r"<([a-z_][a-z0-9_]*)>")


def _correct_form(tool: str) -> str:
    return f"Correct form:\n<{tool}>\n{TOOLS[tool].example}\n</{tool}>"


class XmlYamlProtocol(ActionProtocol):
    name = "xml_yaml"

    def parse(self, text: str) -> ParseResult:
        visible = strip_thinking(text)
        actions = []
        for match in _BLOCK.finditer(visible):
            tag, body = match.group(1), match.group(2)
            if tag not in TOOLS:
                return ParseResult(
                    error=f"Unknown action <{tag}>. Available actions: {', '.join(f'<{t}>' for t in TOOLS)}."
                )
            try:
                data = yaml.safe_load(body)
            except yaml.YAMLError as error:
                problem = str(error).splitlines()[0]
                mark = getattr(error, "problem_mark", None)
                where = f" (line {mark.line + 1} of the body)" if mark else ""
                return ParseResult(
                    error=f"The body of <{tag}> is not valid YAML: {problem}{where}. Quote strings "
                    f"that contain ': ' or '#', and use '|' for multi-line text. "
                    f"{_correct_form(tag)}"
                )
            args, problem = validate_args(tag, data)
            if problem:
                return ParseResult(error=f"Invalid <{tag}>: {problem}. {_correct_form(tag)}")
            actions.append(Action(tag, args))
        if not actions:
            unclosed = [t for t in _OPEN.findall(visible) if t in TOOLS]
            if unclosed:
                return ParseResult(
                    error=f"<{unclosed[0]}> is never closed: end it with </{unclosed[0]}>. {_correct_form(unclosed[0])}"
                )
            return ParseResult(
                error="No action found. Write at least one action as an XML tag with a YAML body, "
                "e.g.\n<bash>\ncmd: 'ls -la'\n</bash>"
            )
        return ParseResult(actions)

    def render(self, results: list[ActionResult], skipped: int) -> str:
        parts = []
        for result in results:
            status = "ok" if result.ok else "failed"
            exit_code = f' exit_code="{result.exit_code}"' if result.exit_code is not None else ""
            timed_out = ' timed_out="true"' if result.timed_out else ""
            parts.append(
                f'<{result.tool}_result status="{status}"{exit_code}{timed_out}>\n'
                f"{result.output.rstrip(chr(10))}\n</{result.tool}_result>"
            )
        if skipped:
            parts.append(
                f"<skipped>{skipped} later action(s) were not run because <{results[-1].tool}> failed.</skipped>"
            )
        return "\n".join(parts)

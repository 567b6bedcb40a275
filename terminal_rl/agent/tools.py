"""The agent's tools: their argument schemas (validated before anything runs) and their execution
through the sandbox API. File tools are real file transfers; search tools quote every argument.

Relative paths are relative to the task's working directory (the image's WORKDIR).
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from terminal_rl.agent.actions import Action, ActionResult
from terminal_rl.sandbox.runtime.files import FileToolError
from terminal_rl.sandbox.runtime.sandbox import Sandbox

MAX_COMMAND_TIMEOUT_SEC = 600
SEARCH_RESULT_LINES = 200


class ToolError(ValueError):
    """An action that cannot be carried out as given; the message tells the model why."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: type
    required: bool = True
    default: Any = None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    fields: tuple[Field, ...]
    # The correct form, shown to the model when it gets this tool wrong (YAML body).
    example: str


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "bash", (Field("cmd", str), Field("timeout_secs", int, False, 60)), "cmd: 'ls -la /app'\ntimeout_secs: 60"
        ),
        ToolSpec(
            "read_file",
            (Field("file_path", str), Field("offset", int, False, 1), Field("limit", int, False, 2000)),
            "file_path: /app/main.py\noffset: 1\nlimit: 200",
        ),
        ToolSpec(
            "write_file",
            (Field("file_path", str), Field("content", str)),
            "file_path: /app/hello.py\ncontent: |\n  print('hello')",
        ),
        ToolSpec(
            "edit_file",
            (
                Field("file_path", str),
                Field("old_string", str),
                Field("new_string", str),
                Field("replace_all", bool, False, False),
            ),
            "file_path: /app/main.py\nold_string: 'x = 1'\nnew_string: 'x = 2'",
        ),
        ToolSpec(
            "multi_edit",
            (Field("file_path", str), Field("edits", list)),
            "file_path: /app/main.py\nedits:\n  - old_string: 'a = 1'\n    new_string: 'a = 2'\n"
            "  - old_string: 'b = 1'\n    new_string: 'b = 2'",
        ),
        ToolSpec("file_metadata", (Field("file_paths", list),), "file_paths:\n  - /app/main.py\n  - /app/data.csv"),
        ToolSpec(
            "grep",
            (Field("pattern", str), Field("path", str, False, "."), Field("include", str, False, None)),
            "pattern: 'def main'\npath: /app\ninclude: '*.py'",
        ),
        ToolSpec("glob", (Field("pattern", str), Field("path", str, False, ".")), "pattern: '**/*.py'\npath: /app"),
        ToolSpec("ls", (Field("path", str, False, "."),), "path: /app"),
        ToolSpec(
            "todo",
            (Field("operations", list, False, []), Field("view_all", bool, False, False)),
            "operations:\n  - action: add\n    content: 'Run the tests'\n  - action: complete\n    id: 1\nview_all: "
            "true",
        ),
        ToolSpec(
            "scratchpad",
            (Field("action", str), Field("content", str, False, "")),
            "action: add\ncontent: 'The config lives in /etc/app.conf'",
        ),
        ToolSpec(
            "finish", (Field("message", str, False, ""),), "message: 'Done: the service is configured and tested.'"
        ),
    )
}


def validate_args(tool: str, body: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Check a parsed YAML body against the tool's schema: (args, None) or (None, what is wrong)."""
    spec = TOOLS[tool]
    if body is None:
        body = {}
    if not isinstance(body, dict):
        return None, f"the body of <{tool}> must be YAML key: value pairs, got {type(body).__name__}"
    known = {f.name for f in spec.fields}
    unknown = sorted(set(body) - known)
    if unknown:
        return None, f"<{tool}> has no field(s) {unknown}; its fields are {sorted(known)}"
    args: dict[str, Any] = {}
    for f in spec.fields:
        if f.name not in body:
            if f.required:
                return None, f"<{tool}> is missing the required field '{f.name}'"
            args[f.name] = f.default
            continue
        value = body[f.name]
        if f.kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if f.kind is int and isinstance(value, bool) or not isinstance(value, f.kind):
            return (
                None,
                f"<{tool}> field '{f.name}' must be {f.kind.__name__}, got {type(value).__name__} ({value!r:.60})",
            )
        args[f.name] = value
    return args, None


@dataclass
class TodoItem:
    id: int
    content: str
    done: bool = False


@dataclass
class AgentNotes:
    """Per-episode state of the planning tools."""

    todos: list[TodoItem] = field(default_factory=list)
    scratchpad: list[str] = field(default_factory=list)


class Toolbox:
    """Runs validated actions in one sandbox."""

    def __init__(self, sandbox: Sandbox, notes: AgentNotes | None = None):
        self.sandbox = sandbox
        self.notes = notes or AgentNotes()

    async def run(self, action: Action) -> ActionResult:
        started = time.monotonic()
        try:
            result = await getattr(self, f"_{action.tool}")(**action.args)
        except (ToolError, FileToolError) as error:
            result = ActionResult(action.tool, False, f"error: {error}")
        return ActionResult(
            result.tool,
            result.ok,
            result.output,
            result.exit_code,
            time.monotonic() - started,
            result.timed_out,
            result.finished,
        )

    async def _bash(self, cmd: str, timeout_secs: int) -> ActionResult:
        timeout = max(1, min(timeout_secs, MAX_COMMAND_TIMEOUT_SEC))
        result = await self.sandbox.run(cmd, timeout=timeout)
        ok = result.exit_code == 0 and not result.timed_out
        return ActionResult("bash", ok, result.output, result.exit_code, timed_out=result.timed_out)

    async def _read_file(self, file_path: str, offset: int, limit: int) -> ActionResult:
        start = max(1, offset)
        text = await self.sandbox.files.read_text(file_path, start, start + max(1, limit) - 1)
        numbered = "".join(f"{start + i:6d}\t{line}" for i, line in enumerate(text.splitlines(keepends=True)))
        return ActionResult("read_file", True, numbered or "(empty file)")

    async def _write_file(self, file_path: str, content: str) -> ActionResult:
        await self.sandbox.files.write_text(file_path, content)
        return ActionResult(
            "write_file", True, f"wrote {len(content.encode())} bytes to {self.sandbox.files.resolve(file_path)}"
        )

    async def _edit_file(self, file_path: str, old_string: str, new_string: str, replace_all: bool) -> ActionResult:
        count = await self.sandbox.files.edit(file_path, old_string, new_string, replace_all)
        return ActionResult(
            "edit_file", True, f"replaced {count} occurrence(s) in {self.sandbox.files.resolve(file_path)}"
        )

    async def _multi_edit(self, file_path: str, edits: list) -> ActionResult:
        text = await self.sandbox.files.read_text(file_path)
        for number, edit in enumerate(edits, start=1):
            if not isinstance(edit, dict) or not {"old_string", "new_string"} <= set(edit):
                raise ToolError(f"edit {number} needs old_string and new_string")
            old, new = str(edit["old_string"]), str(edit["new_string"])
            count = text.count(old) if old else 0
            if count == 0 or (count > 1 and not edit.get("replace_all")):
                problem = "not found" if count == 0 else f"found {count} times (set replace_all or add context)"
                raise ToolError(f"edit {number}: old_string {problem}; no edit was applied")
            text = text.replace(old, new)
        await self.sandbox.files.write_text(file_path, text)
        return ActionResult(
            "multi_edit", True, f"applied {len(edits)} edits to {self.sandbox.files.resolve(file_path)}"
        )

    async def _file_metadata(self, file_paths: list) -> ActionResult:
        lines = []
        for path in file_paths[:10]:
            try:
                info = await self.sandbox.files.stat(str(path))
                lines.append(f"{info.path}: {info.kind}, {info.size} bytes, mode {info.mode:o}, mtime {info.mtime:.0f}")
            except FileToolError as error:
                lines.append(f"{path}: {error}")
        return ActionResult("file_metadata", True, "\n".join(lines))

    async def _grep(self, pattern: str, path: str, include: str | None) -> ActionResult:
        include_arg = f" --include={shlex.quote(include)}" if include else ""
        command = (
            f"grep -rnE{include_arg} -e {shlex.quote(pattern)} -- {shlex.quote(self.sandbox.files.resolve(path))}"
            f" 2>&1 | head -n {SEARCH_RESULT_LINES}"
        )
        return await self._search("grep", command)

    async def _glob(self, pattern: str, path: str) -> ActionResult:
        # Quote every character except glob syntax, so the pattern can only ever match files.
        safe = "".join(ch if ch in "*?[]/" else shlex.quote(ch) for ch in pattern)
        command = (
            f"cd {shlex.quote(self.sandbox.files.resolve(path))} && shopt -s globstar nullglob dotglob && "
            f"for f in {safe}; do printf '%s\\n' \"$f\"; done | head -n {SEARCH_RESULT_LINES}"
        )
        return await self._search("glob", command)

    async def _ls(self, path: str) -> ActionResult:
        entries = await self.sandbox.files.list_dir(path)
        lines = [f"{'d' if e.kind == 'directory' else '-'} {e.size:>10}  {e.path.rsplit('/', 1)[-1]}" for e in entries]
        return ActionResult("ls", True, "\n".join(lines) or "(empty directory)")

    async def _search(self, tool: str, command: str) -> ActionResult:
        result = await self.sandbox.control.run(command, timeout=60, inline=True)
        return ActionResult(tool, True, result.output or "(no matches)")

    async def _todo(self, operations: list, view_all: bool) -> ActionResult:
        todos = self.notes.todos
        messages = []
        for number, op in enumerate(operations, start=1):
            if not isinstance(op, dict) or op.get("action") not in {"add", "complete", "delete", "view"}:
                raise ToolError(f"todo operation {number} needs action: add|complete|delete|view")
            action = op["action"]
            if action == "add":
                if not op.get("content"):
                    raise ToolError(f"todo operation {number} (add) needs content")
                todos.append(TodoItem(max((t.id for t in todos), default=0) + 1, str(op["content"])))
                messages.append(f"added #{todos[-1].id}")
            elif action in {"complete", "delete"}:
                item = next((t for t in todos if t.id == op.get("id")), None)
                if item is None:
                    raise ToolError(f"todo operation {number} ({action}): no todo with id {op.get('id')!r}")
                if action == "complete":
                    item.done = True
                else:
                    todos.remove(item)
                messages.append(f"{action}d #{item.id}" if action == "complete" else f"deleted #{item.id}")
        if view_all or any(isinstance(op, dict) and op.get("action") == "view" for op in operations):
            messages.extend(f"[{'x' if t.done else ' '}] #{t.id} {t.content}" for t in todos)
        return ActionResult("todo", True, "\n".join(messages) or "(no todos)")

    async def _scratchpad(self, action: str, content: str) -> ActionResult:
        if action == "add":
            self.notes.scratchpad.append(content)
            return ActionResult("scratchpad", True, f"noted ({len(self.notes.scratchpad)} notes)")
        if action == "view":
            return ActionResult("scratchpad", True, "\n".join(f"- {n}" for n in self.notes.scratchpad) or "(empty)")
        raise ToolError("scratchpad action must be add or view")

    async def _keys(self, keystrokes: str, duration: float) -> ActionResult:
        """Keystroke protocols: type into the tmux terminal, wait, return the screen."""
        screen = await self.sandbox.terminal.send_keys(keystrokes, wait_sec=duration)
        return ActionResult("keys", True, screen)

    async def _finish(self, message: str) -> ActionResult:
        return ActionResult("finish", True, message or "finished", finished=True)

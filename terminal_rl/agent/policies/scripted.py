"""Replays fixed responses: for tests, oracle-style scripted solutions and judge calibration sets."""

from __future__ import annotations

from terminal_rl.agent.policies.base import Policy, PolicySession, Reply
from terminal_rl.tasks.model import Task


class ScriptedPolicy(Policy):
    """Responses per task id (or one list for every task). A task may also map to a list of scripts,
    used in turn by its successive episodes (attempts that differ). An exhausted script replies with
    empty text, which the protocol reports as a parse error, so the episode still ends by its own rules."""

    name = "scripted"

    def __init__(self, scripts: dict[str, list] | list[str]):
        self.scripts = scripts
        self._episodes: dict[str, int] = {}

    def session(self, task: Task) -> PolicySession:
        script = self.scripts if isinstance(self.scripts, list) else self.scripts.get(task.id, [])
        if script and isinstance(script[0], list):
            episode = self._episodes.get(task.id, 0)
            self._episodes[task.id] = episode + 1
            script = script[episode % len(script)]
        return _ScriptedSession(list(script))


class _ScriptedSession(PolicySession):
    def __init__(self, responses: list[str]):
        self._responses = responses
        self._next = 0

    async def reply(self, messages: list[dict[str, str]], max_tokens: int) -> Reply:
        if self._next >= len(self._responses):
            return Reply("")
        self._next += 1
        return Reply(self._responses[self._next - 1])

"""Fault injection for the shared CPU run, loaded into every process of the run beside our verl plugin
(``VERL_USE_EXTERNAL_MODULES``): every model call of a rollout of the task named by
``TERMINAL_RL_FAULT_TASK`` raises, as a crashed model server would (an exception our agent loop does
not expect, raised inside its session)."""

import os

from terminal_rl.integrations.verl import agent_loop

FAULT_TASK = os.environ.get("TERMINAL_RL_FAULT_TASK", "")
_run = agent_loop.TerminalAgentLoop.run
_generator = agent_loop.TerminalAgentLoop._generator


async def _run_marking_the_task(self, sampling_params, **kwargs):
    self._fault = kwargs["extra_info"]["task_id"] == FAULT_TASK
    return await _run(self, sampling_params, **kwargs)


def _failing_generator(self, sampling_params, *args):
    generate = _generator(self, sampling_params, *args)

    async def failing(prompt_ids, max_tokens):
        if getattr(self, "_fault", False):
            raise RuntimeError("injected fault: the model server crashed")
        return await generate(prompt_ids, max_tokens)

    return failing


agent_loop.TerminalAgentLoop.run = _run_marking_the_task
agent_loop.TerminalAgentLoop._generator = _failing_generator

"""Imported by verl in every process (``VERL_USE_EXTERNAL_MODULES``): registers our agent loop, advantage
estimator, policy loss and trainer, and on ``VERL_PLATFORM=cpu`` the CPU platform and the ``hf`` rollout backend."""

import os

if os.environ.get("VERL_PLATFORM") == "cpu":
    from terminal_rl.integrations.verl.cpu import platform as _platform  # noqa: F401
    from terminal_rl.integrations.verl.cpu import rollout as _rollout  # noqa: F401

from terminal_rl.integrations.verl import advantages as _advantages  # noqa: F401,E402
from terminal_rl.integrations.verl import agent_loop as _agent_loop  # noqa: F401,E402
from terminal_rl.integrations.verl import losses as _losses  # noqa: F401,E402
from terminal_rl.integrations.verl import trainer as _trainer  # noqa: F401,E402

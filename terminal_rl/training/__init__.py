"""Training: the checks before a run (preflight) and the run's set-up; verl itself is driven from
``terminal_rl.integrations.verl``."""

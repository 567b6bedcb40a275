"""Everything that imports verl (and nothing else in terminal_rl does): the config bridge and
validation, the agent loop, the run-wide services, and the CPU platform and rollout backend."""

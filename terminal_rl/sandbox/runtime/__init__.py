"""The running sandbox: the container engine client, one container per rollout, its shell, terminal,
files, output bounds and network."""

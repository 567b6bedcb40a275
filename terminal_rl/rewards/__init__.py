"""Rewards: named components (pure, each a score in [0, 1] with details) and the weighted mix,
decided per GRPO group so that a missing judge never biases a group's advantages."""

"""Sandboxes: task images, one isolated container per rollout, verification, cleanup."""

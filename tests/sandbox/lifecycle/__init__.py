"""Tests of terminal_rl/sandbox/lifecycle/."""

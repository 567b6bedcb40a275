"""Tests of terminal_rl/sandbox/runtime/."""

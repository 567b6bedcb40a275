"""Tests of terminal_rl/sandbox/images/."""

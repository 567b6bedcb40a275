"""Tests of terminal_rl/sandbox/verify/."""

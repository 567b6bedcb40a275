"""Tests of terminal_rl/sandbox/inside/."""

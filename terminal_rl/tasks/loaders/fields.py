"""Field parsers shared by the loaders; each raises the loader's ``fail(field, message)`` error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from terminal_rl.tasks.model import Difficulty

Fail = Callable[[str, str], Exception]

_MEMORY_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_difficulty(value: Any, fail: Fail) -> Difficulty:
    try:
        return Difficulty(str(value).strip().lower())
    except ValueError:
        known = "|".join(d.value for d in Difficulty)
        raise fail("difficulty", f"{value!r} is not one of {known}") from None


def parse_memory_mb(value: Any, fail: Fail) -> int:
    """Memory as an int of MB, from a number of MB or a string like "4G" / "512M"."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    text = str(value).strip().upper().removesuffix("B")
    try:
        if text and text[-1] in _MEMORY_UNITS:
            return int(float(text[:-1]) * _MEMORY_UNITS[text[-1]])
        return int(float(text))
    except ValueError:
        raise fail("limits.memory_mb", f"{value!r} is not a memory size like 2048 or '4G'") from None


def parse_tags(value: Any, fail: Fail) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(t.strip() for t in value.replace("|", ",").split(",") if t.strip())
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return tuple(value)
    raise fail("tags", f"{value!r} must be a list of strings")


def parse_seconds(value: Any, field: str, fail: Fail) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise fail(field, f"{value!r} must be a positive number of seconds")
    return float(value)

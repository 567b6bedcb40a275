"""File operations at their simplest: put a word or number named in the instruction into a file.

Small enough for a tiny model to learn (one command whose arguments come from the instruction); the
learning proof trains on it. Every task carries a plausible mistake, the right value written to the
scratch directory ``/tmp`` instead of ``/app`` (both tests fail). It takes the same copying as the
solution, so a model warmed up on a disclosed share of mistaken demonstrations can do the task and
chooses wrong as often: reinforcement learning has a choice to fix, not a missing skill to find.
"""

from __future__ import annotations

import random

from terminal_rl.tasks.families.base import FamilyTask, pytest_file, read_text_helper
from terminal_rl.tasks.model import Difficulty

NAME = "write_value"
CATEGORY = "file-operations"
WORDS = (
    "apple",
    "river",
    "stone",
    "cloud",
    "tiger",
    "piano",
    "maple",
    "ocean",
    "lemon",
    "comet",
    "delta",
    "ember",
    "forest",
    "silver",
    "garden",
    "rocket",
    "window",
    "candle",
    "marble",
    "dragon",
    "pepper",
    "violet",
    "harbor",
    "falcon",
    "meadow",
    "copper",
    "jungle",
    "planet",
    "willow",
    "saddle",
    "thunder",
    "crystal",
    "lantern",
    "compass",
    "blossom",
    "glacier",
    "canyon",
    "orchid",
    "bamboo",
    "walnut",
)
FILES = ("answer", "result", "output", "value", "note")


def sample(rng: random.Random, level: Difficulty) -> FamilyTask:
    name = f"{rng.choice(FILES)}.txt"
    target = f"/app/{name}"
    if level is Difficulty.EASY:
        value = rng.choice(WORDS)
        instruction = f"Write the word {value} to {target}."
    elif level is Difficulty.MEDIUM:
        value = str(rng.randint(10, 999))
        instruction = f"Write the number {value} to {target}."
    else:
        first, second = rng.sample(WORDS, 2)
        value = f"{first} {second}"
        instruction = f"Write the two words {first} and {second}, separated by one space, to {target}."
    return FamilyTask(
        f"Write {value}",
        instruction,
        {},
        pytest_file(
            read_text_helper(),
            f'''
            def test_file_exists():
                assert os.path.isfile("{target}")''',
            f'''
            def test_file_holds_the_value():
                assert read("{target}").strip() == "{value}"''',
        ),
        {"test_file_exists": 0.3, "test_file_holds_the_value": 0.7},
        f"echo {value} > {target}\n",
        ("write",),
        f"echo {value} > /tmp/{name}\n",
    )

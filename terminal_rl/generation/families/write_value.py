"""File operations at their simplest: put a word or number named in the instruction into a file.

Small enough for a tiny model to learn (one command whose arguments come from the instruction); the
learning proof trains on it. Two-word tasks carry a plausible mistake, writing only the first word
(the file-exists test passes, the value test fails): the learning proof's SFT demonstrations use it for
a disclosed share of those tasks, so the warm-started model has something left to learn.
"""

from __future__ import annotations

import random

from terminal_rl.generation.families.base import FamilyTask, pytest_file, read_text_helper
from terminal_rl.tasks.model import Difficulty

NAME = "write_value"
CATEGORY = "file-operations"
WORDS = ("apple", "river", "stone", "cloud", "tiger", "piano", "maple", "ocean", "lemon", "comet", "delta", "ember",
         "forest", "silver", "garden", "rocket", "window", "candle", "marble", "dragon", "pepper", "violet",
         "harbor", "falcon", "meadow", "copper", "jungle", "planet", "willow", "saddle", "thunder", "crystal",
         "lantern", "compass", "blossom", "glacier", "canyon", "orchid", "bamboo", "walnut")
FILES = ("answer", "result", "output", "value", "note")


def sample(rng: random.Random, level: Difficulty) -> FamilyTask:
    target = f"/app/{rng.choice(FILES)}.txt"
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
    mistake = f"echo {value.split()[0]} > {target}\n" if level is Difficulty.HARD else None
    return FamilyTask(
        f"Write {value}", instruction, {},
        pytest_file(read_text_helper(), f'''
            def test_file_exists():
                assert os.path.isfile("{target}")''', f'''
            def test_file_holds_the_value():
                assert read("{target}").strip() == "{value}"'''),
        {"test_file_exists": 0.3, "test_file_holds_the_value": 0.7},
        f"echo {value} > {target}\n", ("write",), mistake)

"""Several dependent turns: find the one file in an inbox, read the word in it, file the word.

The file's name is drawn per task and named nowhere but in the output of ``ls /app/inbox``, and the
word only in the file, so success takes at least three commands, each using what the previous one
printed: list, read, write. The levels differ in the folder the word is filed in:

- easy: ``/app/out`` exists;
- medium: it does not, and the instruction says to create it (``mkdir -p``, then write);
- hard: it does not, and the instruction, worded as easy's, does not say so: the write fails with
  ``No such file or directory`` and the agent must create the folder and write again.

The target file is always ``/app/out/answer.txt``: what a turn copies comes from what the previous
one printed, not from the instruction (a warm start copying a name from the instruction learnt it late
or not at all: experiments/learning_proof_multiturn/README.md).

Medium makes the folder first, after the listing or after the read (drawn per task), or, on an
eighth of them (``LOOK_SHARE``), fourth: after a look at the target file that fails (``ls
/app/out/answer.txt``, ``No such file or directory``, naming the file as hard's failed write does).
Plausible mistakes: on medium where the folder is made before the read, the inbox file's name written
instead of its word (the file and folder tests pass, the word's fails; a write right after ``mkdir``,
as on hard, has none); on hard, easy's three commands (the write fails, then done). A warm start
demonstrated on easy and medium only has seen ``mkdir -p`` only where an instruction asked for it
(after a look that said the file's path is missing on an eighth of medium tasks), and has never seen
a write fail: the recovery on hard (the failed write, the folder, the write again) is not in any
demonstration and the instruction never asks for it; it is left for reinforcement learning to find,
with partial credit (the folder made for the file, the file, the word) as its gradient. Earlier
designs left it out of sampling's reach, carried over its reaction with the wrong argument (the look
at the folder, ``ls /app/out``, on a quarter of medium tasks: ``mkdir -p`` of the path the failed
write names, the file), or carried medium's mistake into its second write (the mistake at every
turn): experiments/learning_proof_multiturn/README.md.
"""

from __future__ import annotations

import random

from terminal_rl.tasks.families.base import FamilyTask, pytest_file, read_text_helper
from terminal_rl.tasks.families.write_value import WORDS
from terminal_rl.tasks.model import Difficulty

NAME = "inbox_value"
CATEGORY = "file-operations"
INBOX, OUT = "/app/inbox", "/app/out"
TARGET = f"{OUT}/answer.txt"
# Inbox file names: a prefix and a number, so a name is read off the listing, not guessed.
PREFIXES = ("msg", "memo", "item", "drop", "card", "slip")
# The share of medium tasks that make the folder after a failing look at the target: the one
# demonstrated link from a missing path to ``mkdir``, kept rare so it is within sampling's reach on
# hard without being the warm start's greedy reaction (a quarter made it the greedy one).
LOOK_SHARE = 1 / 8


def sample(rng: random.Random, level: Difficulty) -> FamilyTask:
    inbox_file = f"{INBOX}/{rng.choice(PREFIXES)}_{rng.randint(100, 999)}.txt"
    word = rng.choice(WORDS)
    files = {inbox_file: f"{word}\n"}
    if level is Difficulty.EASY:
        files[f"{OUT}/.keep"] = ""
    instruction = f"One file in {INBOX} holds a word. Write that word to {TARGET}."
    if level is Difficulty.MEDIUM:
        instruction += f" The folder {OUT} does not exist yet: create it first."
    listing, read, look = f"ls {INBOX}", f"cat {inbox_file}", f"ls {TARGET}"
    write, mkdir = f"echo {word} > {TARGET}", f"mkdir -p {OUT}"
    file_stem = inbox_file.rsplit("/", 1)[1].removesuffix(".txt")
    before_write = [listing, read] if level is Difficulty.EASY else [listing, read, mkdir]
    if level is Difficulty.MEDIUM:  # where the folder is made, drawn per task
        placements = [[mkdir, listing, read], [listing, mkdir, read], before_write]
        looked = rng.random() < LOOK_SHARE
        before_write = [listing, read, look, mkdir] if looked else placements[rng.randrange(3)]
    mkdir_first = level is Difficulty.MEDIUM and before_write.index(mkdir) < before_write.index(read)
    tests = {
        "test_file_exists": (0.3, f'assert os.path.isfile("{TARGET}")'),
        "test_file_holds_the_inbox_word": (0.7, f'assert read("{TARGET}").strip() == "{word}"'),
    }
    if level is not Difficulty.EASY:  # partial credit for the folder too, where it must be made
        # ... made for the file: ``mkdir -p /app/out/answer.txt`` makes the folder and blocks the file
        # (a warm start copying the failed write's path makes it, and credit for it is reinforced).
        folder_ready = f'assert os.path.isdir("{OUT}") and not os.path.isdir("{TARGET}")'
        tests = {
            "test_out_folder_made_for_the_file": (0.2, folder_ready),
            "test_file_exists": (0.2, tests["test_file_exists"][1]),
            "test_file_holds_the_inbox_word": (0.6, tests["test_file_holds_the_inbox_word"][1]),
        }
    return FamilyTask(
        f"File the word from the inbox in {TARGET}",
        instruction,
        files,
        pytest_file(read_text_helper(), *(f"def {name}():\n    {body}" for name, (_, body) in tests.items())),
        {name: weight for name, (weight, _) in tests.items()},
        commands(*before_write, write),
        ("multi-turn", "write"),
        {
            Difficulty.EASY: None,
            # Only where the folder was made before the read: the write right after ``mkdir`` (as on
            # hard, after the failed write) always files the word (design 5's mistake at any turn
            # was carried into hard's second write, and GRPO spread the wrong word to easy).
            Difficulty.MEDIUM: commands(*before_write, f"echo {file_stem} > {TARGET}") if mkdir_first else None,
            Difficulty.HARD: commands(listing, read, write),  # easy's commands: the write fails
        }[level],
    )


def commands(*lines: str) -> str:
    """A solution's commands, one a turn."""
    return "".join(f"{line}\n" for line in lines)

"""SFT demonstrations of procedural tasks: the solution as bash_only turns, the plausible mistake for
each level's disclosed share of the tasks that have one, the same on every call."""

import pytest

from terminal_rl.tasks.demonstrations import demonstration_turns, demonstrations
from terminal_rl.tasks.procedural import procedural_tasks
from tests.support import SMALL_LIMITS


def test_solutions_and_a_share_of_mistakes_as_protocol_turns():
    tasks = procedural_tasks("write_value", 300, 0, ["easy", "medium", "hard"], SMALL_LIMITS)
    shares = {"medium": 0.7, "hard": 0.3}
    scripts = demonstrations(tasks, "bash_only", shares, seed=0)
    assert scripts == demonstrations(tasks, "bash_only", shares, seed=0)
    wrong = [t for t in tasks if scripts[t.id][0] == f"<command>{t.metadata['mistake'].strip()}</command>"]
    for level, share in {"easy": 0, "medium": 0.7, "hard": 0.3}.items():
        assert sum(t.difficulty.value == level for t in wrong) == share * 100, level
    assert demonstrations(tasks, "bash_only", shares, seed=1) != scripts, "the seed draws which"
    for task in tasks:
        if task not in wrong:
            assert scripts[task.id] == [f"<command>{task.solution.strip()}</command>", "<done/>"]
    honest = demonstrations(tasks, "bash_only", {}, seed=0)
    assert all(honest[t.id] == demonstration_turns(t.solution, "bash_only") for t in tasks)


def test_multi_line_scripts_are_one_command_a_turn_and_other_protocols_are_refused():
    assert demonstration_turns("cd /app\n\nls -la\n", "bash_only") == [
        "<command>cd /app</command>",
        "<command>ls -la</command>",
        "<done/>",
    ]
    with pytest.raises(ValueError, match="not 'xml_yaml'"):
        demonstration_turns("ls", "xml_yaml")
    with pytest.raises(ValueError, match=r"mistake_share.hard=1.5 must be in \[0, 1\]"):
        demonstrations([], "bash_only", {"hard": 1.5}, 0)
    with pytest.raises(ValueError, match="mistake_share names level 'difficult'; the levels are"):
        demonstrations([], "bash_only", {"difficult": 0.5}, 0)

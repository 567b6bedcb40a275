"""SFT demonstrations of procedural tasks: the solution as bash_only turns, the plausible mistake for
the disclosed share of the tasks that have one, the same on every call."""

import pytest

from terminal_rl.generation.demonstrations import demonstration_turns, demonstrations
from terminal_rl.generation.procedural import procedural_tasks
from tests.support import SMALL_LIMITS


def test_solutions_and_a_share_of_mistakes_as_protocol_turns():
    tasks = procedural_tasks("write_value", 300, 0, ["easy", "medium", "hard"], SMALL_LIMITS)
    scripts = demonstrations(tasks, "bash_only", 0.7, seed=0)
    assert scripts == demonstrations(tasks, "bash_only", 0.7, seed=0)
    hard = [t for t in tasks if t.difficulty.value == "hard"]
    wrong = [t for t in hard if scripts[t.id][0] == f"<command>{t.metadata['mistake'].strip()}</command>"]
    assert 0.6 < len(wrong) / len(hard) < 0.8
    for task in tasks:
        if task not in wrong:
            assert scripts[task.id] == [f"<command>{task.solution.strip()}</command>", "<done/>"]
    honest = demonstrations(tasks, "bash_only", 0.0, seed=0)
    assert all(honest[t.id] == demonstration_turns(t.solution, "bash_only") for t in tasks)

def test_multi_line_scripts_are_one_command_a_turn_and_other_protocols_are_refused():
    assert demonstration_turns("cd /app\n\nls -la\n", "bash_only") == ["<command>cd /app</command>",
                                                                      "<command>ls -la</command>", "<done/>"]
    with pytest.raises(ValueError, match="not 'xml_yaml'"):
        demonstration_turns("ls", "xml_yaml")
    with pytest.raises(ValueError, match="mistake_share=1.5 must be in"):
        demonstrations([], "bash_only", 1.5, 0)

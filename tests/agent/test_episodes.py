"""Whole episodes in real containers with the scripted policy: solved tasks in every protocol,
loops detected, malformed turns ending the episode."""

import json

import pytest

from terminal_rl.agent.metrics import behaviour_metrics
from terminal_rl.agent.policies.scripted import ScriptedPolicy

pytestmark = pytest.mark.docker

PARSER = "import csv\nprint(sum(float(r['Amount']) for r in csv.DictReader(open('data.csv'))))\n"


def xml(tag: str, body: str) -> str:
    return f"<{tag}>\n{body}\n</{tag}>"


def test_xml_yaml_agent_solves_two_real_tasks(tasks, episode):
    csv_sum = ScriptedPolicy(
        [
            "<think>Plan first.</think>"
            + xml(
                "todo",
                "operations:\n  - action: add\n    content: 'Look at data.csv'\n"
                "  - action: add\n    content: 'Write parser.py'",
            ),
            xml("ls", "path: /app") + xml("read_file", "file_path: /app/data.csv"),
            xml(
                "write_file",
                "file_path: parser.py\ncontent: |\n" + "".join(f"  {line}\n" for line in PARSER.splitlines()),
            )
            + xml("bash", "cmd: 'cd /app && python3 parser.py'"),
            xml("todo", "operations:\n  - action: complete\n    id: 1\n  - action: complete\n    id: 2\nview_all: true")
            + xml("finish", "message: 'parser.py prints 425.0'"),
        ]
    )
    trajectory = episode(tasks["csv-file-parsing-amount-sum"], "xml_yaml", csv_sum)
    assert trajectory.termination == "finished", trajectory.termination_detail
    assert trajectory.score == 1.0
    assert trajectory.turns[2].results[1]["output"] == "425.0\n"
    assert "[x] #2 Write parser.py" in trajectory.turns[3].results[0]["output"]
    assert trajectory.turns[1].observation.startswith('<ls_result status="ok">')

    off_by_one = ScriptedPolicy(
        [
            xml("grep", "pattern: 'range\\('\npath: /app\ninclude: '*.py'"),
            xml(
                "edit_file",
                "file_path: /app/summarize.py\nold_string: 'range(len(my_list) - 1)'\n"
                "new_string: 'range(len(my_list))'",
            )
            + xml("bash", "cmd: 'cd /app && python test_summary.py'")
            + xml("finish", "message: fixed"),
        ]
    )
    trajectory = episode(tasks["debugging-off-by-one-loop-error"], "xml_yaml", off_by_one)
    assert "summarize.py:3:" in trajectory.turns[0].results[0]["output"]
    assert trajectory.turns[1].results[1]["output"] == "All tests passed!\n"
    assert (trajectory.termination, trajectory.score) == ("finished", 1.0)
    assert json.loads(trajectory.to_json())["verification"]["outcomes"] == {
        "test_loop_range_corrected": "passed",
        "test_test_script_passes": "passed",
    }


def test_failed_action_stops_the_turn(tasks, episode):
    policy = ScriptedPolicy(
        [
            xml("bash", "cmd: 'false'") + xml("bash", "cmd: 'touch /app/never'"),
            xml("bash", "cmd: 'ls /app/never'") + xml("finish", "message: x"),
        ]
    )
    trajectory = episode(tasks["csv-file-parsing-amount-sum"], "xml_yaml", policy)
    assert len(trajectory.turns[0].results) == 1
    assert trajectory.turns[0].observation.endswith(
        "<skipped>1 later action(s) were not run because <bash> failed.</skipped>"
    )
    assert trajectory.turns[1].results[0]["exit_code"] == 2  # /app/never was never created
    # The script then runs dry: three empty replies in a row end the episode.
    assert (trajectory.termination, len(trajectory.turns)) == ("parse_errors", 5)


def test_bash_only_agent_solves_a_task(tasks, episode):
    lru = (
        "from collections import OrderedDict\n\nclass LRUCache:\n    def __init__(self, capacity):\n"
        "        self.capacity, self.data = capacity, OrderedDict()\n\n    def get(self, key):\n"
        "        if key not in self.data:\n            return -1\n        self.data.move_to_end(key)\n"
        "        return self.data[key]\n\n    def put(self, key, value):\n        self.data[key] = value\n"
        "        self.data.move_to_end(key)\n        if len(self.data) > self.capacity:\n"
        "            self.data.popitem(last=False)\n"
    )
    policy = ScriptedPolicy(
        [
            f"<command>cat > /app/lru.py <<'EOF'\n{lru}EOF</command>",
            "<think>check</think><command>cd /app && python test_lru.py | tail -1</command>",
            "<done/>",
        ]
    )
    trajectory = episode(tasks["lru-cache-implementation"], "bash_only", policy)
    assert trajectory.turns[1].observation == "All tests passed!\n[exit code: 0]"
    assert (trajectory.termination, trajectory.score) == ("finished", 1.0)


def test_terminus_json_agent_solves_a_task_through_keystrokes(tasks, episode):
    def turn(keystrokes, complete=False, duration=0.5):
        return json.dumps(
            {
                "analysis": "a",
                "plan": "p",
                "task_complete": complete,
                "commands": [{"keystrokes": k, "duration": duration} for k in keystrokes],
            }
        )

    policy = ScriptedPolicy(
        [
            turn(["cd /app\n", "sleep 30\n", "C-c"]),
            turn(
                ["sed -i 's/range(len(my_list) - 1)/range(len(my_list))/' summarize.py\n", "python test_summary.py\n"]
            ),
            turn([], complete=True),
        ]
    )
    trajectory = episode(tasks["debugging-off-by-one-loop-error"], "terminus_json", policy)
    assert trajectory.messages[0]["role"] == "user" and "Current terminal state:" in trajectory.messages[0]["content"]
    assert "^C" in trajectory.turns[0].observation
    assert "All tests passed!" in trajectory.turns[1].observation
    assert (trajectory.termination, trajectory.score) == ("finished", 1.0)


def test_looping_agent_is_detected(tasks, episode):
    policy = ScriptedPolicy(["<command>ls /app</command>"] * 4 + ["<done/>"])
    trajectory = episode(tasks["csv-file-parsing-amount-sum"], "bash_only", policy)
    assert behaviour_metrics(trajectory)["loop"] == 1.0
    assert trajectory.termination == "finished"


def test_three_malformed_turns_end_the_episode(tasks, episode):
    policy = ScriptedPolicy(["<bash>\ncmd: 'unterminated\n</bash>", "no action", "<bogus>x</bogus>", "<done/>"])
    trajectory = episode(tasks["csv-file-parsing-amount-sum"], "xml_yaml", policy)
    assert trajectory.termination == "parse_errors"
    assert len(trajectory.turns) == 3
    assert [t.parse_error is not None for t in trajectory.turns] == [True, True, True]
    assert trajectory.score == 0.0  # still verified: the agent's own failure is scored
    assert behaviour_metrics(trajectory)["parse_error_rate"] == 1.0


def test_max_turns(tasks, episode):
    from dataclasses import replace

    from tests.conftest import LIMITS

    trajectory = episode(
        tasks["csv-file-parsing-amount-sum"],
        "bash_only",
        ScriptedPolicy(["<command>true</command>"] * 5),
        replace(LIMITS, max_turns=2),
    )
    assert (trajectory.termination, len(trajectory.turns)) == ("max_turns", 2)
    assert behaviour_metrics(trajectory)["turn_exhaustion"] == 1.0

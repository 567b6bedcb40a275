"""Parsers of the three action protocols, with the exact feedback a model gets."""

import json

import pytest

from terminal_rl.agent.actions import Action
from terminal_rl.agent.protocols import make_protocol

BASH_FORM = "Correct form:\n<bash>\ncmd: 'ls -la /app'\ntimeout_secs: 60\n</bash>"


@pytest.fixture(scope="module")
def xml():
    return make_protocol("xml_yaml")


def test_xml_yaml_actions_thinking_and_prose(xml):
    text = (
        "<think>maybe <bash>cmd: rm -rf /</bash></think>Let me look first.\n"
        "<bash>\ncmd: 'ls -la'\n</bash>\nand plan:\n<todo>\noperations:\n  - action: add\n    content: x\n"
        "view_all: true\n</todo>"
    )
    assert xml.parse(text).actions == [
        Action("bash", {"cmd": "ls -la", "timeout_secs": 60}),
        Action("todo", {"operations": [{"action": "add", "content": "x"}], "view_all": True}),
    ]


@pytest.mark.parametrize(
    ("body", "args"),
    [
        (
            "<read_file>\nfile_path: /app/a.py\noffset: 5\nlimit: 10\n</read_file>",
            {"file_path": "/app/a.py", "offset": 5, "limit": 10},
        ),
        (
            "<write_file>\nfile_path: /tmp/ü.txt\ncontent: |\n  héllo ✓\n  日本\n</write_file>",
            {"file_path": "/tmp/ü.txt", "content": "héllo ✓\n日本\n"},
        ),
        (
            "<edit_file>\nfile_path: a\nold_string: 'x: 1'\nnew_string: \"y\"\nreplace_all: true\n</edit_file>",
            {"file_path": "a", "old_string": "x: 1", "new_string": "y", "replace_all": True},
        ),
        (
            "<multi_edit>\nfile_path: a\nedits:\n  - old_string: a\n    new_string: b\n</multi_edit>",
            {"file_path": "a", "edits": [{"old_string": "a", "new_string": "b"}]},
        ),
        ("<file_metadata>\nfile_paths: [a, b]\n</file_metadata>", {"file_paths": ["a", "b"]}),
        ("<grep>\npattern: 'def (main|run)'\n</grep>", {"pattern": "def (main|run)", "path": ".", "include": None}),
        ("<glob>\npattern: '**/*.py'\npath: /app\n</glob>", {"pattern": "**/*.py", "path": "/app"}),
        ("<ls>\n</ls>", {"path": "."}),
        ("<scratchpad>\naction: view\n</scratchpad>", {"action": "view", "content": ""}),
        ("<finish>\nmessage: 42\n</finish>", {"message": "42"}),
    ],
)
def test_xml_yaml_every_tool_and_field_type(xml, body, args):
    [action] = xml.parse(body).actions
    assert action.args == args


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            '<bash>\ncmd: echo "a: b"\n</bash>',
            "The body of <bash> is not valid YAML: mapping values are not allowed here (line 2 of the body). Quote "
            "strings "
            f"that contain ': ' or '#', and use '|' for multi-line text. {BASH_FORM}",
        ),
        (
            "<foo>a: 1</foo>",
            "Unknown action <foo>. Available actions: <bash>, <read_file>, <write_file>, <edit_file>, <multi_edit>, "
            "<file_metadata>, <grep>, <glob>, <ls>, <todo>, <scratchpad>, <finish>.",
        ),
        ("<bash>\ncmd: ls\n", f"<bash> is never closed: end it with </bash>. {BASH_FORM}"),
        (
            "I would run ls now.",
            "No action found. Write at least one action as an XML tag with a YAML body, e.g.\n<bash>\ncmd: 'ls "
            "-la'\n</bash>",
        ),
        (
            "<bash>\ntimeout_secs: 5\n</bash>",
            f"Invalid <bash>: <bash> is missing the required field 'cmd'. {BASH_FORM}",
        ),
        (
            "<bash>\ncmd: ls\ntimeout_secs: fast\n</bash>",
            f"Invalid <bash>: <bash> field 'timeout_secs' must be int, got str ('fast'). {BASH_FORM}",
        ),
        (
            "<bash>\ncmd: ls\ncolour: red\n</bash>",
            f"Invalid <bash>: <bash> has no field(s) ['colour']; its fields are ['cmd', 'timeout_secs']. {BASH_FORM}",
        ),
        (
            "<bash>\n- a\n</bash>",
            f"Invalid <bash>: the body of <bash> must be YAML key: value pairs, got list. {BASH_FORM}",
        ),
        (
            "<think>only <bash>\ncmd: ls\n</bash> thinking",
            "No action found. Write at least one action as an XML tag with a "
            "YAML body, e.g.\n<bash>\ncmd: 'ls -la'\n</bash>",
        ),
    ],
)
def test_xml_yaml_feedback(xml, text, error):
    result = xml.parse(text)
    assert (result.actions, result.error) == ([], error)


def test_xml_yaml_one_bad_action_rejects_the_turn(xml):
    result = xml.parse("<bash>\ncmd: ls\n</bash>\n<bash>\ncmd: 'x\n</bash>")
    assert result.actions == [] and result.error.startswith("The body of <bash> is not valid YAML")


def test_xml_yaml_huge_bodies(xml):
    content = "x" * 1_000_000
    [action] = xml.parse(f"<write_file>\nfile_path: big.txt\ncontent: {content}\n</write_file>").actions
    assert len(action.args["content"]) == 1_000_000


def test_bash_only():
    protocol = make_protocol("bash_only")
    form = "Give exactly one command as <command>...</command>, or <done/> when the task is finished."
    assert protocol.parse("<think>x</think>Listing.<command>ls -la</command>").actions == [
        Action("bash", {"cmd": "ls -la", "timeout_secs": 60})
    ]
    assert protocol.parse("<done/>").actions == [Action("finish", {"message": ""})]
    assert (
        protocol.parse("<command>a</command><command>b</command>").error
        == f"Found 2 commands; only one is allowed per turn. {form}"
    )
    assert protocol.parse("hi").error == f"No command found. {form}"
    assert protocol.parse("<command>ls</command> <done/>").error == f"Both a command and <done/> found. {form}"
    assert protocol.parse("<command>echo 'a \"b\" ✓'</command>").actions[0].args["cmd"] == "echo 'a \"b\" ✓'"


TERMINUS_FORM = (
    'Respond with one JSON object: {"analysis": "...", "plan": "...", '
    '"commands": [{"keystrokes": "ls -la\\n", "duration": 0.1}], "task_complete": false}'
)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("no json", f"No JSON object found in your response. {TERMINUS_FORM}"),
        (
            '{"analysis": "a", "plan": "p" "commands": []}',
            f"Invalid JSON: Expecting ',' delimiter at line 1 column 31. {TERMINUS_FORM}",
        ),
        ('{"analysis": "a", "commands": []}', f"Missing required field(s): plan. {TERMINUS_FORM}"),
        ('{"analysis": "a", "plan": "p", "commands": "ls"}', f'"commands" must be an array. {TERMINUS_FORM}'),
        (
            '{"analysis": "a", "plan": "p", "commands": [{"keys": "x"}]}',
            f'Command 1 needs a "keystrokes" string. {TERMINUS_FORM}',
        ),
        (
            '{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "x", "duration": -1}]}',
            f'Command 1: "duration" must be a number of seconds >= 0. {TERMINUS_FORM}',
        ),
        (
            '{"analysis": "a", "plan": "p", "commands": []}',
            f'No commands and "task_complete" is not true. {TERMINUS_FORM}',
        ),
    ],
)
def test_terminus_json_feedback(text, error):
    assert make_protocol("terminus_json").parse(text).error == error


def test_terminus_json_commands_and_completion():
    protocol = make_protocol("terminus_json")
    reply = "Sure.\n" + json.dumps(
        {
            "analysis": "a",
            "plan": "p",
            "task_complete": True,
            "commands": [{"keystrokes": "cat > f <<'EOF'\nhé\nEOF\n", "duration": 0.5}, {"keystrokes": "C-c"}],
        }
    )
    assert protocol.parse(reply).actions == [
        Action("keys", {"keystrokes": "cat > f <<'EOF'\nhé\nEOF\n", "duration": 0.5}),
        Action("keys", {"keystrokes": "C-c", "duration": 1.0}),
        Action("finish", {"message": "a"}),
    ]
    [message] = protocol.initial_messages("Fix the bug.", "root@sandbox:/# ")
    assert message["role"] == "user"
    assert "Task Description:\nFix the bug.\n\nCurrent terminal state:\nroot@sandbox:/#" in message["content"]


def test_prompts_are_versioned_files():
    for name in ("xml_yaml", "bash_only", "terminus_json"):
        protocol = make_protocol(name)
        assert protocol.prompt_id == f"{name}.v1"
        assert protocol.prompt_text().strip()
    with pytest.raises(
        ValueError, match=r"agent.protocol='json' is not one of \['bash_only', 'terminus_json', 'xml_yaml'\]"
    ):
        make_protocol("json")

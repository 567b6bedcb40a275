"""The two install sets agree with pyproject's direct pins and differ where they must (torch)."""

import re
import tomllib

from terminal_rl.config import PROJECT_ROOT


def pins(path):
    return {m.group(1).lower().replace("_", "-"): m.group(2)
            for m in re.finditer(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", path.read_text(), re.M)}


def test_constraint_files_agree_with_direct_pins():
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    cpu, gpu = pins(PROJECT_ROOT / "constraints/cpu.txt"), pins(PROJECT_ROOT / "constraints/gpu.txt")
    extras = project["optional-dependencies"]
    common = project["dependencies"] + extras["train"]
    for requirement in common:
        if match := re.match(r"([A-Za-z0-9_.-]+)==(\S+)", requirement):
            name, version = match.group(1).lower().replace("_", "-"), match.group(2)
            assert cpu[name] == version, f"constraints/cpu.txt pins {name}=={cpu[name]}, pyproject says {version}"
            assert gpu[name] == version, f"constraints/gpu.txt pins {name}=={gpu[name]}, pyproject says {version}"
    assert cpu["torch"] == "2.13.0" and gpu["torch"] == "2.11.0"
    assert "vllm" in gpu and "vllm" not in cpu

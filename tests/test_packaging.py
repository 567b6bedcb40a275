"""The two install sets agree with pyproject's direct pins and differ where they must (torch)."""

import re
import tomllib

from terminal_rl.config import PROJECT_ROOT


def pins(path):
    return {
        m.group(1).lower().replace("_", "-"): m.group(2)
        for m in re.finditer(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", path.read_text(), re.M)
    }


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


def test_the_repository_needs_nothing_beside_it():
    """A clone alone runs: no setting points outside it, and the default task set ships in data/
    with the digest its README states."""
    import hashlib

    import yaml

    from terminal_rl.config import CONF_DIR, compose, project_path

    outside = []
    for path in CONF_DIR.rglob("*.yaml"):
        for line in path.read_text(encoding="utf-8").splitlines():
            value = line.split("#", 1)[0].split(":", 1)[-1].strip().strip("'\"")
            if value.startswith("../") or "/../" in value:
                outside.append(f"{path.relative_to(PROJECT_ROOT)}: {line.strip()}")
    assert outside == []
    task_file = project_path(compose("train").task_set.path)
    assert task_file.is_file() and PROJECT_ROOT in task_file.parents
    digest = hashlib.sha256(task_file.read_bytes()).hexdigest()
    assert digest in (PROJECT_ROOT / "data" / "README.md").read_text(encoding="utf-8")
    assert yaml.safe_load((CONF_DIR / "task_set" / "tbrl.yaml").read_text())["path"] == "data/terminal_bench_rl.csv"

"""The verifier on a task image whose Python is not the toolchain's: Debian trixie (Python 3.13, built
with debootstrap as the offline bases are), numpy and pytest installed by pip, in both formats (a
Terminal-Bench 1 task scored by weighted pytest, the same task exported to Harbor) and both engines.
Its tests import a compiled module and run an image tool (``python3 /app/check.py``, which imports
numpy too): the correct solution scores 1.0, a no-op 0.0, and attacks on the image's own runtime
(its numpy rewritten, its Python replaced) no more than the no-op."""

import asyncio
import dataclasses
import textwrap

import pytest

from terminal_rl.sandbox.attacks import attack_commands, liar, plant
from terminal_rl.sandbox.base_images import common_image
from terminal_rl.sandbox.docker_client import docker_client
from terminal_rl.sandbox.sandbox import SandboxFactory
from terminal_rl.sandbox.verifier import VERIFIER_UID, verify
from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.loaders.harbor import load_harbor
from terminal_rl.tasks.model import Difficulty, Environment, Task, VerifierKind
from tests.support import small_limits

pytestmark = [pytest.mark.docker, pytest.mark.both_engines]

TESTS = textwrap.dedent("""\
    import subprocess
    import sys

    import numpy as np


    def test_sum_is_right():
        assert sys.version_info[:2] == (3, 13) and np.__file__.startswith("/terminal_rl/image/usr/local/")
        assert int(np.loadtxt("/app/sum.txt")) == 15


    def test_the_image_tool_agrees():
        result = subprocess.run(["python3", "/app/check.py"], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
    """)
CHECK = "import sys, numpy; sys.exit(0 if int(numpy.loadtxt('/app/sum.txt')) == 15 else 1)"
SOLUTION = "echo 15 > /app/sum.txt"
NAMES = ["test_sum_is_right", "test_the_image_tool_agrees"]
LIE = liar(NAMES)
NUMPY = "/usr/local/lib/python3.13/dist-packages/numpy"
RUNTIME_ATTACKS = {
    "rewritten-numpy": [plant(f"{NUMPY}/__init__.py", "def loadtxt(*args, **kwargs):\n    return 15.0\n")],
    "replaced-python": [plant("/tmp/liar", LIE, "755"),
                        "for t in /usr/bin/python3.13 /usr/local/bin/pytest /bin/sh; do "
                        "cp /tmp/liar $(readlink -f $t).new && mv $(readlink -f $t).new $(readlink -f $t); done"],
}
ATTACKS = {name: attack_commands(NAMES, VERIFIER_UID)[name] for name in ("shadowed-tools", "planted-modules")}


@pytest.fixture(scope="module")
def trixie_twins(sandbox_config, tmp_path_factory, tasks):
    """The task (Terminal-Bench 1 kind) on a trixie image of this engine, and its Harbor export."""
    base_images = dataclasses.replace(sandbox_config.base_images, suite="trixie")
    base = common_image(docker_client(sandbox_config.docker_host), base_images, tmp_path_factory.mktemp("trixie"))
    dockerfile = (f"FROM {base}\nRUN pip install --break-system-packages --no-cache-dir pytest numpy\n"
                  f"WORKDIR /app\nRUN printf '%s\\n' \"{CHECK}\" > /app/check.py\n")
    task = Task(id="trixie-sum", title="Sum", prompt="Write 15 to /app/sum.txt.", difficulty=Difficulty.EASY,
                category="test", tags=(), environment=Environment(dockerfile=dockerfile),
                tests={"test_outputs.py": TESTS}, verifier=VerifierKind.TB1, test_weights=None, files={},
                limits=small_limits(build_timeout_sec=900), source="test", solution=SOLUTION)
    [harbor] = load_harbor(export_harbor(task, tmp_path_factory.mktemp("harbor")), task.limits).tasks
    return task, harbor


def verified(sandbox_config, run_context, twins, commands):
    """Both formats' verifications after ``commands`` ran as the agent (again before the second)."""
    async def main():
        async with SandboxFactory(sandbox_config, run_context) as factory:
            async with factory.task_sandbox(twins[0]) as sandbox:
                results = []
                for task in twins:
                    for command in commands:
                        await sandbox.run(command, timeout=60)
                    results.append(await verify(sandbox, task))
                return results

    return asyncio.run(main())


def test_correct_work_scores_one_and_a_no_op_zero(sandbox_config, run_context, trixie_twins):
    tb1, harbor = verified(sandbox_config, run_context, trixie_twins, [SOLUTION])
    assert tb1.score == harbor.score == 1.0, (tb1.log[-1500:], harbor.log[-1500:])
    assert harbor.task_reward == 1.0, "the task's own test.sh agrees"
    tb1, harbor = verified(sandbox_config, run_context, trixie_twins, [])
    assert tb1.score == harbor.score == 0.0 and not tb1.infrastructure_error and not harbor.infrastructure_error


@pytest.mark.parametrize("attack", sorted(RUNTIME_ATTACKS) + sorted(ATTACKS))
def test_an_attack_on_the_images_runtime_scores_no_more_than_a_no_op(sandbox_config, run_context, trixie_twins, attack):
    tb1, harbor = verified(sandbox_config, run_context, trixie_twins, {**RUNTIME_ATTACKS, **ATTACKS}[attack])
    assert (tb1.score, harbor.score) == (0.0, 0.0), (attack, tb1.reason, tb1.log[-800:], harbor.log[-800:])
    assert not tb1.infrastructure_error and not harbor.infrastructure_error, (tb1.reason, harbor.reason)

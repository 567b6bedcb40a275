"""The verifier on a task image whose Python is not the toolchain's: Debian trixie (Python 3.13, built
with debootstrap as the offline bases are), numpy and pytest installed by pip, in both formats (a
Terminal-Bench 1 task scored by weighted pytest, the same task exported to Harbor) and both engines.
Its tests import a compiled module and run an image tool (``python3 /app/check.py``, which imports
numpy too): the correct solution scores 1.0, a no-op 0.0, and attacks on the image's own runtime
(its numpy rewritten, its Python and shell replaced, its name service or loader configuration
planted) no more than the no-op, on both engines; so does every class of the attack suite (dockerd;
``test_verifier_attacks.py`` runs them on both engines on the offline base)."""

import asyncio
import dataclasses
import textwrap

import pytest

from terminal_rl.sandbox.images.base_images import common_image, common_tag
from terminal_rl.sandbox.images.distribution import archive_path, fetch, present, publish
from terminal_rl.sandbox.runtime.docker_client import docker_client
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.attacks import attack_commands, liar, plant
from terminal_rl.sandbox.verify.verifier import VERIFIER_UID, verify
from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.loaders.harbor import load_harbor
from terminal_rl.tasks.model import Difficulty, Environment, Task, VerifierKind
from tests.support import small_limits

pytestmark = pytest.mark.docker

TESTS = textwrap.dedent("""\
    import subprocess
    import sys

    import numpy as np


    def test_sum_is_right():
        assert sys.version_info[:2] == (3, 13) and np.__file__.startswith("/terminal_rl/image/usr/local/")
        assert int(np.loadtxt("/app/sum.txt")) == 15


    def test_the_image_tool_agrees():
        subprocess.run(["ls", "-l", "/app"], check=True, capture_output=True)  # looks owners up by name
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
    "replaced-python": [
        plant("/tmp/liar", LIE, "755"),
        "for t in /usr/bin/python3.13 /usr/local/bin/pytest /bin/sh; do "
        "cp /tmp/liar $(readlink -f $t).new && mv $(readlink -f $t).new $(readlink -f $t); done",
    ],
}
ATTACKS = attack_commands(NAMES, VERIFIER_UID)


@pytest.fixture(scope="module")
def trixie_twins(sandbox_config, tmp_path_factory, tasks):
    """The task (Terminal-Bench 1 kind) on a trixie image of this engine, and its Harbor export."""
    base_images = dataclasses.replace(sandbox_config.base_images, suite="trixie")
    # Built with debootstrap in the first engine, then handed to the other through an archive.
    client, tag = docker_client(sandbox_config.docker_host), common_tag(base_images)
    archive = tmp_path_factory.getbasetemp() / "trixie"
    if not present(client, [tag]) and archive_path(archive, tag).exists():
        fetch(client, {"base": tag}, archive)
    base = common_image(client, base_images, tmp_path_factory.mktemp("trixie"))
    publish(client, {"base": tag}, archive, "trixie")
    dockerfile = (
        f"FROM {base}\nRUN pip install --break-system-packages --no-cache-dir pytest numpy\n"
        f"WORKDIR /app\nRUN printf '%s\\n' \"{CHECK}\" > /app/check.py\n"
    )
    task = Task(
        id="trixie-sum",
        title="Sum",
        prompt="Write 15 to /app/sum.txt.",
        difficulty=Difficulty.EASY,
        category="test",
        tags=(),
        environment=Environment(dockerfile=dockerfile),
        tests={"test_outputs.py": TESTS},
        verifier=VerifierKind.TB1,
        test_weights=None,
        files={},
        limits=small_limits(build_timeout_sec=900),
        source="test",
        solution=SOLUTION,
    )
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


@pytest.mark.both_engines
def test_correct_work_scores_one_and_a_no_op_zero(sandbox_config, run_context, trixie_twins):
    tb1, harbor = verified(sandbox_config, run_context, trixie_twins, [SOLUTION])
    assert tb1.score == harbor.score == 1.0, (tb1.log[-1500:], harbor.log[-1500:])
    assert harbor.task_reward == 1.0, "the task's own test.sh agrees"
    tb1, harbor = verified(sandbox_config, run_context, trixie_twins, [])
    assert tb1.score == harbor.score == 0.0 and not tb1.infrastructure_error and not harbor.infrastructure_error


@pytest.mark.both_engines
@pytest.mark.parametrize("attack", sorted(RUNTIME_ATTACKS))
def test_an_attack_on_the_images_runtime_scores_no_more_than_a_no_op(sandbox_config, run_context, trixie_twins, attack):
    no_more_than_a_no_op(verified(sandbox_config, run_context, trixie_twins, RUNTIME_ATTACKS[attack]))


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_every_attack_class_scores_no_more_than_a_no_op_on_this_image(
    sandbox_config, run_context, trixie_twins, attack
):
    no_more_than_a_no_op(verified(sandbox_config, run_context, trixie_twins, ATTACKS[attack]))


def no_more_than_a_no_op(results) -> None:
    tb1, harbor = results
    assert (tb1.score, harbor.score) == (0.0, 0.0), (tb1.reason, tb1.log[-800:], harbor.log[-800:])
    assert not tb1.infrastructure_error and not harbor.infrastructure_error, (tb1.reason, harbor.reason)


def test_the_agents_libraries_never_enter_the_verifier(trixie_twins, with_evil_library):
    """A library of the agent's whose constructor claims the reward, planted where a program of the
    image would load it: a name-service module named by the agent's nsswitch.conf (the verifier's
    bash looks its uid up at start) in a directory the agent's ld.so.conf adds, the image's libz in
    a directory the loader searches by default, and a preload."""
    (tb1, harbor), marks = with_evil_library(
        trixie_twins,
        [
            "mkdir -p /opt/evil && cp /tmp/evil.so /opt/evil/libnss_evil.so.2",
            "cp /tmp/evil.so /usr/local/lib/libz.so.1",
            "echo /opt/evil > /etc/ld.so.conf.d/evil.conf && ldconfig",
            "sed -i 's/^passwd:.*/passwd: evil files/' /etc/nsswitch.conf && echo /tmp/evil.so > /etc/ld.so.preload",
            "getent passwd 10999; python3 -c 'import zlib'; true",
        ],
    )
    assert int(marks[-1]) > 0, "the image's own programs do load it: the attack is real"
    assert marks[:-1] == [], "no verifier process loaded it"
    assert (tb1.score, harbor.score) == (0.0, 0.0) and not tb1.infrastructure_error, (tb1.reason, tb1.log[-800:])

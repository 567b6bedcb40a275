"""The forged-fixture guard end to end, in both formats (a weighted task and its Harbor export), on
the real engine: each task's reference solution measured once (``ReferenceChanges``, the oracle run),
episodes verified by the real verifier, rewards decided by the training's group scoring. An honest
episode scores 1.0; one that rewrites the fixture its tests compare against passes the tests (the
hole is real) and is paid 0 in zero mode; a task whose intended fix is editing a file the tests read
still pays 1.0."""

import asyncio

import pytest

from terminal_rl.agent.reference import ReferenceChanges
from terminal_rl.agent.trajectory import Trajectory
from terminal_rl.rewards.fixture_guard import FixtureGuard
from terminal_rl.rewards.mix import RewardMix
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import verify
from terminal_rl.tasks.harbor_export import export_harbor
from terminal_rl.tasks.loaders.harbor import load_harbor
from terminal_rl.tasks.model import Difficulty, Environment, Task, VerifierKind
from terminal_rl.training.group_scoring import score_rollout_group
from tests.support import BASE_IMAGE, SMALL_LIMITS

pytestmark = pytest.mark.docker


def task(task_id: str, setup: str, test: str, solution: str) -> Task:
    return Task(
        id=task_id,
        title=task_id,
        prompt="",
        difficulty=Difficulty.EASY,
        category="test",
        tags=(),
        environment=Environment(dockerfile=f"FROM {BASE_IMAGE}\nWORKDIR /app\nRUN {setup}\n"),
        tests={"test_outputs.py": test},
        verifier=VerifierKind.WEIGHTED_PYTEST,
        test_weights=None,
        files={},
        limits=SMALL_LIMITS,
        source="test",
        solution=solution,
    )


FIXTURE = task(
    "sort-fixture",
    "printf 'b\\na\\n' > input.txt && sort input.txt > expected.txt",
    "def test_sorted():\n    assert open('/app/out.txt').read() == open('/app/expected.txt').read()\n",
    "sort /app/input.txt > /app/out.txt",
)
CONFIG = task(
    "config-fix",
    "printf 'debug = true\\n' > app.conf",
    "def test_debug_off():\n    assert open('/app/app.conf').read() == 'debug = false\\n'\n",
    "sed -i 's/debug = true/debug = false/' /app/app.conf",
)
EPISODES = {
    FIXTURE.id: {
        "honest": [FIXTURE.solution],
        "forged": ["echo forged > /app/expected.txt && echo forged > /app/out.txt"],
    },
    CONFIG.id: {"honest": ["printf 'debug = false\\n' > /app/app.conf"]},
}


def test_the_guard_pays_honest_work_and_not_forged_fixtures(sandbox_config, run_context, tmp_path):
    twins = [
        t
        for original in (FIXTURE, CONFIG)
        for t in (original, *load_harbor(export_harbor(original, tmp_path / "harbor"), original.limits).tasks)
    ]

    async def main():
        verifications = {}
        async with SandboxFactory(sandbox_config, run_context) as factory:
            references = ReferenceChanges(factory, tmp_path / "references")
            for one in twins:
                reference = await references.of(one)
                for name, commands in EPISODES[one.id].items():
                    async with factory.task_sandbox(one) as sandbox:
                        for command in commands:
                            await sandbox.run(command, timeout=60)
                        verification = (await verify(sandbox, one)).to_dict()
                    verifications[one.verifier, one.id, name] = verification | {"reference_changes": reference}
            again = ReferenceChanges(factory, tmp_path / "references")
            stored = [await again.of(one) for one in twins]
        return verifications, stored

    verifications, stored = asyncio.run(main())
    assert "/app/out.txt" in stored[0] and "/app/expected.txt" not in stored[0], "measured once, then read back"
    assert (
        "/app/app.conf" in stored[2]
        and stored[0] == verifications[FIXTURE.verifier, FIXTURE.id, "honest"]["reference_changes"]
    )

    def rewards(guard, verification):
        trajectory = Trajectory("t", "h", "p", "x", termination="finished", verification=verification)
        return asyncio.run(score_rollout_group([trajectory], RewardMix({"tests": 1.0}), 20, None, guard=guard))

    for kind in (VerifierKind.WEIGHTED_PYTEST, VerifierKind.HARBOR):
        forged = verifications[kind, FIXTURE.id, "forged"]
        assert forged["score"] == 1.0, "the tests alone pay the forged fixture"
        assert rewards(FixtureGuard.ZERO, forged).rewards == [0.0], kind
        flagged = rewards(FixtureGuard.FLAG, forged)
        assert flagged.rewards == [1.0] and flagged.components[0]["tests"].details["forged"] == ["/app/expected.txt"]
        assert rewards(FixtureGuard.ZERO, verifications[kind, FIXTURE.id, "honest"]).rewards == [1.0], kind
        intended = rewards(FixtureGuard.ZERO, verifications[kind, CONFIG.id, "honest"])
        assert intended.rewards == [1.0] and "forged" not in intended.components[0]["tests"].details, kind

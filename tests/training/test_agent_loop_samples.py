"""What the agent loop hands verl per session, checked against verl's own per-session advantage
(``trainer/ppo/v1/utils.py``: the last row of a session, at its first loss token, copied to every
row)."""

import pytest
import torch

from terminal_rl.agent.tokens import TokenSample

pytestmark = pytest.mark.verl


def sample(mask: list[int]) -> TokenSample:
    return TokenSample([1, 2], list(range(len(mask))), mask)


def verl_advantages(sessions: dict[str, tuple[list[TokenSample], float]]) -> dict[str, list[list[float]]]:
    """GRPO advantages per row as verl's multi-output path computes them for one group of sessions
    (name -> (rows, score)): ``compute_advantage_for_multi_trajectories``, keys ``{uid}_{session}_{i}``,
    each row's score on its last loss token."""
    import numpy as np
    from verl import DataProto
    from verl.trainer.ppo.core_algos import AdvantageEstimator
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    rows = [(name, i, row, score) for name, (session, score) in sessions.items() for i, row in enumerate(session)]
    width = max(len(row.response_mask) for _, _, row, _ in rows)
    mask = torch.tensor(
        [row.response_mask + [0] * (width - len(row.response_mask)) for _, _, row, _ in rows], dtype=torch.float32
    )
    rewards = torch.zeros_like(mask)
    for r, (_, _, row, score) in enumerate(rows):
        rewards[r, max([j for j, m in enumerate(row.response_mask) if m] or [0])] = score
    data = DataProto.from_dict(
        tensors={
            "token_level_rewards": rewards,
            "response_mask": mask,
            "responses": torch.zeros_like(mask, dtype=torch.long),
        },
        non_tensors={"uid": np.array(["group"] * len(rows), dtype=object)},
    )
    out = compute_advantage_for_multi_trajectories(
        data, [f"group_{n}_{i}" for n, i, _, _ in rows], AdvantageEstimator.GRPO
    ).batch["advantages"]
    result: dict[str, list[list[float]]] = {}
    for r, (name, _, row, _) in enumerate(rows):
        result.setdefault(name, []).append(out[r, : len(row.response_mask)].tolist())
    return result


def test_a_last_row_with_no_model_token_is_dropped_unless_it_is_the_only_one():
    from terminal_rl.integrations.verl.agent_loop import without_untrained_tail

    trained, closing_only = sample([1, 1, 0]), sample([0])
    assert without_untrained_tail([trained, closing_only]) == [trained]
    assert without_untrained_tail([trained, closing_only, sample([0, 0])]) == [trained]
    assert without_untrained_tail([closing_only]) == [closing_only], "a session keeps one row for verl's shapes"
    assert without_untrained_tail([closing_only, trained]) == [closing_only, trained]


def test_verl_gives_a_sessions_turns_its_advantage_only_without_the_untrained_last_row():
    """A passing session whose last per_turn row is only the closing token, beside a failing one:
    verl gives every turn of it 0 (the outside truth this fix answers); without that row, +0.71."""
    from terminal_rl.integrations.verl.agent_loop import without_untrained_tail

    passing, failing = [sample([1, 1, 0]), sample([0])], [sample([1, 1, 0])]
    raw = verl_advantages({"a": (passing, 1.0), "b": (failing, 0.0)})
    assert raw["a"][0] == [0.0, 0.0, 0.0], "verl reads the advantage at the empty last row"
    fixed = verl_advantages({"a": (without_untrained_tail(passing), 1.0), "b": (failing, 0.0)})
    assert fixed["a"][0][:2] == pytest.approx([0.7071, 0.7071], abs=1e-3) and fixed["b"][0][0] < 0


def test_a_workers_sandbox_factory_is_entered_once_however_many_sessions_start_together():
    import asyncio

    from terminal_rl.integrations.verl.agent_loop import _WorkerState

    class Factory:
        entered = 0

        async def __aenter__(self):
            Factory.entered += 1
            await asyncio.sleep(0.05)  # the toolchain check and lease: long enough for every session to arrive

    state = _WorkerState.__new__(_WorkerState)
    state.factory, state._started, state._starting = Factory(), False, None

    async def sessions():
        await asyncio.gather(*(state.start() for _ in range(64)))

    asyncio.run(sessions())
    assert Factory.entered == 1

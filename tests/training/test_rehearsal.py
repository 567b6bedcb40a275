"""The production rehearsal: the user's command at its own shapes (``experiment=rehearsal``: the
composed ``hardware=h100_4x8 curriculum=judge_anneal`` on one CPU), through verl's agent-loop
machinery (our TerminalAgentLoop, a real sandbox) with a fast scripted generator where the model
would be: 1,000-token turns whose commands print ~800 tokens. In both history modes an
episode reaches >= 90% of the turns its budget allows, its rows and tokens are preflight's estimate
within 10%, and the step's geometry is the user's (one optimizer step a step).

What only a GPU run can show: throughput, memory, vLLM's prefix cache and weight sync, FSDP
sharding across 32 GPUs, a whole step of 512 episodes (on two cores a step of the user's size takes
far longer than CI's minutes: one episode per mode is run, the step is its geometry). The CPU run in
test_cpu_training.py shows the trainer's checkpoint retention across a resume."""

import pytest

from terminal_rl.agent.config import AgentConfig
from terminal_rl.agent.tokens import History, bundled_qwen3_tokenizer_dir, load_tokenizer
from terminal_rl.integrations.verl.trainer import mini_batch_prompts
from terminal_rl.preflight.checks import step_costs
from terminal_rl.training.checkpoints import enforce_retention, saved_steps
from tests.agent.test_context_budget import budgeted_turns
from tests.training.conftest import train_config
from tests.training.test_token_fidelity import FakeServerManager, run_verl_loop

pytestmark = [pytest.mark.docker, pytest.mark.verl]

USER_COMMAND = ("hardware=h100_4x8", "curriculum=judge_anneal")
REHEARSAL = ("experiment=rehearsal",)
TURN_TOKENS = 1000
COMMAND = "<bash>\ncmd: 'seq 100000 100110'\n</bash>"  # 111 lines of 7 tokens: an ~800-token observation


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(str(bundled_qwen3_tokenizer_dir()))


class LongTurns(FakeServerManager):
    """Every turn: plain text the protocol ignores, then the command; exactly ``max_tokens`` or
    TURN_TOKENS tokens, whichever is fewer (a turn the budget cuts ends without its end-of-turn token)."""

    def __init__(self, tokenizer):
        super().__init__([])
        command = tokenizer.encode("\n" + COMMAND, add_special_tokens=False) + [tokenizer.eos_token_id]
        filler = tokenizer.encode(" ".join(f"note{n}" for n in range(TURN_TOKENS)), add_special_tokens=False)
        self.turn = filler[: TURN_TOKENS - len(command)] + command
        assert len(self.turn) == TURN_TOKENS

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        self.turns.append(self.turn[: sampling_params["max_tokens"]])
        return await super().generate(request_id, prompt_ids=prompt_ids, sampling_params=sampling_params, **kwargs)


def test_the_rehearsal_composes_the_user_commands_shapes():
    user, rehearsal = train_config(*USER_COMMAND), train_config(*REHEARSAL)
    for key in (
        "data.max_prompt_length",
        "data.max_response_length",
        "data.train_batch_size",
        "actor_rollout_ref.rollout.n",
        "actor_rollout_ref.actor.ppo_mini_batch_size",
        "agent.history",
        "agent.max_turns",
        "trainer.max_actor_ckpt_to_keep",
        "trainer.save_freq",
        "curriculum.kind",
        "curriculum.stages",
    ):
        assert _get(rehearsal, key) == _get(user, key), key
    assert (rehearsal.model.name, rehearsal.hardware.device) == (user.model.name, "cpu")


def _get(cfg, key):
    from omegaconf import OmegaConf

    return OmegaConf.select(cfg, key)


@pytest.mark.parametrize("history", ["append", "per_turn"])
def test_an_episode_at_production_lengths_runs_to_its_budget_as_preflight_estimates(tmp_path, tokenizer, history):
    server = LongTurns(tokenizer)
    outputs, prompts, _, _ = run_verl_loop(tmp_path, tokenizer, history, False, turns=server, shapes=REHEARSAL)
    cfg = train_config(*REHEARSAL, f"agent.history={history}")
    agent = AgentConfig.from_node(cfg.agent)
    turns = len(prompts)
    # The episode's shape as the server saw it: first prompt, turn, observation (append: the growth
    # of the prompt between turns beyond the turn itself).
    first = len(prompts[0])
    if history == "append":
        observation = (len(prompts[1]) - len(prompts[0])) - TURN_TOKENS
    else:  # per_turn renders the history: the same growth, the template's own rendering of it
        observation = (len(prompts[2]) - len(prompts[1])) - TURN_TOKENS
    assert 700 <= observation <= 900, observation
    allowed = budgeted_turns(agent, history, first, TURN_TOKENS, observation)
    assert turns >= 0.9 * allowed, f"{history}: {turns} of the {allowed} turns the budget allows"

    # preflight's own estimate (what it prints) for an episode of the shape measured here
    measured = [
        f"cost_estimate.first_prompt_tokens={first}",
        f"cost_estimate.turn_tokens={TURN_TOKENS}",
        f"cost_estimate.observation_tokens={observation}",
    ]
    estimate = step_costs(train_config(*REHEARSAL, f"agent.history={history}", *measured))[History(history)]
    rows, tokens = len(outputs), sum(len(o.prompt_ids) + len(o.response_ids) for o in outputs)
    assert rows == estimate.rows and abs(turns - estimate.turns) <= 1, (rows, turns, estimate)
    episodes = cfg.data.train_batch_size * cfg.actor_rollout_ref.rollout.n
    assert abs(episodes * tokens - episodes * estimate.tokens) <= 0.1 * episodes * estimate.tokens, (tokens, estimate)
    for output in outputs:  # every row within verl's lengths for the mode
        assert len(output.prompt_ids) <= cfg.data.max_prompt_length
        assert len(output.response_ids) <= cfg.data.max_response_length
    # A step of such episodes (32 x 16 of them, rows as measured) is one optimizer step: the trainer
    # sizes mini-batches in sessions, verl pads the batch to a multiple of the mini-batch.
    actor = cfg.actor_rollout_ref.actor
    mini_batches = cfg.data.train_batch_size // actor.ppo_mini_batch_size
    user = train_config(*USER_COMMAND)
    dp = (
        user.trainer.nnodes
        * user.trainer.n_gpus_per_node
        // user.actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size
    )
    n, step_rows = cfg.actor_rollout_ref.rollout.n, episodes * rows
    mini = mini_batch_prompts(step_rows, n, dp, mini_batches)
    assert mini_batches == 1 and -(-step_rows // (mini * n)) == 1, "one optimizer step a step"


def test_the_rehearsals_run_keeps_as_many_checkpoints_as_its_retention(tmp_path):
    """Every save of a run at the user's save_freq, each followed by the trainer's retention (as
    ``TerminalTrainer._save_checkpoint`` does after verl's save): the folders kept are the retention."""
    cfg = train_config(*REHEARSAL)
    keep, every = cfg.trainer.max_actor_ckpt_to_keep, cfg.trainer.save_freq
    for step in range(every, 6 * every + 1, every):
        (tmp_path / f"global_step_{step}" / "actor").mkdir(parents=True)
        (tmp_path / "latest_checkpointed_iteration.txt").write_text(str(step))
        enforce_retention(tmp_path, keep)
    assert keep == 2 and saved_steps(tmp_path) == [5 * every, 6 * every]

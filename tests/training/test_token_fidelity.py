"""Token fidelity: for the same scripted conversation in a real sandbox, verl's agent loop (our
TerminalAgentLoop, instantiated as verl does) and the evaluation's token-level driver send the model
exactly the same prompt ids every turn, and the loss mask covers exactly the model's own tokens.
Uses Qwen3's real tokenizer and chat template, with thinking on and off."""

import asyncio

import pytest
from omegaconf import OmegaConf

from terminal_rl.agent.episode import EpisodeLimits
from terminal_rl.agent.policies.token_policy import TokenPolicy, TokenPolicyConfig
from terminal_rl.agent.protocols import make_protocol
from terminal_rl.agent.runner import run_episode
from terminal_rl.agent.tokens import bundled_qwen3_tokenizer_dir, load_tokenizer
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.sandbox import SandboxFactory
from terminal_rl.tasks.prepare import prepare_task_set
from terminal_rl.tasks.task_set import task_set_config
from terminal_rl.tasks.verl_rows import tasks_from_parquet
from tests.fake_llm_server import FakeLLMServer
from tests.training.conftest import train_config

pytestmark = [pytest.mark.docker, pytest.mark.verl]

TURNS = ["<bash>\ncmd: 'ls /app && cat /app/data.csv'\n</bash>",
         "<think>\nthe sum is 425, I will write the script and then",  # cut off by the token cap: no end token
         "<write_file>\nfile_path: /app/parser.py\ncontent: |\n  print(425)\n</write_file>\n<finish>\nmessage: done\n</finish>"]


class FakeServerManager:
    """Stands in for verl's LLMServerClient: returns the scripted turns' token ids."""

    def __init__(self, turns):
        self.turns, self.prompts = list(turns), []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.prompts.append(list(prompt_ids))
        ids = self.turns.pop(0)
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed",
                           extra_fields={"global_steps": 1})


@pytest.mark.parametrize("enable_thinking", [True, False])
def test_verl_loop_and_evaluation_driver_build_identical_token_streams(enable_thinking, tmp_path):
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from terminal_rl.integrations.verl import agent_loop

    cfg = train_config("hardware=cpu", "model=tiny", "task_set=tbrl_smoke", f"run.output_root={tmp_path}",
                       "actor_rollout_ref.rollout.n=1", f"+data.apply_chat_template_kwargs.enable_thinking={enable_thinking}")
    OmegaConf.resolve(cfg)
    run = RunContext.from_config(cfg.run)
    prepared = prepare_task_set(task_set_config(cfg.task_set), run, cfg.agent.loop_name)
    task = next(t for t in tasks_from_parquet(prepared.train_file) if t.id == "csv-file-parsing-amount-sum")
    tokenizer = load_tokenizer(str(bundled_qwen3_tokenizer_dir()))
    eos = tokenizer.eos_token_id
    turns = [tokenizer.encode(TURNS[0], add_special_tokens=False) + [eos],
             tokenizer.encode(TURNS[1], add_special_tokens=False),
             tokenizer.encode(TURNS[2], add_special_tokens=False) + [eos]]

    # 1. verl's side: the agent loop exactly as verl's worker instantiates and runs it.
    agent_loop._STATE = None
    manager = FakeServerManager(turns)
    loop = agent_loop.TerminalAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=manager, tokenizer=tokenizer,
                                        processor=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data))
    extra_info = {"task_id": task.id, "content_hash": task.content_hash, "task_store": str(run.task_store_dir),
                  "split": "train", "difficulty": task.difficulty.value, "index": 0}
    output = asyncio.run(loop.run({"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True},
                                  extra_info=extra_info, uid="u1", session_id=0, global_steps=1))
    agent_loop._STATE = None

    # 2. evaluation's side: the token-level policy against a server returning the same ids.
    policy_config = TokenPolicyConfig(base_url="", model="policy", tokenizer=str(bundled_qwen3_tokenizer_dir()),
                                      enable_thinking=enable_thinking, temperature=1.0, max_retries=0, timeout_sec=30,
                                      concurrency=1)
    with FakeLLMServer([list(t) for t in turns]) as server:
        policy = TokenPolicy(TokenPolicyConfig(**{**policy_config.__dict__, "base_url": server.base_url}))
        limits = EpisodeLimits(cfg.agent.max_turns, cfg.agent.max_tokens_per_turn, cfg.agent.max_context_tokens,
                               cfg.agent.max_consecutive_parse_errors)

        async def evaluate():
            async with SandboxFactory(SandboxConfig.from_node(cfg.sandbox), run) as factory:
                return await run_episode(task, factory, make_protocol("xml_yaml"), policy, limits)

        trajectory = asyncio.run(evaluate())
    evaluation_prompts = [r["prompt"] for r in server.requests]

    assert trajectory.termination == "finished" and len(manager.prompts) == 3
    assert manager.prompts == evaluation_prompts, "per-turn prompt ids differ between training and evaluation"
    # The mask covers exactly the model's tokens: each turn's ids, in order, and nothing else.
    masked_in = [tok for tok, m in zip(output.response_ids, output.response_mask) if m == 1]
    assert masked_in == turns[0] + turns[1] + turns[2]
    assert output.prompt_ids == manager.prompts[0]
    assert output.prompt_ids + output.response_ids[: len(manager.prompts[2]) - len(output.prompt_ids)] == manager.prompts[2]
    think_empty = "<think>\n\n</think>\n\n"
    assert tokenizer.decode(output.prompt_ids).endswith(think_empty) is (not enable_thinking)

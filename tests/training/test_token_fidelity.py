"""Token fidelity of the training path, against outside references: verl's own agent-loop machinery
runs our TerminalAgentLoop (instantiated as verl's worker does) in a real sandbox, and what it returns
is held against Qwen3's chat template and against what a chat API is sent (policy=litellm)."""

import asyncio

import pytest
from omegaconf import OmegaConf

from terminal_rl.agent.context import ContextConfig, shown_turns
from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, LiteLLMPolicy
from terminal_rl.agent.policies.token_policy import TokenPolicy, TokenPolicyConfig
from terminal_rl.agent.tokens import (
    ChatTokenizer,
    as_seen,
    bundled_qwen3_tokenizer_dir,
    drop_earlier_reasoning,
    load_tokenizer,
    prompt_digest,
)
from terminal_rl.agent.trajectory import Turn
from terminal_rl.run_context import RunContext
from terminal_rl.tasks.prepare import prepare_task_set
from terminal_rl.tasks.task_set import task_set_config
from terminal_rl.tasks.verl_rows import tasks_from_parquet
from terminal_rl.training.step_ledger import StepLedger
from tests.fake_llm_server import FakeLLMServer
from tests.support import LocalActor
from tests.training.conftest import train_config

pytestmark = [pytest.mark.docker, pytest.mark.verl]

TASK = "csv-file-parsing-amount-sum"
# Model turns; the second is cut off by the token cap (no end-of-turn token).
TURNS = [
    "<bash>\ncmd: 'ls /app && cat /app/data.csv'\n</bash>",
    "<think>\nthe sum is 425, I will write the script and then",
    "<think>\nWrite it.\n</think>\n\n<write_file>\nfile_path: /app/parser.py\ncontent: |\n  print(425)\n</write_file>",
    "<finish>\nmessage: done\n</finish>",
]


class FakeServerManager:
    """Stands in for verl's LLMServerClient: returns the scripted turns' token ids."""

    def __init__(self, turns):
        self.turns, self.prompts = list(turns), []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.prompts.append(list(prompt_ids))
        ids = self.turns.pop(0)
        if isinstance(ids, Exception):
            raise ids
        return TokenOutput(
            token_ids=ids,
            log_probs=[-0.5] * len(ids),
            stop_reason="completed",
            extra_fields=self.versions(len(self.prompts)),
        )

    @staticmethod
    def versions(turn: int) -> dict:
        """Turn n written by weights version n; the first one resumed across an update (0 then 1), as
        verl's async client reports it (``llm_server.py`` l. 346-349)."""
        if turn == 1:
            return {"global_steps": 1, "min_global_steps": 0, "max_global_steps": 1}
        return {"global_steps": turn}


def scripted_ids(tokenizer):
    eos = tokenizer.eos_token_id
    return [tokenizer.encode(t, add_special_tokens=False) + ([] if n == 1 else [eos]) for n, t in enumerate(TURNS)]


def run_verl_loop(tmp_path, tokenizer, history, thinking, turns=None, shapes=("hardware=cpu", "model=tiny")):
    """One training trajectory through TerminalAgentLoop, on a smoke task, at ``shapes`` (overrides):
    (outputs, prompts the server saw, the step ledger, the rollout log files)."""
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from terminal_rl.integrations.verl import agent_loop

    cfg = train_config(
        *shapes,
        "task_set=tbrl_smoke",
        f"run.output_root={tmp_path}",
        "actor_rollout_ref.rollout.n=1",
        f"agent.history={history}",
        f"+data.apply_chat_template_kwargs.enable_thinking={thinking}",
    )
    OmegaConf.resolve(cfg)
    run = RunContext.from_config(cfg.run)
    prepared = prepare_task_set(task_set_config(cfg.task_set), run, cfg.agent.loop_name)
    task = next(t for t in tasks_from_parquet(prepared.train_file) if t.id == TASK)
    agent_loop._STATE = None
    manager = turns if isinstance(turns, FakeServerManager) else FakeServerManager(turns or scripted_ids(tokenizer))
    loop = agent_loop.TerminalAgentLoop(
        trainer_config=DictConfigWrap(cfg),
        server_manager=manager,
        tokenizer=tokenizer,
        processor=None,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(cfg.data),
    )
    ledger = StepLedger(max_refills=0)
    loop.state.ledger = LocalActor(ledger)
    extra_info = {
        "task_id": task.id,
        "content_hash": task.content_hash,
        "task_store": str(run.task_store_dir),
        "split": "train",
        "difficulty": task.difficulty.value,
        "index": 0,
    }
    outputs = asyncio.run(
        loop.run(
            {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True},
            extra_info=extra_info,
            uid="u1",
            session_id=0,
            global_steps=3,
        )
    )
    agent_loop._STATE = None
    trajectories = [line for line in (run.log_dir / "rollouts").glob("train_step000003.*.jsonl")]
    return outputs, manager.prompts, ledger, trajectories


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(str(bundled_qwen3_tokenizer_dir()))


def template(tokenizer, messages, thinking):
    return tokenizer.apply_chat_template(
        messages, tokenize=True, add_generation_prompt=True, enable_thinking=thinking, return_dict=False
    )


def history_before(trajectory, turn: int) -> list[dict]:
    """The messages the model had seen before writing turn ``turn`` (0-based)."""
    assistant = [i for i, m in enumerate(trajectory["messages"]) if m["role"] == "assistant"]
    return trajectory["messages"][: assistant[turn]]


@pytest.mark.parametrize("thinking", [True, False], ids=["thinking", "no-thinking"])
def test_verl_loop_append_stream_is_the_template(tmp_path, tokenizer, thinking):
    import json

    outputs, prompts, ledger, logs = run_verl_loop(tmp_path, tokenizer, "append", thinking)
    trajectory = json.loads(logs[0].read_text().splitlines()[0])
    chat = ChatTokenizer(tokenizer, thinking)
    assert trajectory["termination"] == "finished" and len(prompts) == 4 and len(outputs) == 1
    for turn, sent in enumerate(prompts):
        expected = template(tokenizer, history_before(trajectory, turn), thinking)
        assert drop_earlier_reasoning(sent, chat) == drop_earlier_reasoning(expected, chat), f"turn {turn}"
    output = outputs[0]
    assert output.prompt_ids + output.response_ids[: len(prompts[3]) - len(output.prompt_ids)] == prompts[3]
    model = [t for t, m in zip(output.response_ids, output.response_mask) if m == 1]
    assert model == [t for turn in scripted_ids(tokenizer) for t in turn], "the loss mask is the model's tokens"
    assert output.extra_fields["min_global_steps"] == 0 and output.extra_fields["max_global_steps"] == 4, (
        "weights versions of the first and the last turn"
    )
    [logged] = trajectory["metadata"]["samples"]
    assert logged["weights_versions"] == [0, 4], "and in the rollout log"
    assert logged["turn_versions"] == [[0, 1], [2, 2], [3, 3], [4, 4]], "each turn's own, the resumed one spanning two"
    assert output.response_logprobs[: len(scripted_ids(tokenizer)[0])] == [-0.5] * len(scripted_ids(tokenizer)[0])
    recorded = ledger.take_consumed(set())
    assert [(g.task_id, g.masked) for g in recorded] == [(TASK, False)], "the group reached the step ledger"


def test_verl_loop_per_turn_outputs_are_what_a_chat_api_is_sent(tmp_path, tokenizer, tasks, episode):
    """per_turn: one output per model turn, each prompt exactly the template's rendering of the
    messages policy=litellm sends for the same episode (vLLM renders them with the same template)."""
    import json

    outputs, prompts, _, logs = run_verl_loop(tmp_path, tokenizer, "per_turn", True)
    trajectory = json.loads(logs[0].read_text().splitlines()[0])
    assert len(outputs) == 4 and [o.prompt_ids for o in outputs] == prompts
    # The rollout log keeps each row's prompt as its length and digest (not the whole history), and
    # the template's rendering of the logged messages is that prompt.
    chat = ChatTokenizer(tokenizer, True)
    head = next(i for i, m in enumerate(trajectory["messages"]) if m["role"] == "assistant")
    turns = [Turn(**t) for t in trajectory["turns"]]
    shown = shown_turns(ContextConfig(), trajectory["messages"], turns, head)
    for turn, (logged, sent) in enumerate(zip(trajectory["metadata"]["samples"], prompts)):
        assert "prompt_ids" not in logged and logged["turn"] == turn
        assert (logged["prompt_tokens"], logged["prompt_sha256"]) == (len(sent), prompt_digest(sent))
        assert chat.prompt_ids(as_seen(shown[turn][0])) == sent
    rewards = {o.reward_score for o in outputs}
    assert len(rewards) == 1 and trajectory["termination"] == "finished", "every row carries the trajectory's reward"
    texts = [tokenizer.decode(ids, skip_special_tokens=True) for ids in scripted_ids(tokenizer)]
    with FakeLLMServer(texts) as server:
        chat_api = episode(
            tasks[TASK],
            "xml_yaml",
            LiteLLMPolicy(
                LiteLLMConfig(
                    model="openai/policy",
                    base_url=server.base_url,
                    api_key_env="",
                    temperature=1.0,
                    max_retries=0,
                    timeout_sec=30,
                    concurrency=1,
                )
            ),
        )
    assert chat_api.termination == "finished"
    sent_messages = [r["messages"] for r in server.requests]
    assert [template(tokenizer, m, True) for m in sent_messages] == prompts
    # The evaluation's token policy in per_turn mode sends the same ids (vLLM /v1/completions).
    with FakeLLMServer([list(ids) for ids in scripted_ids(tokenizer)]) as server:
        token_policy = TokenPolicy(
            TokenPolicyConfig(
                base_url=server.base_url,
                model="policy",
                tokenizer=str(bundled_qwen3_tokenizer_dir()),
                enable_thinking=True,
                temperature=1.0,
                top_p=1.0,
                top_k=0,
                max_retries=0,
                timeout_sec=30,
                concurrency=1,
            ),
            history="per_turn",
        )
        assert episode(tasks[TASK], "xml_yaml", token_policy).termination == "finished"
    assert [r["prompt"] for r in server.requests] == prompts


@pytest.mark.parametrize("crash_at", [0, 1], ids=["first-turn", "second-turn"])
def test_a_crashing_model_server_masks_the_session_and_never_raises(tmp_path, tokenizer, crash_at):
    import json

    turns = scripted_ids(tokenizer)[:crash_at] + [RuntimeError("connection reset by the model server")]
    outputs, prompts, ledger, logs = run_verl_loop(tmp_path, tokenizer, "append", True, turns)
    trajectory = json.loads(logs[0].read_text().splitlines()[0])
    assert trajectory["termination"] == "policy_error" and "connection reset" in trajectory["termination_detail"]
    assert trajectory["metadata"]["masked"], "an infrastructure failure masks its group"
    [output] = outputs
    assert output.response_ids and set(output.response_mask) == {0}, "no loss token, but valid shapes"
    assert len(output.response_logprobs) == len(output.response_ids)
    assert [g.masked for g in ledger.take_consumed(set())] == [True]

"""The context budget at the user's own shapes: the composed user command
(``hardware=h100_4x8 curriculum=judge_anneal``, Qwen3's real tokenizer and chat template), 1,000-token
model turns answered by ~800-token observations from a ~1,500-token first prompt. Each history mode
applies its own rule, and an episode reaches at least 90% of the turns its context budget allows;
evaluation's policies apply the same budget as training."""

import asyncio

import pytest

from terminal_rl.agent.config import AgentConfig
from terminal_rl.agent.policies import make_policy
from terminal_rl.agent.policies.base import ContextExhausted, Reply
from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, LiteLLMPolicy
from terminal_rl.agent.policies.token_session import Generation, TokenSession
from terminal_rl.agent.tokens import (
    ChatTokenizer,
    SequenceLimits,
    bundled_qwen3_tokenizer_dir,
    load_tokenizer,
    turn_room,
)
from terminal_rl.config import compose

USER_COMMAND = ["hardware=h100_4x8", "curriculum=judge_anneal"]
TURN_TOKENS, OBSERVATION_TOKENS, FIRST_PROMPT_TOKENS = 1000, 800, 1500


@pytest.fixture(scope="module")
def chat():
    return ChatTokenizer(load_tokenizer(str(bundled_qwen3_tokenizer_dir())), enable_thinking=False)


def budgeted_turns(agent: AgentConfig, history: str, first: int, turn: int, observation: int) -> int:
    """Turns the context budget allows: n turns and n - 1 observations after the first prompt within
    max_context_tokens, less what each mode's fixed sample shape (verl pads prompt and response to
    fixed lengths) keeps: append keeps max_prompt_tokens for the first prompt whatever its length,
    per_turn keeps max_tokens_per_turn for the last turn whatever it writes."""
    context, cap = agent.limits.max_context_tokens, agent.limits.max_tokens_per_turn
    if history == "append":
        return (context - max(first, agent.max_prompt_tokens) + observation) // (turn + observation)
    return (context - cap - first) // (turn + observation) + 1


def agent_of(overrides: list[str]) -> AgentConfig:
    return AgentConfig.from_node(compose("train", USER_COMMAND + overrides).agent)


def text_of(chat: ChatTokenizer, tokens: int, stem: str) -> str:
    """Text of about ``tokens`` tokens (each "w<n>" word is a few tokens; trimmed to the count)."""
    ids = chat.encode(" ".join(f"{stem}{n}" for n in range(tokens)))[:tokens]
    return chat.decode(ids)


def long_episode(chat: ChatTokenizer, history: str, limits: SequenceLimits, max_tokens_per_turn: int):
    """Drive a session as ``run_episode`` does until the budget ends it: (turns, context tokens at the
    end, the first prompt's tokens, the observation's tokens as the template renders them)."""
    turn = chat.encode(text_of(chat, TURN_TOKENS - 1, "t")) + [chat.eos_id]
    observation = [{"role": "user", "content": text_of(chat, OBSERVATION_TOKENS - 10, "o")}]
    messages = [
        {"role": "system", "content": text_of(chat, FIRST_PROMPT_TOKENS - 30, "s")},
        {"role": "user", "content": "Fix the build."},
    ]
    asked: list[int] = []

    async def generate(prompt_ids, max_tokens):
        asked.append(max_tokens)
        return Generation(turn[:max_tokens])

    async def episode():
        session, turns = TokenSession(chat, history, generate, limits), 0
        while True:
            try:
                reply = await session.reply(messages, max_tokens_per_turn)
            except ContextExhausted:
                return session, turns
            turns += 1
            messages.extend([{"role": "assistant", "content": reply.text}, *observation])

    session, turns = asyncio.run(episode())
    assert all(n >= 1 for n in asked)
    return turns, session, len(chat.prompt_ids(messages[:2])), len(chat.observation_ids(observation))


@pytest.mark.parametrize("history", ["append", "per_turn"])
def test_an_episode_reaches_90_percent_of_the_turns_its_budget_allows(chat, history):
    agent = agent_of([f"agent.history={history}"])
    turns, session, first, observation = long_episode(
        chat, history, agent.sequence_limits, agent.limits.max_tokens_per_turn
    )
    allowed = budgeted_turns(agent, history, first, TURN_TOKENS, observation)
    assert allowed >= 16, "the shapes are the issue's: about 17 turns fit in 32k"
    assert turns >= 0.9 * allowed, f"{history}: {turns} of {allowed} turns"
    # Every model token lies within verl's lengths for this mode (what follows the last turn is
    # mask 0, cut at the response length by the agent loop).
    limits = agent.sequence_limits
    for sample in session.history.samples:
        assert len(sample.prompt_ids) <= limits.prompt_tokens
        assert sample.turn_spans[-1][1] <= limits.response_tokens


def test_append_counts_only_the_first_prompt_against_the_prompt_length(chat):
    limits = agent_of(["agent.history=append"]).sequence_limits
    assert limits == SequenceLimits(4096, 28672)
    # Far past 4,096 tokens of context, the turn still runs: only the response length bounds it.
    assert turn_room("append", limits, 1500, 1500 + 20_000) == 28672 - 20_000
    with pytest.raises(ContextExhausted, match="response length 28672"):
        turn_room("append", limits, 1500, 1500 + 28672)
    with pytest.raises(ContextExhausted, match="first prompt of 5000 tokens exceeds 4096"):
        turn_room("append", limits, 5000, 5000)


def test_per_turn_counts_the_rendered_history_against_the_prompt_length():
    limits = agent_of(["agent.history=per_turn"]).sequence_limits
    assert limits == SequenceLimits(32768 - 4000, 4000)
    assert turn_room("per_turn", limits, 1500, 28768) == 4000
    with pytest.raises(ContextExhausted, match="prompt of 28769 tokens exceeds 28768"):
        turn_room("per_turn", limits, 1500, 28769)


@pytest.mark.parametrize("history", ["append", "per_turn"])
@pytest.mark.parametrize(
    ("train", "model"), [(USER_COMMAND, []), (["hardware=cpu", "model=tiny"], ["model=tiny"])], ids=["qwen3_8b", "tiny"]
)
def test_evaluation_applies_trainings_budget_for_the_same_preset(history, train, model):
    """``python -m terminal_rl.evaluate`` gives its policies the lengths the training run of the same
    model preset gives verl."""
    trained = compose("train", [*train, f"agent.history={history}"])
    training_lengths = SequenceLimits(trained.data.max_prompt_length, trained.data.max_response_length)
    for policy in (["policy=token", f"policy.tokenizer={bundled_qwen3_tokenizer_dir()}"], ["policy=litellm"]):
        evaluate = compose("evaluate", [*model, f"agent.history={history}", *policy])
        made = make_policy(evaluate.policy, AgentConfig.from_node(evaluate.agent))
        assert (made.history, made.limits) == (history, training_lengths), policy
        if policy[0] == "policy=token":
            assert made.session(None)._limits == training_lengths


class _CountingServer(LiteLLMPolicy):
    """litellm's reply as an OpenAI-compatible server counts it (``usage.prompt_tokens``)."""

    def __init__(self, history, limits, prompts):
        config = LiteLLMConfig("openai/test-model", "http://127.0.0.1:9/v1", "", 0.0, 0, 1.0, 1)
        super().__init__(config, history, limits)
        self.prompts, self.asked = list(prompts), []

    async def complete(self, messages, max_tokens):
        self.asked.append(max_tokens)
        return Reply(
            "x",
            completion_tokens=100,
            context_tokens=self.prompts[0] + 100,
            prompt_tokens=self.prompts.pop(0),
            cost_usd=0.25,
        )


def conversation(turns: int) -> list[dict[str, str]]:
    """The messages of a turn: the task, then each earlier reply ("x") and its observation."""
    messages = [{"role": "user", "content": "task"}]
    for n in range(turns - 1):
        messages += [{"role": "assistant", "content": "x"}, {"role": "user", "content": f"observation {n}"}]
    return messages


def test_litellm_ends_the_episode_where_training_would_by_the_servers_counts():
    limits = SequenceLimits(4096, 1000)
    server = _CountingServer("append", limits, [500, 900, 1600])
    session = server.session(None)
    asyncio.run(session.reply(conversation(1), 4000))
    asyncio.run(session.reply(conversation(2), 4000))
    assert server.asked == [1000, 1000 - (600 - 500)], "bounded by what the server counted before the observation"
    with pytest.raises(ContextExhausted, match="response length 1000"):
        asyncio.run(
            session.reply(conversation(3), 4000)
        )  # its prompt holds 1,100 response tokens: training would not run it
    per_turn = _CountingServer("per_turn", SequenceLimits(1000, 300), [500, 1200])
    session = per_turn.session(None)
    asyncio.run(session.reply(conversation(1), 4000))
    with pytest.raises(ContextExhausted, match="prompt of 1200 tokens exceeds 1000") as refused:
        asyncio.run(session.reply(conversation(2), 4000))
    assert per_turn.asked == [300, 300], "every turn, the first too, within the response length"
    assert refused.value.cost_usd == 0.25, "the refused reply's cost is still counted"


def test_a_rewritten_context_starts_a_new_segment_for_an_api_model():
    """agent.context's rewrite (here a summary hand-off) restarts append's count from the new prompt, as
    the token session's new segment does; without it the third turn would be refused."""
    server = _CountingServer("append", SequenceLimits(4096, 1000), [500, 1400, 600])
    session = server.session(None)
    asyncio.run(session.reply(conversation(1), 4000))
    asyncio.run(session.reply(conversation(2), 4000))
    handed_off = [*conversation(1), {"role": "assistant", "content": "summary"}, {"role": "user", "content": "go on"}]
    asyncio.run(session.reply(handed_off, 4000))
    assert server.asked == [1000, 900, 1000]

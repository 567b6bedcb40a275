"""The teacher-forced margin of a decision: tokens from our training rendering, log-probabilities
checked against Hugging Face's own cross-entropy of the whole sequences."""

import pytest
import torch

from terminal_rl.agent.tokens import ChatTokenizer, bundled_qwen3_tokenizer_dir, load_tokenizer, replay
from terminal_rl.training.action_margin import decision, margins, right_log_probs

WRONG, RIGHT = "<done/>", "<command>mkdir -p /app/out</command>"
PLAYED = [
    {"role": "system", "content": "You run commands."},
    {"role": "user", "content": "One file in /app/inbox holds a word. Write that word to /app/out/note.txt."},
    {"role": "assistant", "content": "<command>ls /app/inbox</command>"},
    {"role": "user", "content": "memo_706.txt\n[exit code: 0]"},
    {"role": "assistant", "content": "<command>echo maple > /app/out/note.txt</command>"},
    {"role": "user", "content": "bash: line 1: /app/out/note.txt: No such file or directory\n[exit code: 1]"},
    {"role": "assistant", "content": WRONG},
]


@pytest.fixture(scope="module")
def chat():
    return ChatTokenizer(load_tokenizer(str(bundled_qwen3_tokenizer_dir())), enable_thinking=False)


def sequence(chat, messages):
    sample = replay("append", chat, messages).samples[-1]
    return sample.prompt_ids + sample.response_ids


def test_a_decision_is_the_trained_tokens_of_both_replies_split_where_they_differ(chat):
    made = decision(PLAYED, RIGHT, chat, "append")
    assert made.prefix + made.wrong == sequence(chat, PLAYED)
    assert made.prefix + made.right == sequence(chat, [*PLAYED[:-1], {"role": "assistant", "content": RIGHT}])
    assert made.right[-1] == made.wrong[-1] == chat.eos_id and made.right[0] != made.wrong[0]
    # After the failed write's observation and the generation prompt, the two replies' shared "<".
    shown = chat.tokenizer.decode(made.prefix)
    assert shown.endswith(
        "No such file or directory\n[exit code: 1]<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<"
    )
    with pytest.raises(ValueError, match="renders as the conversation's own last turn"):
        decision(PLAYED, WRONG, chat, "append")
    with pytest.raises(ValueError, match="needs a conversation whose last model turn"):
        decision(PLAYED[:2], RIGHT, chat, "append")


def test_the_margin_and_the_right_actions_log_probability_match_hugging_faces_cross_entropy(chat):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=len(chat.tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=512,
    )
    model = Qwen3ForCausalLM(config).eval()
    made = decision(PLAYED, RIGHT, chat, "append")

    def total_log_prob(ids):  # HF's mean cross-entropy over every next-token prediction, summed back
        ids = torch.tensor([ids])
        with torch.no_grad():
            return -float(model(input_ids=ids, labels=ids).loss) * (ids.shape[1] - 1)

    expected = total_log_prob(made.prefix + made.right) - total_log_prob(made.prefix + made.wrong)
    [margin] = margins(model, [made])
    assert margin == pytest.approx(expected, abs=1e-3)
    assert margin != pytest.approx(0.0, abs=1e-3), "a random model prefers one reply"
    # The right action's own probability after the prefix: the whole sequence's less the prefix's.
    [right] = right_log_probs(model, [made])
    assert right == pytest.approx(total_log_prob(made.prefix + made.right) - total_log_prob(made.prefix), abs=1e-3)
    assert right < 0

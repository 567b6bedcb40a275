"""Fixtures the datasets tests share with the token-fidelity tests."""

from tests.training.test_token_fidelity import tokenizer  # noqa: F401 (the Qwen3 tokenizer fixture)

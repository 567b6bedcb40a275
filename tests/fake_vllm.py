"""A stand-in for vLLM's OpenAI server in tests (no GPU here): takes the arguments ``serve=vllm``
passes, answers ``GET /v1/models``, and replies to every token-level completion with the tokens of a
turn that finishes the episode (xml_yaml protocol).

    python -m tests.fake_vllm --model TOKENIZER_DIR --served-model-name policy --port 8000 [vLLM args]
"""

import argparse
import threading

from terminal_rl.agent.tokens import load_tokenizer
from tests.fake_llm_server import FakeLLMServer

FINISH = "<finish>\nmessage: done\n</finish>"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    args, _ = parser.parse_known_args()
    tokenizer = load_tokenizer(args.model)
    reply = tokenizer.encode(FINISH, add_special_tokens=False) + [tokenizer.eos_token_id]
    with FakeLLMServer(lambda body: reply, port=args.port):
        threading.Event().wait()


if __name__ == "__main__":
    main()

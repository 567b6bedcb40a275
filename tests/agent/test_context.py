"""Context management (``agent.context``): the view's rules in milliseconds, then long episodes in real
sandboxes with each policy in both history modes, checked turn by turn against Qwen3's chat template:
every prompt the model was sent is the template's rendering of exactly the messages it was shown, and
every training sample is one of those prompts plus the tokens generated after it."""

from __future__ import annotations

import importlib.util

import pytest

from terminal_rl.agent.context import ContextConfig, ContextView, elision_boundary, elision_stub, prompt, shown_turns
from terminal_rl.agent.tokens import (
    ChatTokenizer,
    as_seen,
    bundled_qwen3_tokenizer_dir,
    drop_earlier_reasoning,
    load_tokenizer,
)
from terminal_rl.config import PROJECT_ROOT
from terminal_rl.datasets.records import token_rows, training_samples
from terminal_rl.datasets.sources import Episode

spec = importlib.util.spec_from_file_location("context_bench", PROJECT_ROOT / "benchmarks" / "context_management.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

HEAD = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
CAT = [{"tool": "bash", "args": {"cmd": "cat /app/ledger/part_01.txt"}}]


def observed(view: ContextView, turns: int) -> None:
    for n in range(turns):
        view.observe(f"reply {n}", {"role": "user", "content": f"line a {n}\nline b {n}"}, CAT)


def test_elision_moves_in_blocks_and_keeps_the_replies():
    assert [elision_boundary(n, 4, 4) for n in (3, 4, 7, 8, 11, 12)] == [0, 0, 0, 4, 4, 8]
    view = ContextView(ContextConfig("elide", keep_turns=4, block_turns=4), HEAD)
    observed(view, 7)
    assert view.segments == 1 and view.messages[3]["content"] == "line a 0\nline b 0", "7 turns: nothing elided"
    observed(view, 1)
    messages = view.messages
    assert view.segments == 2 and view.elided_turns == 4
    assert messages[3]["content"] == "[output of `cat /app/ledger/part_01.txt` elided: 2 lines]"
    assert [m["content"] for m in messages if m["role"] == "assistant"] == [f"reply {n}" for n in range(7)] + [
        "reply 0"
    ]
    assert messages[11]["content"] == "line a 4\nline b 4", "the last keep_turns (and the block's rest) stay"
    assert elision_stub("x", [{"tool": "write_file", "args": {}}]) == "[output of write_file elided: 1 lines]"


def test_a_summary_hands_off_to_system_task_summary():
    config = ContextConfig("summarize", summarize_at=0.5)
    view = ContextView(config, HEAD)
    assert not view.summary_due(900, 1000), "no turn yet: nothing to summarise"
    observed(view, 2)
    assert not view.summary_due(499, 1000) and view.summary_due(500, 1000)
    assert view.summary_request()["content"].startswith("Your context is nearly full.")
    view.handoff("I did two things.")
    assert view.messages == [
        *HEAD,
        {"role": "assistant", "content": "I did two things."},
        {"role": "user", "content": prompt("summary_handoff", "v1")},
    ]
    assert (view.summaries, view.segments) == (1, 2)
    with pytest.raises(ValueError, match="summarize_at"):
        ContextConfig("summarize", summarize_at=1.5)
    with pytest.raises(ValueError, match="not one of"):
        ContextConfig("truncate")


def test_a_stub_names_what_ran_even_when_nothing_did():
    assert elision_stub("a\nb", [{"tool": "bash", "args": {"cmd": "  "}}]) == "[output of bash elided: 2 lines]"
    keys = [{"tool": "keys", "args": {"keystrokes": "make test\n", "duration": 1.0}}]
    assert elision_stub("x", keys) == "[output of `make test` elided: 1 lines]"
    assert elision_stub("format error", []) == "[output of an unparsed reply elided: 1 lines]"


def test_replies_with_reasoning_or_cut_by_the_cap_continue_and_a_rewrite_starts_a_segment():
    """The token session tells a continuation from a rewrite on what the driver shows it: replies as
    decoded (think block included, or cut without their end-of-turn token) continue the history."""
    import asyncio

    from terminal_rl.agent.policies.token_session import Generation, TokenSession

    chat = ChatTokenizer(load_tokenizer(str(bundled_qwen3_tokenizer_dir())), enable_thinking=True)
    turns = [
        chat.encode("<think>\nplan\n</think>\n\n<bash>\ncmd: ls\n</bash>") + [chat.eos_id],
        chat.encode("<think>\nalmost"),  # cut by the token cap
        chat.encode("<bash>\ncmd: pwd\n</bash>") + [chat.eos_id],
        chat.encode("<finish>\nmessage: done\n</finish>") + [chat.eos_id],
    ]

    async def generate(prompt_ids, max_tokens):
        return Generation(turns.pop(0))

    session = TokenSession(chat, "append", generate)
    messages = [{"role": "user", "content": "go"}]
    for observation in ("one", "two"):
        reply = asyncio.run(session.reply(messages, 100))
        messages = [*messages, {"role": "assistant", "content": reply.text}, {"role": "user", "content": observation}]
    asyncio.run(session.reply(messages, 100))
    assert len(session.history.samples) == 1, "three turns, one sample: each was a continuation"
    rewritten = [
        messages[0],
        {"role": "assistant", "content": "Summary: listed /app."},
        {"role": "user", "content": "on"},
    ]
    asyncio.run(session.reply(rewritten, 100))
    samples = session.history.samples
    assert len(samples) == 2 and samples[1].prompt_ids == chat.prompt_ids(rewritten) and samples[1].turn == 3


@pytest.fixture(scope="module")
def chat():
    return ChatTokenizer(load_tokenizer(str(bundled_qwen3_tokenizer_dir())), enable_thinking=False)


@pytest.mark.docker
@pytest.mark.parametrize("history", ["append", "per_turn"])
@pytest.mark.parametrize("policy", ["elide", "summarize"])
def test_every_sample_is_a_prompt_the_model_was_shown_plus_its_tokens(policy, history, chat, episode):
    [task] = [t for t in bench.ledger_tasks(1)]  # 16 parts: 17 turns of ~700-token pages
    agent = bench.agent_config(policy, history, 8192)
    scripted = bench.LedgerPolicy(chat, agent, history)
    trajectory = episode(task, "xml_yaml", scripted, agent.limits)
    assert (trajectory.termination, trajectory.score) == ("finished", 1.0), trajectory.termination_detail
    calls, session = scripted.calls, scripted.calls[0]["session"]
    for call in calls:  # what was sent, against the template's rendering of what was shown
        rendered = chat.prompt_ids(as_seen(call["messages"]))
        if history == "per_turn":
            assert call["prompt_ids"] == rendered
        else:  # append keeps the model's tokens as generated (Qwen3 re-renders earlier turns' think blocks)
            assert drop_earlier_reasoning(call["prompt_ids"], chat) == drop_earlier_reasoning(rendered, chat)
    samples = session.history.samples
    for number, sample in enumerate(samples):
        first = calls[sample.turn]["prompt_ids"]
        assert sample.prompt_ids == first, f"sample {number} starts from the prompt of turn {sample.turn}"
        end = samples[number + 1].turn if number + 1 < len(samples) else len(calls)
        for later in calls[sample.turn + 1 : end]:  # append: the segment's later prompts continue it
            assert later["prompt_ids"] == (sample.prompt_ids + sample.response_ids)[: len(later["prompt_ids"])]
    context = trajectory.metadata["context"]
    assert context["segments"] > 1 and len(samples) == (len(calls) if history == "per_turn" else context["segments"])
    if policy == "summarize":
        assert context["summaries"] >= 1
        request = next(i for i, c in enumerate(calls) if c["messages"][-1]["content"].startswith("Your context"))
        assert calls[request + 1]["messages"][:2] == calls[0]["messages"][:2], "continued from system and task"
    else:
        assert context["elided_turns"] >= 4 and any("elided:" in m["content"] for m in calls[-1]["messages"])
    # The transcript keeps what happened (every page whole); the shown messages are rebuilt from it.
    assert not any("elided:" in m["content"] for m in trajectory.messages)
    head = next(i for i, m in enumerate(trajectory.messages) if m["role"] == "assistant")
    rebuilt = shown_turns(agent.limits.context, trajectory.messages, trajectory.turns, head)
    assert [shown for shown, _ in rebuilt] == [call["messages"] for call in calls]
    # Datasets build from what the model saw: a text policy's episode (no stored ids) is replayed from it.
    record = Episode(trajectory, "run", "evaluation", -1, "g", 1.0, {}, "train", 1, "eval/results.jsonl")
    assert training_samples(record, chat, history) == token_rows(
        (s.prompt_ids, s.response_ids, s.response_mask) for s in samples
    )


@pytest.mark.docker
def test_an_api_model_is_shown_the_same_elided_context(chat, episode):
    """policy=litellm through the same driver: the chat endpoint receives the elided messages."""
    from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, LiteLLMPolicy
    from tests.fake_llm_server import FakeLLMServer

    [task] = bench.ledger_tasks(1)
    agent = bench.agent_config("elide", "append", 8192)
    ledger = bench.LedgerAgent(16, prompt("summary_request", "v1"))

    def reply(body):
        return ledger.reply("".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in body["messages"]))

    with FakeLLMServer(reply) as server:
        config = LiteLLMConfig("openai/ledger", server.base_url, "", 0.0, 0, 30, 1)
        policy = LiteLLMPolicy(config, "append", agent.sequence_limits)
        trajectory = episode(task, "xml_yaml", policy, agent.limits)
    assert (trajectory.termination, trajectory.score) == ("finished", 1.0), trajectory.termination_detail
    last = server.requests[-1]["messages"]
    assert sum("elided:" in m["content"] for m in last) >= 12 and trajectory.metadata["context"]["segments"] == 4

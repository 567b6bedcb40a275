"""Context management: turns completed and pass rate with ``agent.context`` none, elide and summarize,
on the same long-horizon tasks, in one run.

    .venv/bin/python benchmarks/context_management.py [--tasks 6] [--history append] [--context-tokens 8192]

The tasks are the ``ledger_sum`` family's medium and hard draws (16 and 30 verbose parts, one turn
each: ``terminal_rl/tasks/families/ledger_sum.py``), in real sandboxes. The model is a scripted agent
at the token level (``LedgerAgent``) behind our token session, so the context is counted in Qwen3's
real tokens and every prompt is the one a model would get. It acts only on what it is shown: its
running total is the last one in its own replies (or in its summary) and the next amount is read from
the latest observation, so what the context policy keeps decides whether it can go on. With ``none``
the episode ends as ``context_exhausted`` once the pages fill the budget; ``elide`` keeps the
replies and stubs the old pages; ``summarize`` hands off through a summary. Writes
``benchmarks/results/context_management.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from terminal_rl.agent.config import AgentConfig  # noqa: E402
from terminal_rl.agent.context import prompt  # noqa: E402
from terminal_rl.agent.policies.base import Policy, PolicySession  # noqa: E402
from terminal_rl.agent.policies.token_session import Generation, TokenSession  # noqa: E402
from terminal_rl.agent.tokens import ChatTokenizer, bundled_qwen3_tokenizer_dir, load_tokenizer  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
POLICIES = ("none", "elide", "summarize")
RUNNING = re.compile(r"Running total after part_(\d+): (\d+)")


class LedgerAgent:
    """A ledger_sum agent that reads its state from its prompt (the decoded token ids it is given)."""

    def __init__(self, parts: int, summary_request: str):
        self.parts, self.summary_request = parts, summary_request

    def reply(self, prompt_text: str) -> str:
        done, total = max(((int(n), int(t)) for n, t in RUNNING.findall(prompt_text)), default=(0, 0))
        last_user = prompt_text.rsplit("<|im_start|>user", 1)[-1]
        if self.summary_request in last_user:
            return (
                f"Summary: I read the ledger parts in order with cat. Running total after part_{done:02d}: {total}. "
                f"Next: cat part_{done + 1:02d}.txt and add its amount."
            )
        amount = re.search(rf"\b{done + 1:02d}:amount: (\d+)", last_user)
        if amount:
            done, total = done + 1, total + int(amount.group(1))
        state = f"Running total after part_{done:02d}: {total}."
        if done == self.parts:
            return f"{state}\n<bash>\ncmd: echo {total} > /app/total.txt\n</bash>\n<finish>\nmessage: done\n</finish>"
        return f"{state}\n<bash>\ncmd: cat /app/ledger/part_{done + 1:02d}.txt\n</bash>"


class LedgerPolicy(Policy):
    """The scripted agent behind a token session (``agent.history`` ``history``), recording every
    prompt it is sent with the messages the episode driver showed for it (``calls``)."""

    name = "scripted:ledger"

    def __init__(self, chat: ChatTokenizer, agent: AgentConfig, history: str):
        self.chat, self.agent, self.history = chat, agent, history
        self.calls: list[dict] = []

    def session(self, task) -> PolicySession:
        parts = int(re.search(r"has (\d+) parts", task.prompt).group(1))
        agent = LedgerAgent(parts, prompt("summary_request", self.agent.limits.context.summary_prompt))
        calls, chat = self.calls, self.chat

        async def generate(prompt_ids: list[int], max_tokens: int) -> Generation:
            text = chat.tokenizer.decode(prompt_ids)
            ids = chat.encode(agent.reply(text))[: max_tokens - 1] + [chat.eos_id]
            calls[-1]["prompt_ids"] = list(prompt_ids)
            return Generation(ids)

        session = TokenSession(chat, self.history, generate, self.agent.limits_for(self.history))

        class Recording(PolicySession):
            async def reply(self, messages, max_tokens):
                calls.append({"task": task.id, "messages": [dict(m) for m in messages], "session": session})
                return await session.reply(messages, max_tokens)

        return Recording()


def agent_config(policy: str, history: str, context_tokens: int) -> AgentConfig:
    from terminal_rl.config import compose

    overrides = [
        f"agent/context={policy}",
        f"agent.history={history}",
        f"agent.max_context_tokens={context_tokens}",
        "agent.max_prompt_tokens=1024",
        "agent.max_tokens_per_turn=256",
        "agent.max_turns=80",
    ]
    return AgentConfig.from_node(compose("evaluate", overrides).agent)


def ledger_tasks(count: int):
    from terminal_rl.config import compose
    from terminal_rl.tasks.model import Limits
    from terminal_rl.tasks.procedural import procedural_tasks

    limits = Limits(**compose("evaluate").task_set.default_limits)
    return procedural_tasks("ledger_sum", count, seed=0, levels=["medium", "hard"], limits=limits)


async def run_arm(tasks, policy: str, history: str, context_tokens: int, chat, factory) -> list[dict]:
    from terminal_rl.agent.protocols import make_protocol
    from terminal_rl.agent.runner import run_episode

    agent = agent_config(policy, history, context_tokens)
    scripted = LedgerPolicy(chat, agent, history)
    episodes = []
    for task in tasks:
        trajectory = await run_episode(task, factory, make_protocol(agent.protocol), scripted, agent.limits)
        context = trajectory.metadata.get("context", {})
        episodes.append(
            {
                "task": task.id,
                "parts": int(re.search(r"has (\d+) parts", task.prompt).group(1)),
                "turns": len(trajectory.turns),
                "passed": trajectory.score == 1.0,
                "termination": trajectory.termination,
                "segments": context.get("segments"),
                "summaries": context.get("summaries"),
                "elided_turns": context.get("elided_turns"),
            }
        )
    return episodes


async def measure(count: int, history: str, context_tokens: int) -> dict:
    from terminal_rl.config import compose
    from terminal_rl.run_context import RunContext
    from terminal_rl.sandbox.config import SandboxConfig
    from terminal_rl.sandbox.runtime.sandbox import SandboxFactory

    cfg = compose("evaluate", ["run.id=context_management"])
    chat = ChatTokenizer(load_tokenizer(str(bundled_qwen3_tokenizer_dir())), enable_thinking=False)
    tasks = ledger_tasks(count)
    arms = {}
    async with SandboxFactory(SandboxConfig.from_node(cfg.sandbox), RunContext.from_config(cfg.run)) as factory:
        for policy in POLICIES:
            started = time.monotonic()
            episodes = await run_arm(tasks, policy, history, context_tokens, chat, factory)
            arms[policy] = {
                "episodes": episodes,
                "turns_completed": sum(e["turns"] for e in episodes) / len(episodes),
                "pass_rate": sum(e["passed"] for e in episodes) / len(episodes),
                "context_exhausted": sum(e["termination"] == "context_exhausted" for e in episodes),
                "minutes": (time.monotonic() - started) / 60,
            }
    best = max(("elide", "summarize"), key=lambda p: (arms[p]["pass_rate"], arms[p]["turns_completed"]))
    none = arms["none"]
    return {
        "command": f"benchmarks/context_management.py --tasks {count} --history {history} "
        f"--context-tokens {context_tokens}",
        "setting": {
            "family": "ledger_sum (medium: 16 parts, hard: 30 parts; one ~700-token page a turn)",
            "history": history,
            "max_context_tokens": context_tokens,
            "tokenizer": "Qwen3 (bundled), enable_thinking=false",
        },
        "arms": arms,
        "target": "elide or summarize completes >= 2x the turns of none and passes more",
        "met": arms[best]["turns_completed"] >= 2 * none["turns_completed"]
        and arms[best]["pass_rate"] > none["pass_rate"],
    }


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = report["arms"]
    figure, (turns, passes) = plt.subplots(1, 2, figsize=(9, 3.6))
    turns.bar(POLICIES, [arms[p]["turns_completed"] for p in POLICIES], color=["grey", "tab:blue", "tab:green"])
    turns.set_title("turns completed (mean per episode)")
    passes.bar(POLICIES, [arms[p]["pass_rate"] for p in POLICIES], color=["grey", "tab:blue", "tab:green"])
    passes.set_ylim(0, 1)
    passes.set_title("pass rate")
    setting = report["setting"]
    figure.suptitle(
        f"agent.context on ledger_sum, {setting['history']} history, {setting['max_context_tokens']} tokens"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--history", default="append", choices=("append", "per_turn"))
    parser.add_argument("--context-tokens", type=int, default=8192)
    args = parser.parse_args()
    report = asyncio.run(measure(args.tasks, args.history, args.context_tokens))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "context_management.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    plot(report, RESULTS / "context_management.png")
    for policy in POLICIES:
        arm = report["arms"][policy]
        print(
            f"{policy:>9}: {arm['turns_completed']:.1f} turns, pass rate {arm['pass_rate']:.2f}, "
            f"{arm['context_exhausted']} out of context ({arm['minutes']:.1f} min)"
        )
    print(f"target met: {report['met']}")


if __name__ == "__main__":
    main()

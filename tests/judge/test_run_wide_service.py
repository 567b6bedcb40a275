"""Two worker processes sharing one judge service (a named Ray actor): one cache, one budget, and a
hot switch picked up within a bounded time."""

import time
from dataclasses import replace

import pytest
import ray

from terminal_rl.judge.backend import JudgeBackend, write_backend
from terminal_rl.judge.ray_actor import judge_actor, start_judge_actor
from tests.fake_llm_server import FakeLLMServer
from tests.judge.conftest import request, verdict

pytestmark = pytest.mark.ray


@ray.remote(num_cpus=0)
class RolloutWorker:
    """Stands in for a rollout worker: finds the run's judge by name and asks it."""

    def __init__(self, run_id: str):
        self.judge = judge_actor(run_id)

    def pid(self) -> int:
        import os

        return os.getpid()

    def judge_one(self, n: int) -> dict:
        return ray.get(self.judge.judge.remote(request(n)))


@pytest.fixture(scope="module")
def local_ray():
    if ray.is_initialized():  # an earlier test of this worker left its connection open: start our own
        ray.shutdown()
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        namespace="tests",
        log_to_driver=False,
    )
    yield
    ray.shutdown()


def test_workers_share_one_cache_and_one_budget(local_ray, judge_config, tmp_path):
    with FakeLLMServer([verdict()] * 3) as server:
        judge = start_judge_actor(replace(judge_config, base_url=server.base_url, budget_tokens=30), tmp_path, "shared")
        workers = [RolloutWorker.remote("shared") for _ in range(2)]
        assert len(set(ray.get([w.pid.remote() for w in workers]))) == 2, "two separate worker processes"

        first = ray.get(workers[0].judge_one.remote(0))
        repeat = ray.get(workers[1].judge_one.remote(0))
        assert (first["cached"], repeat["cached"], repeat["score"]) == (False, True, 1.0)

        spend = ray.get(workers[1].judge_one.remote(1))  # the second call spends the budget (2 x 15 tokens)
        refused = ray.get([w.judge_one.remote(n) for w, n in zip(workers, (2, 3))])
        assert spend["score"] == 1.0
        assert [r["missing_reason"] for r in refused] == ["budget exhausted"] * 2, "the budget stops both workers"
        assert len(server.requests) == 2
        assert ray.get(judge.stats.remote())["budget_refusals"] == 2


def test_workers_pick_up_a_hot_switch(local_ray, judge_config, tmp_path):
    with FakeLLMServer([verdict()]) as first, FakeLLMServer([verdict(todo_planning=0.0)] * 5) as second:
        start_judge_actor(replace(judge_config, base_url=first.base_url), tmp_path, "switch")
        workers = [RolloutWorker.remote("switch") for _ in range(2)]
        before = ray.get(workers[0].judge_one.remote(0))
        assert before["backend"] == f"openai/judge-a@{first.base_url}"

        write_backend(tmp_path, JudgeBackend("openai/judge-b", second.base_url, "JUDGE_B_KEY"))
        switched = time.monotonic()
        after = ray.get(workers[1].judge_one.remote(1))
        while after["backend"] != f"openai/judge-b@{second.base_url}" and time.monotonic() - switched < 10:
            after = ray.get(workers[1].judge_one.remote(int(time.monotonic() * 1000)))
        assert after["backend"] == f"openai/judge-b@{second.base_url}" and after["score"] == 0.75
        assert time.monotonic() - switched < 10, "picked up within a bounded time"

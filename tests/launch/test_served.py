"""evaluate/filter with serve=vllm: the server is started beside the episodes, the token-level policy
is pointed at it, and it is stopped afterwards (vLLM itself needs GPUs: tests.fake_vllm stands in,
started through the same command line)."""

import json
import socket
import sys

import pytest

from terminal_rl.config import compose
from terminal_rl.console import Console
from terminal_rl.evaluate import served_job
from terminal_rl.launch.served import run_app, serve_policy
from tests.support import SERVED_TASK, free_port, served_overrides


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.docker
def test_evaluation_runs_against_the_server_it_started_and_stops_it(tmp_path):
    port = free_port()
    summary = run_app(served_job("evaluate", compose("evaluate", served_overrides(tmp_path, port))))
    [result] = [json.loads(line) for line in (tmp_path / "served" / "eval" / "results.jsonl").read_text().splitlines()]
    assert result["task_id"] == SERVED_TASK and result["termination"] == "finished", result["termination_detail"]
    assert result["policy"] == "token:policy" and summary
    assert not port_open(port), "the server was stopped"


def test_a_server_that_dies_is_reported_with_its_log(tmp_path):
    cfg = compose("evaluate", served_overrides(tmp_path, free_port(), "[python,-c,'import sys; sys.exit(3)']"))
    with pytest.raises(RuntimeError, match=r"exited with code 3 before answering; see .*serve.log"):
        with serve_policy(served_job("evaluate", cfg), Console(sys.stdout)):
            pass


def test_serving_needs_the_token_policy(tmp_path):
    cfg = compose("evaluate", [*served_overrides(tmp_path, free_port()), "policy=litellm"])
    with pytest.raises(
        ValueError, match=r"a served checkpoint \(serve.kind=command\) is for policy=token, not policy=litellm"
    ):
        with serve_policy(served_job("evaluate", cfg), Console(sys.stdout)):
            pass

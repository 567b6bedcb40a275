"""The run's Ray workers get verl's own runtime environment (what verl's ``run_ppo`` passes to
``ray.init`` when it starts Ray, ``trainer/main_ppo.py`` l. 57-73), though our driver starts Ray:
a real local Ray cluster, started by ``start_ray``, asked from inside a worker."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.verl

PROBE = """
import json, os, ray
from terminal_rl.config import compose
from terminal_rl.integrations.verl.driver import job_environment, start_ray
from terminal_rl.preflight.job import train_job
job = train_job(compose("train", ["hardware=cpu", "model=tiny", "hardware.ray_num_cpus=1",
                        "+ray_kwargs.ray_init.runtime_env.env_vars.MY_CLUSTER_VAR=from-ray-kwargs"]))
start_ray(job, job_environment(job))
print(json.dumps(ray.get(ray.remote(lambda: dict(os.environ)).remote())))
ray.shutdown()
"""


def test_a_worker_sees_verls_ppo_environment_and_ours(tmp_path):
    from verl.trainer.constants_ppo import PPO_RAY_RUNTIME_ENV

    shell = {
        k: v for k, v in os.environ.items() if k not in PPO_RAY_RUNTIME_ENV["env_vars"] and not k.startswith("RAY_")
    }
    shell["NCCL_DEBUG"] = "INFO"  # set in the launching shell: verl leaves it as the shell has it
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=240, env=shell, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    worker = json.loads(done.stdout.strip().splitlines()[-1])
    for key in ("VLLM_DISABLE_COMPILE_CACHE", "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "VLLM_LOGGING_LEVEL"):
        assert worker.get(key) == PPO_RAY_RUNTIME_ENV["env_vars"][key], key
    assert worker["TOKENIZERS_PARALLELISM"] == "false", "the run's hardware.env wins over verl's default (true)"
    assert worker["NCCL_DEBUG"] == "INFO"
    assert worker["MY_CLUSTER_VAR"] == "from-ray-kwargs", "ray_kwargs.ray_init.runtime_env reaches the workers"
    assert worker["VERL_USE_EXTERNAL_MODULES"] == "terminal_rl.integrations.verl.plugin", "the run's own too"
    assert worker["HF_HUB_OFFLINE"] == "1" and worker["HF_HUB_CACHE"].endswith("hub_cache"), "weights only offline"

"""Running verl 0.9.1's real trainer on CPU, through verl's extension points only (no fork):

* ``platform.py``: a ``cpu`` platform in verl's PlatformRegistry (device ``cpu``, backend gloo, Ray
  resource ``GPU`` so the fake GPUs the ``cpu`` hardware preset gives Ray are what gets counted);
* ``rollout.py``: an ``hf`` rollout backend (transformers generation, token in / token out) registered
  in verl's rollout registries, receiving the actor's weights after each update.

Selected by ``hardware=cpu`` (``VERL_PLATFORM=cpu``, ``rollout.name=hf``). What it proves: configs,
data flow, the agent loop, rewards, GRPO updates, weight sync, checkpoints and resume. What it does
not: speed, vLLM/SGLang behaviour, bf16, flash-attention, FSDP1 or Megatron.
"""

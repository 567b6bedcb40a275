"""verl's own validation of a composed config: ``validate_config`` and its config dataclasses."""

from __future__ import annotations

import contextlib
import io
import warnings

from omegaconf import DictConfig, OmegaConf

# verl config nodes converted to their dataclasses (``reward`` is skipped: verl 0.9.1's
# RewardManagerConfig cannot be converted, and verl itself never converts it).
_DATACLASS_NODES = ("algorithm", "actor_rollout_ref.actor", "actor_rollout_ref.rollout")


def verl_problems(verl_config: DictConfig) -> list[str]:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    resolved = OmegaConf.create(OmegaConf.to_container(verl_config, resolve=True))
    problems = []
    try:
        # verl's notes while it validates (its printout, "Disabled critic as ...") are not problems.
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            validate_config(
                resolved, use_reference_policy=need_reference_policy(resolved), use_critic=need_critic(resolved)
            )
    except Exception as error:  # verl raises assertions, ValueErrors and hydra's InstantiationException
        cause = error.__cause__ or error
        problems.append(f"verl validate_config: {type(cause).__name__}: {cause}")
    for path in _DATACLASS_NODES:
        try:
            omega_conf_to_dataclass(OmegaConf.select(resolved, path))
        except Exception as error:  # hydra wraps the dataclass's own error
            cause = error.__cause__ or error
            problems.append(f"verl {path}: {type(cause).__name__}: {cause}")
    return problems

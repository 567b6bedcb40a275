"""The judge backend (model, endpoint, the *name* of the variable holding its key) and its run-scoped
control file, through which `python -m terminal_rl.judge command=switch` changes it during a run.

The control file is ``<run shared dir>/judge/backend.json``; it never holds a key, only the name of
the environment variable to read the key from in the judge service's own process.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

CONTROL_FILE = "backend.json"


@dataclass(frozen=True)
class JudgeBackend:
    model: str
    base_url: str = ""
    api_key_env: str = ""

    @property
    def label(self) -> str:
        return f"{self.model}@{self.base_url}" if self.base_url else self.model

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def endpoint(self) -> str | None:
        """The URL litellm sends this backend's requests to: ``base_url``, else the provider's own
        (litellm's ``get_api_base``, or the provider's model info where that has none, as for
        Anthropic); None when litellm cannot tell."""
        if self.base_url:
            return self.base_url
        import litellm
        from litellm.types.utils import LlmProviders
        from litellm.utils import ProviderConfigManager

        try:
            model, provider, _, _ = litellm.get_llm_provider(self.model)
            info = ProviderConfigManager.get_provider_model_info(model, LlmProviders(provider))
            return litellm.get_api_base(self.model, {}) or (info.get_api_base() if info else None)
        except Exception:  # litellm raises its own BadRequestError for a model it does not know
            return None


def write_backend(control_dir: Path, backend: JudgeBackend) -> Path:
    """Atomically replace the run's active backend."""
    control_dir.mkdir(parents=True, exist_ok=True)
    path = control_dir / CONTROL_FILE
    with tempfile.NamedTemporaryFile("w", dir=control_dir, delete=False, encoding="utf-8") as tmp:
        json.dump({**asdict(backend), "switched_at": time.time()}, tmp)
    os.replace(tmp.name, path)
    return path


def read_backend(control_dir: Path, default: JudgeBackend) -> JudgeBackend:
    path = control_dir / CONTROL_FILE
    if not path.is_file():
        return default
    data = json.loads(path.read_text(encoding="utf-8"))
    return JudgeBackend(data["model"], data.get("base_url", ""), data.get("api_key_env", ""))

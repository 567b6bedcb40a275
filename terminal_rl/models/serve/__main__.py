"""Serve a Hugging Face model folder on CPU behind vLLM's token-level completions schema (Hydra app
on ``conf/model_server.yaml``; ``serve=hf`` starts it for an evaluation).

python -m terminal_rl.models.serve model_dir=FOLDER port=8000 [served_model_name=policy]
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from terminal_rl.models.serve import Generator, serve


@hydra.main(config_path="../../../conf", config_name="model_server", version_base="1.3")
def main(cfg: DictConfig) -> None:
    server = serve(Generator(cfg.model_dir), int(cfg.port), cfg.served_model_name)
    print(f"serving {cfg.model_dir} as {cfg.served_model_name} on http://127.0.0.1:{cfg.port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

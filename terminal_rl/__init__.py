"""terminal_rl: train LLM terminal agents with reinforcement learning."""

import os

# litellm fetches its model price table from the internet on import unless told to use the copy it
# ships; runs must not reach out (air-gapped nodes, no traffic to public addresses).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

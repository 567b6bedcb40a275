"""The agent: action protocols, tools, the episode state machine, policies, behaviour metrics."""

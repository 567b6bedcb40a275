"""Data filtering: spend rollouts only where the policy can learn (offline pass rates, online group
variance, periodic re-estimation from training rollouts). Decisions are pure functions."""

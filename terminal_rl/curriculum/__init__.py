"""Curriculum: schedules (pure) from training progress and performance to difficulty sampling
weights and reward weights, and the task sampler that owns the sampling pool."""

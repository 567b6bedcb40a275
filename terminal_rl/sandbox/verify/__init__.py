"""Verification, the reward's ground truth: the verifier container beside a sandbox, the trusted
toolchain it mounts, and the attacks it is tested against."""

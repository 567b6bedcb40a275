"""Scripts that run inside containers, on the toolchain's Python or the builder's (never imported by
the host side except for their constants): the verifier runner, the toolchain's build and start-up,
the lease watcher."""

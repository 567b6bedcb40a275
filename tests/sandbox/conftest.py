"""Sandbox fixtures: run code in a fresh sandbox against the real engine."""

from __future__ import annotations

import asyncio
import subprocess
import textwrap

import pytest

from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory, SandboxSpec
from terminal_rl.sandbox.verify.verifier import VERIFIER_UID, verify
from terminal_rl.tasks.model import Limits
from tests.support import BASE_IMAGE, SMALL_LIMITS


@pytest.fixture
def in_sandbox(sandbox_config, run_context):
    """``in_sandbox(fn, limits=..., files=..., config=...)`` runs ``await fn(sandbox)`` in a fresh sandbox."""

    def run(
        fn,
        limits: Limits = SMALL_LIMITS,
        files: dict[str, bytes] | None = None,
        config: SandboxConfig | None = None,
        image: str = BASE_IMAGE,
    ):
        async def main():
            async with SandboxFactory(config or sandbox_config, run_context) as factory:
                async with factory.sandbox(SandboxSpec(image, limits, files or {})) as sandbox:
                    return await fn(sandbox)

        return asyncio.run(main())

    return run


@pytest.fixture(scope="session")
def evil_library(tmp_path_factory):
    """A shared library whose constructor claims the reward and leaves a mark of every process it enters."""
    source = tmp_path_factory.mktemp("evil") / "evil.c"
    source.write_text(
        textwrap.dedent("""\
        #include <stdio.h>
        #include <unistd.h>
        __attribute__((constructor)) static void evil(void) {
            char mark[64];
            snprintf(mark, sizeof mark, "/tmp/preloaded-%d", getpid());
            FILE *f = fopen(mark, "w"); if (f) fclose(f);
            FILE *r = fopen("/logs/verifier/reward.txt", "w"); if (r) { fputs("1", r); fclose(r); }
        }
        """)
    )
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(source.with_suffix(".so")), str(source)], check=True)
    return source.with_suffix(".so").read_bytes()


@pytest.fixture
def with_evil_library(sandbox_config, run_context, evil_library):
    """``with_evil_library(twins, commands)`` -> (both formats' verifications, marks): the library at
    /tmp/evil.so, ``commands`` run as the agent, each twin verified; marks are the verifier-uid
    processes it entered, then how many processes it entered at all."""

    def run(twins, commands):
        async def main():
            async with SandboxFactory(sandbox_config, run_context) as factory:
                async with factory.task_sandbox(twins[0]) as sandbox:
                    await sandbox.files.write_bytes("/tmp/evil.so", evil_library)
                    for command in commands:
                        await sandbox.run(command, timeout=60)
                    results = [await verify(sandbox, task) for task in twins]
                    marks = await sandbox.control.run(
                        f"find /tmp -name 'preloaded-*' -uid {VERIFIER_UID}; ls /tmp | grep -c preloaded-",
                        timeout=60,
                        inline=True,
                    )
                    return results, marks.output.split()

        return asyncio.run(main())

    return run

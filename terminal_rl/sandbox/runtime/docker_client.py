"""One place that opens the Docker API, and an async front for the synchronous Docker SDK.

Hundreds of rollouts share one event loop; every blocking SDK call runs on a bounded thread pool.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import docker

T = TypeVar("T")


def docker_client(docker_host: str = "", connections: int = 10) -> docker.DockerClient:
    """A client with the server's API version negotiated (Debian's dockerd and podman are older) that
    keeps up to ``connections`` connections open (one per thread that calls it at once)."""
    if docker_host:
        return docker.DockerClient(base_url=docker_host, version="auto", timeout=300, max_pool_size=connections)
    return docker.from_env(version="auto", timeout=300, max_pool_size=connections)


class AsyncDocker:
    """The Docker SDK behind ``await docker.call(fn, ...)`` on a pool of ``threads`` threads."""

    def __init__(self, client: docker.DockerClient, threads: int):
        self.client = client
        self.api = client.api
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="docker")

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()

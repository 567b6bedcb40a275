"""One place that opens the Docker API: config's endpoint, else $DOCKER_HOST, else the local socket."""

from __future__ import annotations

import docker


def docker_client(docker_host: str = "") -> docker.DockerClient:
    """A client with the server's API version negotiated (Debian's dockerd and podman are older)."""
    if docker_host:
        return docker.DockerClient(base_url=docker_host, version="auto")
    return docker.from_env(version="auto")

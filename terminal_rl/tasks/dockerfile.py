"""Read the few facts we need from a Dockerfile's text: base images and what it COPYs in."""

from __future__ import annotations

import fnmatch
import json
import shlex


def instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs with line continuations joined and comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in dockerfile.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, args = line.partition(" ")
        result.append((keyword.upper(), args.strip()))
    if pending:
        keyword, _, args = pending.strip().partition(" ")
        result.append((keyword.upper(), args.strip()))
    return result


def base_images(dockerfile: str) -> list[str]:
    """Images named by FROM lines: ``--platform`` flags dropped, and ``FROM <stage>`` references to an
    earlier build stage (``FROM x AS <stage>``) are not images."""
    images, stages = [], set()
    for keyword, args in instructions(dockerfile):
        if keyword == "FROM":
            words = [w for w in args.split() if not w.startswith("--")]
            if words and words[0].lower() not in stages:
                images.append(words[0])
            if len(words) >= 3 and words[1].upper() == "AS":
                stages.add(words[2].lower())
    return images


def task_set_images(tasks) -> list[str]:
    """Every image a task set needs present locally: what its Dockerfiles build FROM and the images
    tasks run as they are (sorted, once each)."""
    found = set()
    for task in tasks:
        if task.environment.dockerfile is not None:
            found.update(base_images(task.environment.dockerfile))
        if task.environment.image is not None:
            found.add(task.environment.image)
    return sorted(found)


def copy_sources(dockerfile: str) -> list[str]:
    """Build-context sources of COPY/ADD lines (not ``--from`` stage copies), './' stripped."""
    sources: list[str] = []
    for keyword, args in instructions(dockerfile):
        if keyword not in {"COPY", "ADD"}:
            continue
        if args.startswith("["):
            try:
                words = json.loads(args)
            except json.JSONDecodeError:
                continue
        else:
            try:
                words = shlex.split(args)
            except ValueError:
                words = args.split()
        if any(w.startswith("--from") for w in words):
            continue
        paths = [w for w in words if not w.startswith("--")]
        sources.extend(_normalise(src) for src in paths[:-1])
    return sources


def is_copied(path: str, sources: list[str]) -> bool:
    """Whether a build-context file at ``path`` is covered by one of the COPY/ADD ``sources``."""
    path = _normalise(path)
    for source in sources:
        if source in {"", "."}:
            return True
        directory = source.rstrip("/")
        if path == directory or path.startswith(directory + "/") or fnmatch.fnmatchcase(path, source):
            return True
        if any(ch in source for ch in "*?[") and any(
            fnmatch.fnmatchcase(prefix, directory) for prefix in _parents(path)
        ):
            return True
    return False


def _normalise(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return path


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]

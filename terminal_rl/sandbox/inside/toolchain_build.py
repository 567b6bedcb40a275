"""Builds the verifier's trusted toolchain; runs inside a builder container of the offline base image
(Debian), never on the host: ``python3 toolchain_build.py OUT_DIR PACKAGE...``.

Every file of the listed Debian packages and of the packages they depend on (documentation aside)
is copied under ``PREFIX`` (where sandboxes and the verifier container mount the result read-only),
with the shared libraries they need. Each ELF file is
rewritten (patchelf) to load through the toolchain's own dynamic loader and libraries, so nothing of
the image it later runs beside (its loader, its libraries, ``LD_LIBRARY_PATH``) is ever used. The
loader copy is patched not to read ``/etc/ld.so.preload`` or ``/etc/ld.so.cache`` (paths of the image
the agent could plant): both names are replaced, at equal length, by paths inside ``PREFIX`` that do
not exist. Scripts' ``#!`` lines are pointed at the toolchain's own interpreters.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

PREFIX = "/terminal_rl"
LOADER = "/lib64/ld-linux-x86-64.so.2"
# The loader's configuration files, and their same-length replacements inside PREFIX.
LOADER_PATHS = {b"/etc/ld.so.preload": b"/terminal_rl/nopre", b"/etc/ld.so.cache": b"/terminal_rl/noc"}
LIBRARY_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")
_LDD = re.compile(r"=> (/\S+)|^\s*(/\S+) \(")
_SKIPPED = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/locale/", "/usr/share/lintian/")


def dependency_closure(packages: list[str]) -> list[str]:
    """The installed packages and every installed package they depend on (Depends, Pre-Depends)."""
    seen, queue = set(), list(packages)
    while queue:
        name = queue.pop().split(":")[0]
        if name in seen:
            continue
        query = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}|${Depends}, ${Pre-Depends}", name], capture_output=True, text=True
        )
        if query.returncode != 0 or "installed" not in query.stdout.split("|")[0]:
            continue
        seen.add(name)
        for alternatives in query.stdout.split("|", 1)[1].split(","):
            for option in alternatives.split("|"):
                option = option.strip().split(" ")[0]
                if option:
                    queue.append(option)
    return sorted(seen)


def package_files(packages: list[str]) -> list[Path]:
    """The regular files the packages install (their real paths), documentation aside."""
    listed = [
        path
        for name in packages  # a virtual package name lists nothing
        for path in subprocess.run(["dpkg", "-L", name], capture_output=True, text=True).stdout.split()
    ]
    files = {Path(os.path.realpath(p)) for p in listed if not p.startswith(_SKIPPED)}
    return sorted(p for p in files if p.is_file())


def is_elf(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(4) == b"\x7fELF"


def needed_libraries(elf: Path) -> set[Path]:
    """Shared libraries ``elf`` loads, by the names the loader looks for (ldd's view)."""
    result = subprocess.run(["ldd", str(elf)], capture_output=True, text=True)
    found = set()
    for line in result.stdout.splitlines():
        match = _LDD.search(line)
        if match:
            found.add(Path(match.group(1) or match.group(2)))
    return found


def build(out: Path, packages: list[str]) -> None:
    files = package_files(dependency_closure(packages))
    elves = {f for f in files if is_elf(f)}
    # Libraries loaded by name at run time rather than linked: name service and unwinding.
    libraries = {
        path
        for name in ("libnss_files.so.2", "libnss_dns.so.2", "libgcc_s.so.1")
        for path in (Path(d) / name for d in LIBRARY_DIRS)
        if path.exists()
    }
    for elf in sorted(elves):
        libraries |= needed_libraries(elf)
    # Libraries under the name the loader looks for (a soname link's name holds the file itself); the
    # loader once, under its real name (LOADER links to it).
    loader = Path(os.path.realpath(LOADER))
    everything = sorted({p for p in set(files) | libraries if Path(os.path.realpath(p)) != loader} | {loader})
    for source in everything:
        target = out / source.relative_to("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            shutil.copy2(source, target)
    python = os.path.realpath("/usr/bin/python3")
    for link, source in ((LOADER, str(loader)), ("/usr/bin/python3", python), ("/usr/bin/python", python)):
        alias = out / link.lstrip("/")
        alias.parent.mkdir(parents=True, exist_ok=True)
        if not alias.exists():
            alias.symlink_to(PREFIX + source)
    rpath = ":".join(PREFIX + d for d in LIBRARY_DIRS)
    for source in everything:
        target = out / source.relative_to("/")
        if source == loader:
            patch_loader(target)
        elif is_elf(source):
            patch_elf(target, rpath)
        else:
            repoint_shebang(target)


def patch_elf(path: Path, rpath: str) -> None:
    """Load through the toolchain's loader (executables) and libraries (everything)."""
    interpreter = subprocess.run(["patchelf", "--print-interpreter", str(path)], capture_output=True, text=True)
    if interpreter.returncode == 0 and interpreter.stdout.strip():
        subprocess.run(["patchelf", "--set-interpreter", PREFIX + LOADER, str(path)], check=True)
    subprocess.run(["patchelf", "--force-rpath", "--set-rpath", rpath, str(path)], check=True)


def patch_loader(path: Path) -> None:
    data = path.read_bytes()
    for original, replacement in LOADER_PATHS.items():
        assert len(original) == len(replacement) and original in data, original
        data = data.replace(original, replacement)
    path.write_bytes(data)


def repoint_shebang(path: Path) -> None:
    """``#!/usr/bin/python3`` -> ``#!/terminal_rl/usr/bin/python3`` (and any other absolute interpreter)."""
    with path.open("rb") as handle:
        head = handle.read(2)
    if head != b"#!":
        return
    data = path.read_bytes()
    line, rest = data.split(b"\n", 1) if b"\n" in data else (data, b"")
    interpreter = line[2:].strip().split(b" ", 1)
    if interpreter[0].startswith(b"/") and not interpreter[0].startswith(PREFIX.encode()):
        interpreter[0] = PREFIX.encode() + os.path.realpath(interpreter[0])
        path.write_bytes(b"#!" + b" ".join(interpreter) + b"\n" + rest)


if __name__ == "__main__":
    build(Path(sys.argv[1]), sys.argv[2:])

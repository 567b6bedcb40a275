"""The verifier's trusted side: runs in a short-lived verifier container started from the task's own
image (pristine: the image as built, read-only, no agent has run in it) with the trusted toolchain
mounted at ``/terminal_rl``, in the sandbox's PID and network namespaces (``verifier.py``).
Standard library only; run as ``/terminal_rl/usr/bin/python3.11 -I -S verifier_runner.py``.

1. Make itself non-dumpable (no other process may read its memory, files or ``/proc`` entries), then
   check that no other process got hold of its stdio, memory or root before that (a process that
   did is interference: the verification fails and scores 0). Only then it says ``READY`` and reads
   the job (JSON, one line) from stdin.
2. In a child (non-dumpable from birth): take a handle on the pristine image (its own root), enter
   the sandbox's mount namespace in a private copy and build the tests' root there (``compose``): the
   agent's files where the agent left them, fresh tmpfs on ``/tests`` and ``/logs/verifier``, the
   pristine image at ``/terminal_rl/image`` (with a private writable layer a test may install into,
   discarded afterwards), and its runtime in front: command shims first on ``PATH``, its libraries
   first on ``LD_LIBRARY_PATH``, its dynamic loaders at the paths its programs name (patched to read
   neither the agent's ``/etc/ld.so.preload`` and ``/etc/ld.so.cache`` nor its default library
   directories), its ``/bin/sh``, ``/bin/bash``, ``/etc/nsswitch.conf`` and ``/etc/alternatives``,
   and the environment that points its libraries and tools at its own configuration.
3. Run the job's command there (chroot) as uid ``VERIFIER_UID`` (not the agent's root: the agent
   cannot reach the verifier's ``/proc/<pid>/root``), with the sandbox's capabilities as ambient
   capabilities (so tests read what root can), no new privileges, a clean environment and a
   process-group timeout.
4. Print one line ``RESULT <nonce> <json>``: the files the command left in ``/logs/verifier``
   (reward files, JUnit reports) and the tail of its output.
"""

import ctypes
import fnmatch
import json
import os
import re
import select
import shutil
import signal
import stat
import struct
import sys
import time

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 0x4000, 1 << 18
# open_tree(2) and move_mount(2): one number on every architecture (new system calls are unified).
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC, MOVE_MOUNT_F_EMPTY_PATH, AT_FDCWD = 1, 0o2000000, 4, -100
PR_SET_DUMPABLE, PR_SET_KEEPCAPS, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 4, 8, 38, 47, 2
# Linux's capabilities by number (include/uapi/linux/capability.h).
CAPABILITIES = {
    name: number
    for number, name in enumerate(
        "CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE "
        "NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT "
        "SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE "
        "AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ "
        "PERFMON BPF CHECKPOINT_RESTORE".split()
    )
}
TOOLCHAIN = "/terminal_rl"
# Empty directories of the toolchain (toolchain.MOUNTPOINTS) our mounts go on.
WORK, IMAGE, SHIMS = f"{TOOLCHAIN}/work", f"{TOOLCHAIN}/image", f"{TOOLCHAIN}/shims"
PRIVATE_DIRS = ("/tests", "/logs/verifier")
# Paths programs and libraries name literally: the pristine image's in the tests' root (system(3)'s
# and #! lines' shells, else the toolchain's bash; the name service's modules).
PINNED = {"/bin/sh": "bash", "/bin/bash": "bash", "/etc/nsswitch.conf": None}
# Debian's alternatives, a directory of ours whose entries link to their final pristine files (the
# image's own links are absolute and would lead into the agent's tree).
ALTERNATIVES = "/etc/alternatives"
# Links in the tests' root to the pristine image's /lib and /usr: the loader's default library
# directories, renamed at equal length to go through them.
IMAGE_LIB, IMAGE_USR, IMAGE_LIB64 = "/.il", "/.iu", "/.il64"
# What the loader would read of the agent's files, and same-length replacements: its configuration
# files (paths that do not exist) and its default library directories (glibc's, musl's).
LOADER_PATCHES = (
    (rb"/etc/ld\.so\.preload", b"/terminal_rl/nopre"),
    (rb"/etc/ld\.so\.cache", b"/terminal_rl/noc"),
    (rb"/etc/ld-musl-", b"/terminal_rl/"),
    (rb"/lib/([\w-]+)/\0/usr/lib/\1/\0/lib/\0/usr/lib/\0", rb"/.il/\1/\0/.iu/lib/\1/\0/.il/\0/.iu/lib/\0"),
    (rb"/lib:/usr/local/lib:/usr/lib", b"/.il:/.iu/local/lib:/.iu/lib"),
    (rb"/lib64/\0/usr/lib64/\0", b"/.il64/\0/.iu/lib64/\0"),  # glibc without multiarch (RHEL, Fedora)
)
# Files the image's libraries and tools read configuration or trust from (OpenSSL, CA bundles,
# iconv's modules): environment variable -> where images keep them (the image's own setting first).
PRISTINE_FILES = {
    "OPENSSL_CONF": ("/usr/lib/ssl/openssl.cnf", "/etc/ssl/openssl.cnf", "/etc/pki/tls/openssl.cnf"),
    "SSL_CERT_FILE": ("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/cert.pem", "/etc/pki/tls/certs/ca-bundle.crt"),
    "SSL_CERT_DIR": ("/etc/ssl/certs",),
    "REQUESTS_CA_BUNDLE": (),
    "CURL_CA_BUNDLE": (),
    "PIP_CERT": (),
    "GCONV_PATH": (
        "/usr/lib/x86_64-linux-gnu/gconv",
        "/usr/lib/aarch64-linux-gnu/gconv",
        "/usr/lib/gconv",
        "/usr/lib64/gconv",
    ),
}
# An empty directory of the toolchain: the tests' CURL_HOME (no .curlrc of the agent's).
EMPTY_DIR = f"{TOOLCHAIN}/work"
PT_INTERP = 3
MAX_ENTRIES = 20000
MAX_CONFIG_FILES = 256
LOG_BYTES = 16384
libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> int:
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
    return result


def mount(source: str | None, target: str, fstype: str | None = None, flags: int = 0, data: str | None = None) -> None:
    encode = lambda text: None if text is None else text.encode()  # noqa: E731
    check(libc.mount(encode(source), target.encode(), encode(fstype), flags, encode(data)), f"mount {target}")


def read_only(target: str) -> None:
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def interference() -> list[str]:
    """Other processes holding our stdio, root or /proc entries (opened before we became non-dumpable)."""
    me = os.getpid()
    ours = {(st.st_dev, st.st_ino) for st in (os.fstat(0), os.fstat(1), os.fstat(2), os.stat("/"))}
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit() and int(p) != me):
        try:
            entries = [f"/proc/{pid}/cwd"] + [f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        for entry in entries:
            try:
                link = os.readlink(entry)
                target = os.stat(entry)
            except OSError:
                continue
            if (target.st_dev, target.st_ino) in ours or link.startswith(f"/proc/{me}/"):
                found.append(f"process {pid} holds {link}")
    return found


def inside(root: str, path: str) -> str | None:
    """``path`` resolved within ``root`` (symlinks followed, absolute ones from ``root``, never out of
    it), as a path from ``root``; None if it does not exist or loops."""
    parts, resolved, hops = [p for p in path.split("/") if p], "", 40
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            resolved = resolved.rsplit("/", 1)[0]
            continue
        try:
            info = os.lstat(root + resolved + "/" + part)
        except OSError:
            return None
        if stat.S_ISLNK(info.st_mode):
            hops -= 1
            link = os.readlink(root + resolved + "/" + part)
            if hops < 0:
                return None
            parts = [p for p in link.split("/") if p] + parts
            resolved = "" if link.startswith("/") else resolved
            continue
        resolved += "/" + part
    return resolved or "/"


def interpreter_of(path: str) -> str | None:
    """The dynamic loader an ELF program names (its ``PT_INTERP``; 64-bit little-endian), or None."""
    with open(path, "rb") as handle:
        header = handle.read(64)
        if header[:6] != b"\x7fELF\x02\x01":
            return None
        (table,), (size, count) = struct.unpack_from("<Q", header, 32), struct.unpack_from("<HH", header, 54)
        for index in range(count):
            handle.seek(table + index * size)
            entry = handle.read(size)
            if len(entry) == size and struct.unpack_from("<I", entry)[0] == PT_INTERP:
                (start,), (length,) = struct.unpack_from("<Q", entry, 8), struct.unpack_from("<Q", entry, 32)
                handle.seek(start)
                return handle.read(min(length, 4096)).rstrip(b"\0").decode("utf-8", "replace")
    return None


def loaders_of(root: str, search_path: list[str]) -> set[str]:
    """Every dynamic loader the programs of the image's ``PATH`` directories name (read from the
    image at ``root``)."""
    found = set()
    for directory in {inside(root, d) for d in search_path} - {None}:
        try:
            names = sorted(os.listdir(root + directory))[:MAX_ENTRIES]
        except OSError:
            continue
        for name in names:
            program = inside(root, f"{directory}/{name}")
            try:
                loader = program and os.path.isfile(root + program) and interpreter_of(root + program)
            except (OSError, struct.error):  # unreadable or truncated: names no loader
                continue
            if loader and loader.startswith("/"):
                found.add(loader)
    return found


def patched_loader(code: bytes, loader: str) -> bytes:
    """``code`` (a glibc or musl loader) reading none of the agent's files (LOADER_PATCHES); an
    error when one of its libc's patches does not apply (an unknown loader is not run half-patched)."""
    counts = []
    for pattern, replacement in LOADER_PATCHES:
        code, count = re.subn(pattern, replacement, code)
        counts.append(count)
    glibc, musl = counts[1] and (counts[3] or counts[5]), counts[2] and counts[4]
    if not (glibc or musl):
        raise RuntimeError(f"the image's loader {loader} is neither a glibc nor a musl loader we can patch")
    return code


def enter_sandbox_namespace() -> None:
    """A private copy of the sandbox's mount namespace, ours to mount in."""
    with open("/proc/1/ns/mnt") as namespace:
        check(libc.setns(namespace.fileno(), CLONE_NEWNS), "setns into the sandbox's mount namespace")
    check(libc.unshare(CLONE_NEWNS), "unshare a private mount namespace")
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    os.chdir("/")
    toolchain = [m for m in (line.split() for line in open("/proc/self/mountinfo")) if m[4] == TOOLCHAIN]
    if not toolchain or "ro" not in toolchain[-1][5].split(","):
        raise RuntimeError(f"{TOOLCHAIN} is not the read-only toolchain mount in this sandbox")


def pristine_image(handle: int) -> str:
    """The image (``handle``: its root, taken before entering the sandbox) under WORK, read-only,
    and an overlay of it with a private writable layer; returns the overlay's path."""
    mount("tmpfs", WORK, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for name in ("lower", "upper", "scratch", "image", "root"):
        os.mkdir(f"{WORK}/{name}", 0o755)
    check(
        libc.syscall(SYS_MOVE_MOUNT, handle, b"", AT_FDCWD, f"{WORK}/lower".encode(), MOVE_MOUNT_F_EMPTY_PATH),
        "move the image's root",
    )
    read_only(f"{WORK}/lower")
    os.chmod(f"{WORK}/upper", 0o777)
    mount(
        "overlay",
        f"{WORK}/image",
        "overlay",
        MS_NOSUID | MS_NODEV,
        f"lowerdir={WORK}/lower,upperdir={WORK}/upper,workdir={WORK}/scratch",
    )
    return f"{WORK}/image"


def compose(image: str, loaders: set[str]) -> str:
    """The tests' root: the agent's files (each top-level entry bound, everything mounted below it
    included) in a tmpfs of ours, except the toolchain (read-only), the private directories (fresh
    tmpfs), the pristine image at IMAGE (and its /lib and /usr at IMAGE_LIB and IMAGE_USR), its
    ``loaders`` (patched) and the PINNED paths."""
    root = f"{WORK}/root"
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    ours = {TOOLCHAIN, IMAGE_LIB, IMAGE_USR, IMAGE_LIB64, ALTERNATIVES, *PRIVATE_DIRS, *PINNED, *loaders}
    mirror("/", root, ours)
    os.makedirs(root + TOOLCHAIN, exist_ok=True)
    mount(TOOLCHAIN, root + TOOLCHAIN, None, MS_BIND)
    read_only(root + TOOLCHAIN)
    mount(image, root + IMAGE, None, MS_BIND)
    for path in PRIVATE_DIRS:
        os.makedirs(root + path, exist_ok=True)
        mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    links = ((IMAGE_LIB, "/lib"), (IMAGE_USR, "/usr"), (IMAGE_LIB64, "/lib64"), *((path, path) for path in PINNED))
    for link, path in links:
        real = inside(image, path)
        fallback = PINNED.get(link) and f"{TOOLCHAIN}/usr/bin/{PINNED[link]}"
        if real is not None or fallback:
            os.makedirs(os.path.dirname(root + link), exist_ok=True)
            os.symlink(IMAGE + real if real is not None else fallback, root + link)
    alternatives = inside(image, ALTERNATIVES)
    if alternatives is not None and os.path.isdir(image + alternatives):
        os.makedirs(root + ALTERNATIVES)
        for name in sorted(os.listdir(image + alternatives))[:MAX_ENTRIES]:  # each to its final pristine file
            if (real := inside(image, f"{alternatives}/{name}")) is not None:
                os.symlink(IMAGE + real, f"{root}{ALTERNATIVES}/{name}")
    for loader in loaders:
        real = inside(image, loader)
        if real is None:
            continue
        with open(image + real, "rb") as handle:
            code = patched_loader(handle.read(), loader)
        os.makedirs(os.path.dirname(root + loader), exist_ok=True)
        with open(root + loader, "wb") as out:
            out.write(code)
        os.chmod(root + loader, 0o755)
    return root


def mirror(source: str, target: str, ours: set[str]) -> None:
    """``target`` (our directory) shows the entries of the agent's ``source``: symlinks recreated,
    the rest bound, except the paths in ``ours``; directories on the way to one of those become
    directories of ours, mirrored one level further (so no agent process can unmount them by
    removing or renaming its own directories). Entries that vanish meanwhile are left out."""
    try:
        names = sorted(os.listdir(source))[:MAX_ENTRIES]
    except OSError:
        return
    real = os.path.realpath(source)
    for name in names:
        path = os.path.join(source, name)
        if path in ours:
            continue
        try:
            if any(p.startswith(path + "/") for p in ours):
                os.mkdir(target + "/" + name, 0o755)
                mirror(path, target + "/" + name, ours)
                continue
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(path), target + "/" + name)
            elif real != source and not any(real == p or real.startswith(p + "/") for p in ours):
                # A directory reached through the agent's symlink (e.g. /bin -> usr/bin): its entries
                # are the ones at the symlink's target, which the tests' root shows as they are.
                os.symlink(os.path.join(real, name), target + "/" + name)
            elif stat.S_ISDIR(info.st_mode):
                os.mkdir(target + "/" + name, 0o755)
                mount(path, target + "/" + name, None, MS_BIND | MS_REC)
            else:
                open(target + "/" + name, "x").close()
                mount(path, target + "/" + name, None, MS_BIND)
        except OSError:
            continue


def shims(search_path: list[str]) -> list[str]:
    """One directory of shims per directory of the image's ``PATH`` (in the tests' root, after
    chroot): each program of the pristine image under its name. Compiled programs link to the
    pristine file; scripts are copies whose ``#!`` interpreter is the pristine one (through the shims
    when it is on ``PATH``); a virtual environment's ``bin`` keeps its ``pyvenv.cfg`` (its ``home``
    pointed at the pristine base) and its libraries. Returns the shim directories in ``PATH`` order."""
    mount("tmpfs", SHIMS, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    directories: dict[str, str] = {}
    for path in search_path:
        real = inside(IMAGE, path)
        if real and real not in directories and os.path.isdir(IMAGE + real):
            directories[real] = f"{SHIMS}/{len(directories)}/bin"
            os.makedirs(directories[real])
            virtual_environment(os.path.dirname(real), os.path.dirname(directories[real]))
    for real, shim in directories.items():
        for name in sorted(os.listdir(IMAGE + real))[:MAX_ENTRIES]:
            program = inside(IMAGE, f"{real}/{name}")
            if program is not None and os.path.isfile(IMAGE + program):
                shim_program(IMAGE + program, f"{shim}/{name}", directories)
    read_only(SHIMS)
    return list(directories.values())


def virtual_environment(prefix: str, shim_root: str) -> None:
    config = IMAGE + prefix + "/pyvenv.cfg"
    if not os.path.isfile(config):
        return
    lines = []
    for line in open(config, encoding="utf-8", errors="replace").read().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and (home := inside(IMAGE, value.strip())):
            line = f"home = {IMAGE}{home}"
        lines.append(line)
    with open(shim_root + "/pyvenv.cfg", "w") as out:
        out.write("\n".join(lines) + "\n")
    for name in os.listdir(IMAGE + prefix):
        if name not in ("bin", "pyvenv.cfg") and (real := inside(IMAGE, f"{prefix}/{name}")):
            os.symlink(IMAGE + real, f"{shim_root}/{name}")


def shim_program(program: str, shim: str, directories: dict[str, str]) -> None:
    with open(program, "rb") as handle:
        if handle.read(2) != b"#!":
            os.symlink(program, shim)
            return
        line = handle.readline(4096)
        interpreter, _, arguments = line.strip().partition(b" ")
        named = interpreter.decode("utf-8", "replace")
        if named.startswith("/"):
            folder, real = inside(IMAGE, os.path.dirname(named)), inside(IMAGE, named)
            if folder in directories:
                named = f"{directories[folder]}/{os.path.basename(named)}"
            elif real:
                named = IMAGE + real
        with open(shim, "wb") as out:
            out.write(b"#!" + b" ".join(filter(None, [named.encode(), arguments])) + b"\n")
            shutil.copyfileobj(handle, out)
    os.chmod(shim, 0o755)


def configured_libraries(root: str) -> list[str]:
    """The library directories the image at ``root`` configures: ``/etc/ld.so.conf`` and its
    includes (glibc), ``/etc/ld-musl-<arch>.path`` (musl); paths as the image names them. Read
    defensively (the agent's configuration too): regular files only, each once, a bounded number."""
    found, pending, seen = [], ["/etc/ld.so.conf"], set()
    etc = inside(root, "/etc")
    try:
        names = os.listdir(root + etc)
        pending += sorted(f"/etc/{n}" for n in names if n.startswith("ld-musl-") and n.endswith(".path"))
    except (OSError, TypeError):
        pass
    while pending and len(seen) < MAX_CONFIG_FILES:
        path = pending.pop(0)
        real = inside(root, path)
        if real is None or real in seen:
            continue
        seen.add(real)
        text = regular_file_text(root + real)
        if path.endswith(".path"):  # musl: directories separated by colons or newlines
            found += [d for d in text.replace(":", "\n").split() if d.startswith("/")]
            continue
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("include "):
                pattern = os.path.join("/etc", line.split(None, 1)[1])
                folder = inside(root, os.path.dirname(pattern))
                try:
                    names = sorted(os.listdir(root + folder))[:MAX_CONFIG_FILES] if folder else []
                except OSError:
                    names = []
                pending += [f"{folder}/{n}" for n in names if fnmatch.fnmatch(n, os.path.basename(pattern))]
            elif line.startswith("/"):
                found.append(line)
    return found


def regular_file_text(path: str, limit: int = 1 << 20) -> str:
    """The start of a regular file's text; "" for anything else (a directory, a FIFO, a device)
    or an unreadable one, never blocking and never following a final symlink."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return ""
        return handle.read(limit).decode("utf-8", "replace")


def library_path(image_libraries: list[str]) -> list[str]:
    """``LD_LIBRARY_PATH`` in the tests' root: the pristine image's library directories (those its
    environment names, those it configures, the loaders' defaults), then the ones the agent's
    configuration adds (libraries the agent installed, for its programs the tests run)."""
    usr_lib = IMAGE_USR + "/lib"
    triplets = [n for n in os.listdir(usr_lib) if "-linux-" in n] if os.path.isdir(usr_lib) else []
    defaults = [f"{lib}/{t}" for lib in ("/lib", "/usr/lib") for t in triplets]
    defaults += ["/lib64", "/usr/lib64", "/lib", "/usr/local/lib", "/usr/lib"]
    pristine = (inside(IMAGE, d) for d in image_libraries + configured_libraries(IMAGE) + defaults)
    agent = [d for d in configured_libraries("") if os.path.isdir(d)]
    return list(dict.fromkeys([IMAGE + d for d in pristine if d and os.path.isdir(IMAGE + d)] + agent))


def runtime_environment(job: dict) -> dict[str, str]:
    """The tests' environment (in the tests' root): the job's, the pristine runtime's search paths
    (shims made here), and the pristine files its libraries and tools read configuration and trust
    from (not the agent's ``/etc``, ``~/.curlrc``, pip or git configuration)."""
    search = job["search_path"]
    pristine_path = [IMAGE + real for real in (inside(IMAGE, d) for d in search["image"]) if real]
    environment = job["environment"] | {
        "PATH": ":".join(shims(search["image"]) + pristine_path + search["toolchain"] + search["image"]),
        "LD_LIBRARY_PATH": ":".join(library_path(search["libraries"])),
        # Only our sitecustomize: the image's own entries (e.g. /app/src, the agent's files) are
        # appended by it after the trusted paths, never ahead of the standard library.
        "PYTHONPATH": f"{TOOLCHAIN}/lib/site",
        "TERMINAL_RL_PYTHONPATH": ":".join(search["python"]),
        "SHELL": "/bin/bash",
        "CURL_HOME": EMPTY_DIR,
        "PIP_CONFIG_FILE": "/dev/null",
        "UV_NO_CONFIG": "1",
        "NPM_CONFIG_USERCONFIG": "/dev/null",
        "NPM_CONFIG_GLOBALCONFIG": "/dev/null",
        # git: no configuration of the agent's beyond the repository's own; root's repositories usable
        # by the tests' uid.
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "*",
    }
    for name, candidates in PRISTINE_FILES.items():
        named = [environment[name]] if environment.get(name, "").startswith("/") else []
        real = next((r for r in (inside(IMAGE, c) for c in named + list(candidates)) if r), None)
        if real is not None:
            environment[name] = IMAGE + real
    return environment


def write_files(root: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = os.path.normpath(os.path.join(root, name))
        if not target.startswith(root + "/"):
            raise ValueError(f"a test file's name leaves {root}: {name!r}")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(target, 0o755 if name.endswith(".sh") else 0o644)


def become_verifier(uid: int, capabilities: list[str]) -> None:
    """uid ``uid`` with exactly the sandbox's capabilities (ambient: they survive execve)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    check(libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0), "keep capabilities")
    os.setresuid(uid, uid, uid)
    capabilities = [name.upper().removeprefix("CAP_") for name in capabilities]
    mask = sum(1 << CAPABILITIES[name] for name in capabilities)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    data = (Data * 2)(
        Data(mask & 0xFFFFFFFF, mask & 0xFFFFFFFF, mask & 0xFFFFFFFF), Data(mask >> 32, mask >> 32, mask >> 32)
    )
    check(libc.capset(ctypes.byref(Header(0x20080522, 0)), data), "set capabilities")
    for name in capabilities:
        check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAPABILITIES[name], 0, 0), f"ambient {name}")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")


def prepare(job: dict) -> dict[str, str]:
    """Step 2: the tests' root (this process ends up chrooted in it, tests written); returns the
    command's environment."""
    handle = check(
        libc.syscall(SYS_OPEN_TREE, AT_FDCWD, b"/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC), "take the image's root"
    )
    loaders = loaders_of("/", job["search_path"]["image"])
    enter_sandbox_namespace()
    root = compose(pristine_image(handle), loaders)
    os.chdir(root)
    os.chroot(".")
    os.chdir("/")
    read_only("/")
    write_files("/tests", job["files"])
    os.chmod("/logs/verifier", 0o777)
    return runtime_environment(job)


def run(job: dict) -> dict:
    """Steps 2-4 in this (child) process; returns what the verification left behind."""
    environment = prepare(job)
    reader, writer = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(reader)
            os.setsid()
            os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
            os.dup2(writer, 1)
            os.dup2(writer, 2)
            become_verifier(job["uid"], job["capabilities"])
            os.chdir(job["workdir"])
            os.execvpe(job["command"][0], job["command"], environment)
        except BaseException as error:  # noqa: BLE001 - reported through the pipe
            os.write(2, f"verifier could not start the tests: {error}\n".encode())
        os._exit(126)
    os.close(writer)
    output, status = collect(reader, pid, job["timeout_sec"])
    end_processes_of(job["uid"])  # what the tests left running must not write after the fact
    files = {}
    for folder, _, names in os.walk("/logs/verifier"):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as handle:
                    files[os.path.relpath(path, "/logs/verifier")] = handle.read(1 << 20).decode("utf-8", "replace")
    return {
        "pid": pid,
        "exit_code": None if status is None else os.waitstatus_to_exitcode(status),
        "timed_out": status is None,
        "duration_sec": time.monotonic() - started,
        "output": output,
        "files": files,
    }


def end_processes_of(uid: int) -> None:
    """SIGKILL every process running as ``uid`` (the tests' leftovers, background ones included)."""
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


def collect(reader: int, pid: int, timeout_sec: float) -> tuple[str, int | None]:
    """The command's output (head and tail kept) and its wait status once it ends (None: its time ran
    out and its process group was killed). Output of processes it left running is not waited for."""
    head, tail, deadline, status = b"", b"", time.monotonic() + timeout_sec, None
    os.set_blocking(reader, False)
    while status is None:
        if time.monotonic() >= deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        select.select([reader], [], [], 0.2)
        done, waited = os.waitpid(pid, os.WNOHANG)
        status = waited if done else None
        while True:  # everything readable now (and, once it ended, everything it wrote)
            try:
                chunk = os.read(reader, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            room = max(0, LOG_BYTES - len(head))
            head, tail = head + chunk[:room], (tail + chunk[room:])[-LOG_BYTES:]
    os.close(reader)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return _text(head, tail), status


def _text(head: bytes, tail: bytes) -> str:
    middle = "\n[... output elided ...]\n" if tail else ""
    return head.decode("utf-8", "replace") + middle + tail.decode("utf-8", "replace")


def main() -> int:
    check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "make the verifier non-dumpable")
    found = interference()
    if found:
        print("INTERFERENCE " + json.dumps(found), flush=True)
        return 3
    print("READY", flush=True)
    job = json.loads(sys.stdin.readline())
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(reader)
        try:
            result = run(job)
        except BaseException as error:  # noqa: BLE001 - the host sees why
            result = {"error": f"{type(error).__name__}: {error}"}
        os.write(writer, json.dumps(result).encode())
        os._exit(0)
    os.close(writer)
    chunks = []
    while chunk := os.read(reader, 65536):
        chunks.append(chunk)
    _, status = os.waitpid(child, 0)
    try:
        result = json.loads(b"".join(chunks))
    except ValueError:  # killed (by the agent, which may signal it, or out of memory) before it reported
        result = {"stopped": f"the verifier's worker ended without a result (wait status {status})"}
    print(f"RESULT {job['nonce']} " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

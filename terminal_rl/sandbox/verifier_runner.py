"""The verifier's trusted side: runs in a short-lived verifier container started from the trusted
toolchain image, in the sandbox's PID and network namespaces (``terminal_rl/sandbox/verifier.py``).
Standard library only; run as ``python3 -I -S verifier_runner.py``.

1. Make itself non-dumpable (no other process may read its memory, files or ``/proc`` entries), then
   check that no other process got hold of its stdio, memory or root before that (a process that
   did is interference: the verification fails and scores 0). Only then it says ``READY`` and reads
   the job (JSON, one line) from stdin.
2. In a child (non-dumpable from birth): enter the sandbox's mount namespace, unshare a private copy
   of it, mount fresh tmpfs on ``/tests`` and ``/logs/verifier`` (agent processes cannot see them) and
   write the task's tests there; check that ``/terminal_rl`` is the read-only toolchain mount.
3. Run the job's command as uid ``VERIFIER_UID`` (not the agent's root: the agent cannot reach the
   verifier's ``/proc/<pid>/root``), with the sandbox's capabilities as ambient capabilities (so
   tests read what root can), no new privileges, a clean environment whose ``PATH`` starts with the
   toolchain, and a process-group timeout.
4. Print one line ``RESULT <nonce> <json>``: the files the command left in ``/logs/verifier``
   (reward files, JUnit reports) and the tail of its output.
"""

import ctypes
import json
import os
import select
import signal
import stat
import sys
import time

CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE, MS_NOSUID, MS_NODEV = 0x4000, 1 << 18, 2, 4
PR_SET_DUMPABLE, PR_SET_KEEPCAPS, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE = 4, 8, 38, 47, 2
CAPABILITIES = {"CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "FOWNER": 3, "FSETID": 4, "KILL": 5,
                "SETGID": 6, "SETUID": 7, "SETPCAP": 8, "NET_BIND_SERVICE": 10, "NET_RAW": 13, "SYS_CHROOT": 18,
                "MKNOD": 27, "AUDIT_WRITE": 29, "SETFCAP": 31, "WAKE_ALARM": 35}
TOOLCHAIN = "/terminal_rl"
PRIVATE_DIRS = ("/tests", "/logs/verifier")
LOG_BYTES = 16384
libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


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


def enter_private_namespace() -> None:
    with open("/proc/1/ns/mnt") as namespace:
        check(libc.setns(namespace.fileno(), CLONE_NEWNS), "setns into the sandbox's mount namespace")
    check(libc.unshare(CLONE_NEWNS), "unshare a private mount namespace")
    check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make the mounts private")
    os.chdir("/")
    mounts = [line.split() for line in open("/proc/self/mountinfo")]
    toolchain = [m for m in mounts if m[4] == TOOLCHAIN]
    if not toolchain or "ro" not in toolchain[-1][5].split(","):
        raise RuntimeError(f"{TOOLCHAIN} is not the read-only toolchain mount in this sandbox")
    for path in PRIVATE_DIRS:
        fresh_directory(path)
        check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755"), f"mount {path}")


def fresh_directory(path: str) -> None:
    """A real directory at ``path``: a planted symlink or file there (or on its way) is replaced."""
    current = ""
    for part in path.strip("/").split("/"):
        current += "/" + part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            os.mkdir(current, 0o755)
            continue
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(current)
            os.mkdir(current, 0o755)


def write_files(root: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = os.path.join(root, name)
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
    mask = sum(1 << CAPABILITIES[name] for name in capabilities)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    data = (Data * 2)(Data(mask & 0xFFFFFFFF, mask & 0xFFFFFFFF, mask & 0xFFFFFFFF), Data(mask >> 32, mask >> 32, mask >> 32))
    check(libc.capset(ctypes.byref(Header(0x20080522, 0)), data), "set capabilities")
    for name in capabilities:
        check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAPABILITIES[name], 0, 0), f"ambient {name}")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")


def run(job: dict) -> dict:
    """Step 2-4 in this (child) process; returns what the verification left behind."""
    enter_private_namespace()
    write_files("/tests", job["files"])
    os.chmod("/logs/verifier", 0o777)
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
            os.execve(job["command"][0], job["command"], job["environment"])
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
    return {"pid": pid, "exit_code": None if status is None else os.waitstatus_to_exitcode(status),
            "timed_out": status is None, "duration_sec": time.monotonic() - started, "output": output, "files": files}


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
    os.waitpid(child, 0)
    print(f"RESULT {job['nonce']} " + b"".join(chunks).decode(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

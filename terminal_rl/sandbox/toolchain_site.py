"""The toolchain Python's start-up (installed as its ``sitecustomize``).

A module the toolchain has (the standard library, pytest, requests and their dependencies) is always
imported from the toolchain: a finder placed first on ``sys.meta_path`` resolves those names only in
the toolchain's own paths, so a planted ``pytest.py`` or ``json.py`` in the working directory or a
script's folder (which Python puts first on ``sys.path``) shadows nothing. What the tests import
beyond that comes from the image they test: its site-packages are appended after the toolchain's,
and only plain path lines of their ``.pth`` files count (never their ``import`` lines); the working
directory comes last. When ``TERMINAL_RL_JUNIT_DIR`` is set, every pytest this interpreter runs
writes its own JUnit report there, named after its process id, and the interpreter lists the files
it opened for reading there at exit (``reads-<pid>.txt``, from Python's ``open`` audit events: the
tests' reads and those of the Python programs they start; a program in another language is not seen).
"""

import glob
import importlib.machinery
import os
import sys

_TOOLCHAIN_PATHS = [p for p in sys.path if p.startswith("/terminal_rl/")]


class _ToolchainFirst:
    """Top-level modules the toolchain provides come from the toolchain, whatever sys.path says."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if path is not None or name in sys.builtin_module_names:
            return None
        return importlib.machinery.PathFinder.find_spec(name, _TOOLCHAIN_PATHS)


def _image_site_dirs() -> list[str]:
    version = "python%d.%d" % sys.version_info[:2]
    exact = [f"/usr/local/lib/{version}/site-packages", f"/usr/local/lib/{version}/dist-packages",
             f"/usr/lib/{version}/site-packages", "/usr/lib/python3/dist-packages", f"/root/.local/lib/{version}/site-packages"]
    others = sorted(glob.glob("/usr/local/lib/python3*/site-packages") + glob.glob("/usr/local/lib/python3*/dist-packages"))
    return [d for d in dict.fromkeys(exact + others) if os.path.isdir(d) and not d.startswith("/terminal_rl")]


def _append(directory: str) -> None:
    if directory in sys.path:
        return
    sys.path.append(directory)
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".pth"):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        for line in (line.strip() for line in lines):
            if line and not line.startswith(("#", "import ", "import\t")):
                path = os.path.join(directory, line)
                if os.path.isdir(path) and path not in sys.path:
                    sys.path.append(path)


sys.meta_path.insert(0, _ToolchainFirst())
for _directory in _image_site_dirs():
    _append(_directory)
try:
    sys.path.append(os.getcwd())
except OSError:
    pass
_junit = os.environ.get("TERMINAL_RL_JUNIT_DIR")
_NOT_INPUTS = ("/terminal_rl/", "/proc/", "/sys/", "/dev/", "/tests/", "/logs/verifier/", "/usr/lib/python",
               "/usr/local/lib/python")
_READS_KEPT = 5000


def _record_reads(directory: str) -> None:
    reads = set()

    def audit(event, args):
        if event != "open" or len(reads) >= _READS_KEPT or not isinstance(args[0], (str, bytes)):
            return
        mode, flags = args[1], args[2] or 0
        # Files it creates (temporary files) or only writes are not inputs; nor are directories.
        if isinstance(mode, str):
            writing = "w" in mode or "a" in mode or "x" in mode
        else:
            writing = bool(flags & (os.O_CREAT | os.O_DIRECTORY)) or (flags & 3) == os.O_WRONLY
        if not writing:
            path = os.path.abspath(os.fsdecode(args[0]))
            if not path.startswith(_NOT_INPUTS):
                reads.add(path)

    def write():
        try:
            os.makedirs(directory, exist_ok=True)
            with open(f"{directory}/reads-{os.getpid()}.txt", "w", encoding="utf-8") as out:
                out.write("\n".join(sorted(path for path in reads if not os.path.isdir(path))))
        except OSError:
            pass

    import atexit

    sys.addaudithook(audit)
    atexit.register(write)


if _junit:
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} --junitxml={_junit}/{os.getpid()}.xml"
    _record_reads(_junit)

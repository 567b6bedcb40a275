"""Start-up of every Python the tests run (the pristine image's or the toolchain's): installed as
``/terminal_rl/lib/site/sitecustomize.py``, found through ``PYTHONPATH``.

A module the trusted paths have (those under ``/terminal_rl``: the pristine image's standard library
and packages at ``/terminal_rl/image``, or the toolchain's) is always imported from there: a finder
placed first on ``sys.meta_path`` resolves top-level names in those paths first, so a planted
``pytest.py`` or ``json.py`` in the working directory or a script's folder (which Python puts first
on ``sys.path``) shadows nothing. After them come the toolchain's packages (pytest and requests for
an image without them), then the image's own ``PYTHONPATH`` entries (``TERMINAL_RL_PYTHONPATH``:
never ahead of the standard library), then the agent's site-packages for this Python version (packages the agent
installed, which its tests may import), of which only plain path lines of ``.pth`` files count (never
their ``import`` lines); the working directory comes last. When ``TERMINAL_RL_JUNIT_DIR`` is set,
every pytest this interpreter runs writes its own JUnit report there, named after its process id,
and the interpreter lists the files it opened for reading there at exit (``reads-<pid>.txt``, from
Python's ``open`` audit events: the tests' reads and those of the Python programs they start; a
program in another language is not seen).
"""

import importlib.machinery
import os
import sys

_TOOLCHAIN_PACKAGES = "/terminal_rl/usr/lib/python3/dist-packages"


class _TrustedFirst:
    """Top-level modules the trusted paths provide come from them, whatever sys.path says."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if path is not None or name in sys.builtin_module_names:
            return None
        return importlib.machinery.PathFinder.find_spec(name, _TRUSTED_PATHS)


def _agent_site_dirs() -> list:
    version = "python%d.%d" % sys.version_info[:2]
    candidates = [
        f"/usr/local/lib/{version}/site-packages",
        f"/usr/local/lib/{version}/dist-packages",
        f"/usr/lib/{version}/site-packages",
        "/usr/lib/python3/dist-packages",
        f"/root/.local/lib/{version}/site-packages",
    ]
    return [d for d in candidates if os.path.isdir(d)]


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


if sys.prefix != "/terminal_rl/usr" and os.path.isdir(_TOOLCHAIN_PACKAGES) and _TOOLCHAIN_PACKAGES not in sys.path:
    sys.path.append(_TOOLCHAIN_PACKAGES)
_TRUSTED_PATHS = [p for p in sys.path if p.startswith("/terminal_rl/")]
sys.meta_path.insert(0, _TrustedFirst())
for _entry in os.environ.get("TERMINAL_RL_PYTHONPATH", "").split(":"):  # the image's own PYTHONPATH
    if _entry and _entry not in sys.path:
        sys.path.append(_entry)
for _directory in _agent_site_dirs():
    _append(_directory)
try:
    sys.path.append(os.getcwd())
except OSError:
    pass
_junit = os.environ.get("TERMINAL_RL_JUNIT_DIR")
_NOT_INPUTS = (
    "/terminal_rl/",
    "/proc/",
    "/sys/",
    "/dev/",
    "/tests/",
    "/logs/verifier/",
    "/usr/lib/python",
    "/usr/local/lib/python",
)
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

    if hasattr(sys, "addaudithook"):  # Python >= 3.8
        sys.addaudithook(audit)
        atexit.register(write)


if _junit:
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} --junitxml={_junit}/{os.getpid()}.xml"
    _record_reads(_junit)

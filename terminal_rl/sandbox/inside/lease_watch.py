"""A sandbox's main process (runs on the toolchain's Python): it lives while its owner renews the
lease, so a sandbox whose run died stops by itself (and, auto-removed, disappears) within a minute,
with no janitor and no daemon of ours.

    python3 -I -S lease_watch.py LEASE_FILE STALE_SEC BUDGET_SEC

Exits when ``LEASE_FILE`` (mounted read-only from the owner's node-local lease folder) was last
touched more than ``STALE_SEC`` ago, or is gone, or after ``BUDGET_SEC`` (the task's budgets plus a
grace) whatever the lease says.
"""

import os
import sys
import time

CHECK_SEC = 2.0


def main(lease: str, stale_sec: float, budget_sec: float) -> int:
    deadline = time.monotonic() + budget_sec
    while time.monotonic() < deadline:
        try:
            age = time.time() - os.stat(lease).st_mtime
        except OSError:
            return 0
        if age > stale_sec:
            return 0
        time.sleep(CHECK_SEC)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2]), float(sys.argv[3])))

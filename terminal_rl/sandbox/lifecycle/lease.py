"""The owner's side of a sandbox lease: a file in the run's node-local lease folder, touched every
``renew_sec`` by a daemon thread (never the event loop: a busy loop must not let it lapse while
sandboxes run, verification included). Every sandbox mounts the folder read-only and its main process
(``lease_watch.py``) exits once the file is older than ``stale_sec`` or gone, so sandboxes of a run
that died (SIGKILL included) stop and, auto-removed, disappear within ``stale_sec`` plus a few seconds.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

# Where sandboxes see the lease folder: directly under /, so the agent cannot move it away (a mount
# point cannot be renamed) or write to it (read-only).
MOUNT_POINT = "/.terminal_rl_lease"


class Lease:
    def __init__(self, folder: Path, renew_sec: float):
        self.folder = folder
        self.path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:12]}.lease"
        self._renew_sec = renew_sec
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def mounted_path(self) -> str:
        """The lease file as sandboxes see it."""
        return f"{MOUNT_POINT}/{self.path.name}"

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        self._thread = threading.Thread(target=self._renew, name="sandbox-lease", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the lease: the sandboxes still holding it exit."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
        self.path.unlink(missing_ok=True)

    def _renew(self) -> None:
        while not self._stopped.wait(self._renew_sec):
            try:
                os.utime(self.path)
            except FileNotFoundError:
                self.path.touch()

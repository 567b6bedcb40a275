"""What a training run shows on the console: a short header, one progress line per step, validation
results, and where everything went. Everything else the libraries print (verl's config dump, engine
warnings, Ray and TransferQueue notices, tqdm bars) goes to the run's log file.

verl's trainer runs inside a Ray actor, so the progress lines are rendered here, in the driver, from
the run's metrics file as verl's file logger appends to it. ``verbose=true`` leaves the console as the
libraries write it (the progress lines are printed too).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console as RichConsole

from terminal_rl.analysis import validation_score
from terminal_rl.run_context import RunContext

# Starts each launch's part of the log file (a resumed run appends to it).
LAUNCH_MARKER = "==== terminal_rl launch"


def app_header(app: str, run_id: str, run_dir: Path, rows: list[tuple[str, str]]) -> list[str]:
    """Every app's header (pure): the app, its run and directory, then one ``name  value`` line per row."""
    return [f"terminal_rl {app}  run {run_id}  ->  {run_dir}", *(row_line(name, value) for name, value in rows)]


def row_line(name: str, value: str) -> str:
    return f"  {name:<11} {value}"


def log_row(log_file: Path) -> tuple[str, str]:
    """The header row that says where the libraries' output went."""
    return "log", f"{log_file}  (verbose=true shows it here)"


def task_counts(source: str | Path, counts: dict[str, dict[str, int]]) -> str:
    """``source: split N (n difficulty / ...), ...`` (pure); ``counts``: split -> difficulty -> tasks."""
    splits = ", ".join(
        f"{split} {sum(c.values())} (" + " / ".join(f"{n} {d}" for d, n in c.items() if n) + ")"
        for split, c in counts.items()
    )
    return f"{Path(source).name}: {splits}"


def header_lines(
    run_id: str, run_dir: Path, task_counts_by_split: dict[str, dict[str, int]], settings: dict, total_steps: int
) -> list[str]:
    """The training run in a few lines (pure): what trains on what, with which reward, curriculum and
    filter. ``settings``: the composed config's ``task_set``, ``model``, ``hardware``, ``reward_mix``,
    ``curriculum``, ``data_filter`` and ``algorithm`` (plain dicts)."""
    mix = " + ".join(f"{name} {weight:g}" for name, weight in settings["reward_mix"]["weights"].items())
    curriculum = settings["curriculum"]
    stages = [stage["name"] for stage in curriculum.get("stages", [])]
    judge = [
        max(stage["judge_weights"].values(), default=0.0)
        for stage in curriculum.get("stages", [])
        if "judge_weights" in stage
    ]
    if judge and max(judge) > 0:
        mix = (
            f"tests + judge, the judge's weight set by the curriculum ({judge[0]:g} in the first stage, "
            f"{judge[-1]:g} last)"
        )
    hardware, lora, algorithm = settings["hardware"], settings["model"].get("lora", {}), settings.get("algorithm", {})
    algorithm = (
        f"{algorithm.get('adv_estimator', 'grpo')}"
        + ("" if algorithm.get("norm_adv_by_std_in_grpo", True) else " (not divided by the group's std)")
        + (f", LoRA rank {lora['rank']} alpha {lora['alpha']}" if lora.get("rank") else ", full fine-tuning")
    )
    return app_header(
        "train",
        run_id,
        run_dir,
        [
            ("tasks", task_counts(settings["task_set"]["path"], task_counts_by_split)),
            (
                "model",
                f"{settings['model']['name']} on {hardware['name']} ({hardware['nodes']} node(s) x "
                f"{hardware['gpus_per_node']} {'GPU' if hardware['device'] == 'cuda' else hardware['device']}), "
                f"{total_steps} steps",
            ),
            ("algorithm", algorithm),
            ("reward", mix),
            (
                "curriculum",
                f"{curriculum['kind']}"
                + (f" ({' -> '.join(stages)})" if stages else "")
                + f"   filter {settings['data_filter']['kind']}",
            ),
        ],
    )


def _eta(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def step_line(step: int, total: int, data: dict, seconds_per_step: float) -> str:
    """One step's progress (pure): step / total, ETA, step time, test score, pass rate, reward, judge
    weight, curriculum stage, masked and filtered fractions; in async mode (the step logged groups in
    flight while it trained) the staleness of its samples, mean and max in steps, and that overlap."""

    def value(key: str, digits: int = 3) -> str:
        number = data.get(key)
        return "-" if number is None else f"{float(number):.{digits}f}"

    line = (
        f"step {step}/{total}  ETA {_eta((total - step) * seconds_per_step)}  "
        f"{float(data.get('timing_s/step', 0)):.0f} s/step | tests {value('reward/tests_score')}  "
        f"pass {value('reward/pass_rate', 2)}  reward {value('critic/score/mean')}  "
        f"judge w {value('reward/weight/judge', 2)}  stage {value('curriculum/stage', 0)}  "
        f"masked {value('rollout/masked_fraction', 2)}  filtered {value('rollout/filtered', 2)}"
    )
    if "rollout/in_flight_while_training" not in data:
        return line
    stale = "training/off_policy/trajectory_staleness_worst"
    return (
        f"{line} | stale {value(stale + '/mean', 1)}/{value(stale + '/max', 0)}  "
        f"in flight {value('rollout/in_flight_while_training', 0)} groups while training"
    )


def validation_line(step: int, data: dict) -> str | None:
    """The step's validation results (pure), or None when it ran none."""
    scores = {}
    for key, value in data.items():
        parsed = validation_score(key)
        if parsed:
            scores[f"{parsed[0]} {parsed[1]}"] = value
    if not scores:
        return None
    return f"  validation @ step {step}: " + "  ".join(f"{name} {float(v):.3f}" for name, v in sorted(scores.items()))


class _Poller:
    """A daemon thread that calls ``poll()`` every ``interval_sec`` while the ``with`` block runs, and
    once more at its end. ``poll()`` may also be called from another thread (one poll at a time)."""

    def __init__(self, interval_sec: float):
        self.interval_sec, self._stop, self._lock = interval_sec, threading.Event(), threading.Lock()
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_sec):
            self.poll()

    def poll(self) -> None:
        with self._lock:
            self._poll()

    def _poll(self) -> None:
        raise NotImplementedError


class MetricsFollower(_Poller):
    """Calls ``on_step(step, data)`` for each record appended to the metrics file (polled)."""

    def __init__(self, path: Path, on_step: Callable[[int, dict], None], interval_sec: float = 1.0):
        super().__init__(interval_sec)
        self.path, self.on_step, self._offset = path, on_step, 0

    def _poll(self) -> None:
        if not self.path.is_file():
            return
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            try:
                record = json.loads(line)
                step, data = int(record["step"]), record["data"]
            except (ValueError, KeyError, TypeError):
                continue  # not a metrics record (blank, or written by something else)
            self.on_step(step, data)


def validation_progress_line(step: int, done: int, total: int) -> str:
    """A validation's progress (pure): episodes finished of those it runs."""
    return f"  validation @ step {step}: {done}/{total} episodes"


class ValidationProgress(_Poller):
    """Prints a validation's progress while it runs: it writes no metrics record until it ends (the one
    before step 1 runs minutes), but each finished episode appends a line to the run's rollout log
    (``<log_dir>/rollouts/val_step<N>.<pid>.jsonl``, ``integrations/verl/agent_loop.py``). A line at
    most every ``every_sec``, and one when the count reaches ``total`` (rows x ``val_kwargs.n``)."""

    def __init__(self, rollouts: Path, total: int, print_line: Callable[[str], None], every_sec: float = 15.0):
        super().__init__(1.0)
        self.rollouts, self.total, self.print_line, self.every_sec = rollouts, total, print_line, every_sec
        # A resumed run's earlier attempt left its own lines: only those written from now on count.
        self._offsets = {path: path.stat().st_size for path in rollouts.glob("val_step*.jsonl")}
        self._done: dict[int, int] = {}  # step -> episodes finished
        self._shown: dict[int, tuple[int, float]] = {}  # step -> (count, time) of the last line

    def _poll(self) -> None:
        for path in sorted(self.rollouts.glob("val_step*.jsonl")):
            step = int(path.name.removeprefix("val_step").split(".")[0])
            with path.open("rb") as handle:
                handle.seek(self._offsets.get(path, 0))
                chunk = handle.read()
            complete = chunk[: chunk.rfind(b"\n") + 1]
            self._offsets[path] = self._offsets.get(path, 0) + len(complete)
            self._done[step] = self._done.get(step, 0) + complete.count(b"\n")
        now = time.monotonic()
        for step, done in self._done.items():
            count, at = self._shown.get(step, (0, -self.every_sec))
            if done > count and (done >= self.total or now - at >= self.every_sec):
                self.print_line(validation_progress_line(step, done, self.total))
                self._shown[step] = (done, now)


class Console:
    """Lines for the user's terminal, whatever the process's stdout has been pointed at; ``rich`` draws
    tables and progress bars on the same stream. ``log_file``: where everything else goes (None when
    verbose)."""

    def __init__(self, stream, log_file: Path | None = None):
        self.rich = RichConsole(file=stream, soft_wrap=True, highlight=False, emoji=False)
        self.log_file = log_file

    def print(self, line: str = "") -> None:
        self.rich.print(line, markup=False)


@contextlib.contextmanager
def quiet_console(log_file: Path, verbose: bool) -> Iterator[Console]:
    """Point this process's stdout and stderr (file descriptors 1 and 2, so Ray's forwarded worker
    output and C-level writes too) at ``log_file`` and yield the console. An error leaving the block
    is written to the log with its traceback and reported on the console with the log's path, then the
    process exits with status 1."""
    if verbose:
        yield Console(sys.stdout)
        return
    log_file.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    console = Console(os.fdopen(os.dup(saved[0]), "w", encoding="utf-8", errors="replace"), log_file)
    log = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    print(f"{LAUNCH_MARKER} {time.strftime('%Y-%m-%d %H:%M:%S')}, pid {os.getpid()}", flush=True)
    failure = None
    try:
        yield console
    except SystemExit as error:
        if error.code not in (None, 0):
            traceback.print_exc()
            failure = error
    except BaseException as error:  # noqa: BLE001 - reported, then the process exits
        traceback.print_exc()
        failure = error
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
    if failure is not None:
        message = str(failure).strip().splitlines()
        console.print(f"error: {type(failure).__name__}: {message[-1] if message else ''}")
        console.print(f"full output and traceback: {log_file}")
        raise SystemExit(1)


@contextlib.contextmanager
def app_console(app: str, run: RunContext, verbose: bool) -> Iterator[Console]:
    """``quiet_console`` for one app of a run: everything the libraries print goes to
    ``<run logs>/<app>.log``."""
    with quiet_console(run.log_dir / f"{app}.log", verbose) as console:
        yield console


def print_header(console: Console, app: str, run: RunContext, rows: list[tuple[str, str]]) -> None:
    """The app's header on the console, ending with where its log is."""
    if console.log_file is not None:
        rows = [*rows, log_row(console.log_file)]
    for line in app_header(app, run.run_id, run.shared_dir, rows):
        console.print(line)

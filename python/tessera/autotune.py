"""Autotuning: search schedules for every kernel of a model, remember the best in a tuning
database, and build with them.

    mod = tessera.onnx.load("resnet18.onnx")
    report = tessera.autotune.tune(mod, target="llvm", db="tuning.db", trials=2000)
    lib = tessera.build(mod, db="tuning.db")      # uses the records, no measurement

tune() prints a live progress line on a terminal and writes an HTML report next to the
database. An interrupted session (Ctrl-C, kill) keeps every batch it committed; running it
again resumes from the database."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from . import _tessera as _t
from ._tessera import Module, Schedule, Tensor

__all__ = ["tune", "tasks", "register_schedule", "TuneReport"]


class TuneReport:
    """What a session did: per task its trials and best time, the end-to-end estimate.

    Attributes: `tasks` (per task a dict: description, workload, weight, flops, trials,
    default_seconds, best_seconds, gflops, history of (trials, best seconds)),
    `estimated_latency_ms` (the sum over tasks of weight * best time, default time where
    untuned) and `default_latency_ms` (the same with default schedules), `wall_seconds`,
    `report_path` (the HTML report) and `model_check` (a dict whose `kernels` give each tuned
    kernel's time in the model against its default's and whether builds keep the tuned one;
    None when the check did not run).
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self.tasks = raw["tasks"]
        self.estimated_latency_ms = raw["estimated_latency"] * 1e3
        self.default_latency_ms = raw["default_latency"] * 1e3
        self.wall_seconds = raw["wall_seconds"]
        self.report_path = raw["report_path"]
        # The model check (model_check=True): per tuned kernel its time in the model against its
        # default's, and which one builds now use; None when it did not run.
        self.model_check = raw["model_check"]

    def __repr__(self) -> str:
        return (f"TuneReport({len(self.tasks)} tasks, estimated latency {self.estimated_latency_ms:.3f} ms "
                f"(default {self.default_latency_ms:.3f} ms), {self.wall_seconds:.0f} s, report {self.report_path})")


def tasks(mod: Module, target: str = "llvm", opt_level: int = _t.default_opt_level) -> list[dict[str, Any]]:
    """The kernels tuning for `target` would search, as dicts: description, workload (key),
    structure (shape-erased key), weight (calls in the model), flops, kernel (name)."""
    return _t.autotune_tasks(mod, target, opt_level)


def tune(mod: Module, target: str = "llvm", db: os.PathLike | str | None = None, trials: int = 1000, batch: int = 16,
         policy: str = "evolutionary", early_stopping: int = 0, timeout: float | None = None, opt_level: int = _t.default_opt_level,
         seed: int = 0, progress: Callable[[str], Any] | bool | None = None, repeat: int = 5,
         flush_cache: bool = False, fresh_inputs: bool = True, model_check: bool = True) -> TuneReport:
    """Tunes every kernel of `mod` for `target` with at most `trials` measurements in all,
    storing every measurement in `db` (a path; None: $TESSERA_DB or ~/.cache/tessera/tuning.db).
    `policy` is "evolutionary" (cost-model guided) or "random"; `timeout` caps the wall time in
    seconds. `progress` is None (a live line on a terminal), False, or a callable taking the line.
    With `fresh_inputs`, each timed call of a kernel follows a rewrite of its inputs (not its
    weights) by the thread pool, as in a model, where the kernel before it just wrote them.
    With `model_check`, the session ends by timing each tuned kernel inside the built model
    against its default schedule; builds then use whichever ran faster there.
    `batch`: candidates measured per round; `early_stopping`: stop a task after this many trials
    without improvement (0: never); `repeat`: timed runs per candidate; `flush_cache`: flush the
    caches before each timed run; `seed`: the search's random seed. Ctrl-C stops the session
    between batches (KeyboardInterrupt), keeping what was committed."""
    if progress is None:
        progress = _terminal_line if sys.stderr.isatty() else False
    path = str(db) if db is not None else _t.default_db_path()
    raw = _t.autotune_tune(mod, target, path, int(trials), int(batch), policy, int(early_stopping), float(timeout or 0),
                           int(opt_level), int(seed), int(repeat), bool(flush_cache), bool(fresh_inputs),
                           bool(model_check), progress or None)
    if progress is _terminal_line:
        sys.stderr.write("\n")
    return TuneReport(raw)


def register_schedule(key: str, schedule_fn: Callable[[Schedule, Tensor], Any]) -> None:
    """Uses `schedule_fn(s, output)` — a tessera.te schedule function over the kernel's compute
    definition — for kernels whose op name or workload key is `key`, instead of the default
    schedule. A faster record in the tuning database still wins (tuning measures the registered
    schedule first, so it only loses to something measured faster)."""
    _t.register_custom_schedule(str(key), schedule_fn)


def _terminal_line(line: str) -> None:
    sys.stderr.write("\r" + line[: os.get_terminal_size(sys.stderr.fileno()).columns - 1])
    sys.stderr.flush()

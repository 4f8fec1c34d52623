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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import _tessera as _t
from ._tessera import DynamicModule, Module, Schedule, Tensor, TuneOptions

__all__ = ["tune", "tune_sizes", "tasks", "register_schedule", "TuneReport", "TuneOptions"]

_DEFAULTS = TuneOptions()  # the C++ tuner's defaults, the one place they are written


class TuneReport:
    """What a session did: per task its trials and best time, the end-to-end estimate.

    Attributes: `tasks` (per task a dict: description, workload, weight, flops, trials,
    default_seconds, best_seconds, gflops, history of (trials, best seconds), measured: each
    trial's seconds in order, 0 where it failed), `estimated_latency_ms` (the sum over tasks of
    weight * best time, default time where untuned) and `default_latency_ms` (the same with
    default schedules), `latency_history` ((trials, estimated seconds) from the start of the
    session), `peak_gflops` (the machine's float32 peak, measured; None where not known), `wall_seconds`,
    `report_path` (the HTML report), `model_check` (a dict whose `kernels` give each tuned
    kernel's time in the model against its default's and whether builds keep the tuned one;
    None when the check did not run), `summary` (the table `tessera tune` prints: per task its
    trials, default and best times, then the estimated latency, the report and the model check)
    and `options` (the TuneOptions the session ran with).
    """

    def __init__(self, raw: dict[str, Any], options: TuneOptions) -> None:
        self.options = options
        self.tasks = raw["tasks"]
        self.estimated_latency_ms = raw["estimated_latency"] * 1e3
        self.default_latency_ms = raw["default_latency"] * 1e3
        self.latency_history = raw["latency_history"]
        self.peak_gflops = raw["peak_gflops"]
        self.wall_seconds = raw["wall_seconds"]
        self.report_path = raw["report_path"]
        # The model check (model_check=True): per tuned kernel its time in the model against its
        # default's, and which one builds now use; None when it did not run.
        self.model_check = raw["model_check"]
        self.summary = raw["summary"]

    def __repr__(self) -> str:
        return (f"TuneReport({len(self.tasks)} tasks, estimated latency {self.estimated_latency_ms:.3f} ms "
                f"(default {self.default_latency_ms:.3f} ms), {self.wall_seconds:.0f} s, report {self.report_path})")


def tasks(mod: Module, target: str = _DEFAULTS.target, opt_level: int = _DEFAULTS.opt_level) -> list[dict[str, Any]]:
    """The kernels tuning for `target` would search, as dicts: description, workload (key),
    structure (shape-erased key), weight (calls in the model), flops, kernel (name)."""
    return _t.autotune_tasks(mod, target, opt_level)


def tune_sizes(mod: DynamicModule, sizes: Sequence[Mapping[str, Sequence[int]]], trials: int = _DEFAULTS.trials,
               timeout: float | None = _DEFAULTS.timeout, **options: Any) -> list[TuneReport]:
    """Tunes a model of symbolic sizes (a DynamicModule) at representative sizes, each a dict
    {input name: shape}, as `tessera tune --shape x=... --shape x=...` does: one session per size
    sharing `trials` and `timeout`, the other options as tune() takes them. A DynamicLibrary built
    with the database then uses the records at those sizes and transfers them to others."""
    if not sizes:
        raise ValueError("tune_sizes: give at least one size ({input name: shape})")
    share = max(1, trials // len(sizes))
    return [tune(mod.specialize({k: list(v) for k, v in size.items()}), trials=share,
                 timeout=None if timeout is None else timeout / len(sizes), **options) for size in sizes]


def tune(mod: Module, target: str = _DEFAULTS.target, db: os.PathLike | str | None = None, trials: int = _DEFAULTS.trials,
         batch: int = _DEFAULTS.batch, policy: str = _DEFAULTS.policy, early_stopping: int = _DEFAULTS.early_stopping,
         timeout: float | None = _DEFAULTS.timeout, opt_level: int = _DEFAULTS.opt_level, seed: int = _DEFAULTS.seed,
         progress: Callable[[str], Any] | bool | None = None, repeat: int = _DEFAULTS.repeat,
         flush_cache: bool = _DEFAULTS.flush_cache, fresh_inputs: bool = _DEFAULTS.fresh_inputs,
         model_check: bool = _DEFAULTS.model_check) -> TuneReport:
    """Tunes every kernel of `mod` for `target` with at most `trials` measurements in all,
    storing every measurement in `db` (a path; None: $TESSERA_DB or ~/.cache/tessera/tuning.db).
    `policy` is "evolutionary" (cost-model guided) or "random"; `timeout` caps the wall time in
    seconds (None: no limit). `progress` is None (a live line on a terminal), False, or a callable
    taking the line. With `fresh_inputs`, each timed call of a kernel follows a rewrite of its
    inputs (not its weights) by the thread pool, as in a model, where the kernel before it just
    wrote them. With `model_check`, the session ends by timing each tuned kernel inside the built
    model against its default schedule; builds then use whichever ran faster there.
    `batch`: candidates measured per round; `early_stopping`: stop a task after this many trials
    without improvement (0: never); `repeat`: timed runs per candidate; `flush_cache`: flush the
    caches before each timed run; `seed`: the search's random seed. The options are those of
    TuneOptions and `tessera tune`, checked alike: tessera.Error names an invalid one. Ctrl-C stops
    the session between batches (KeyboardInterrupt), keeping what was committed."""
    options = TuneOptions(target=target, db=str(db) if db is not None else _t.default_db_path(), trials=trials, batch=batch,
                          policy=policy, early_stopping=early_stopping, timeout=timeout, opt_level=opt_level, seed=seed,
                          repeat=repeat, flush_cache=flush_cache, fresh_inputs=fresh_inputs, model_check=model_check)
    on_terminal = progress is None and sys.stderr.isatty()
    if progress is None:
        progress = _terminal_line if on_terminal else False
    raw = _t.autotune_tune(mod, options, progress or None)
    if on_terminal:
        sys.stderr.write("\n")
    return TuneReport(raw, options)


def register_schedule(key: str, schedule_fn: Callable[[Schedule, Tensor], Any]) -> None:
    """Uses `schedule_fn(s, output)` — a tessera.te schedule function over the kernel's compute
    definition — for kernels whose op name or workload key is `key`, instead of the default
    schedule. A faster record in the tuning database still wins (tuning measures the registered
    schedule first, so it only loses to something measured faster)."""
    _t.register_custom_schedule(str(key), schedule_fn)


def _terminal_line(line: str) -> None:
    """Writes `line` over the last one, as `tessera tune` does on a terminal."""
    sys.stderr.write(_t.progress_text(line, os.get_terminal_size(sys.stderr.fileno()).columns))
    sys.stderr.flush()

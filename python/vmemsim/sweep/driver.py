"""Running a sweep: plan, check, execute, store, show progress."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from .._native import VmemsimError
from . import runner
from .executors import make_executor
from .spec import Experiment, Run, describe_run
from .store import ResultsStore

#: Runs one sweep may hold (its runs, ids and records are kept in memory).
MAX_RUNS = 5_000_000
#: From this many runs on, a sweep says its size before it starts.
ANNOUNCE_RUNS = 10_000
#: Rewrite results.parquet at least this often during a sweep (seconds).
COMPACT_EVERY = 30.0


@dataclass
class SweepSummary:
    """What a sweep did."""

    path: str
    total: int
    #: Finished before this invocation (``--resume``).
    skipped: int
    ok: int
    failed: int
    wall_seconds: float
    executor: str
    workers: int
    interrupted: bool = False
    #: What interrupted it: ``"SIGINT"`` (Ctrl-C), ``"SIGTERM"`` or ``"SIGHUP"``.
    stopped_by: Optional[str] = None
    #: ``(run description, error)`` of the runs that failed in this invocation.
    errors: List[Tuple[str, str]] = field(default_factory=list)

    @property
    def done(self) -> int:
        return self.skipped + self.ok + self.failed


def check_runs(exp: Experiment, runs: Sequence[Run]) -> None:
    """Catch what would make every run of a kind fail before starting any: a missing trace
    file, a bad generator spec, a policy option the policy does not have. Each distinct
    combination is checked once."""
    from .. import _native, api

    seen_traces = set()
    seen_policies = set()
    for r in runs:
        cfg = r.config
        t = cfg.get("workload.trace")
        model = cfg.get("workload.model")
        guest = cfg.get("workload.guest")
        where = f"run {r.index} ({describe_run(r)})"
        if sum(x is not None for x in (t, model, guest)) != 1:
            raise VmemsimError(f"workload in {where}: give one of workload.trace (a replay), "
                               "workload.model (a timed run) or workload.guest (a VM run)")
        if guest is not None:
            if guest not in seen_traces:
                seen_traces.add(guest)
                try:
                    _native.check_guest_workload(guest, r.seed)
                except VmemsimError as e:
                    raise VmemsimError(f"workload.guest in {where}: {e}") from None
            continue
        if model is not None and model not in seen_traces:
            seen_traces.add(model)
            try:
                _native.check_workload(model, r.seed)
            except VmemsimError as e:
                raise VmemsimError(f"workload.model in {where}: {e}") from None
        if t is not None and t not in seen_traces:
            seen_traces.add(t)
            where = f"workload.trace in {where}"
            if t.startswith("gen:"):
                try:
                    api.generate(t, seed=r.seed)
                except VmemsimError as e:
                    raise VmemsimError(f"{where}: {e}") from None
            else:
                path = t if os.path.isabs(t) else os.path.join(exp.base_dir, t)
                if not os.path.exists(path):
                    raise VmemsimError(f"{where}: no such trace file {path!r}")
        opts = tuple(sorted((k, str(v)) for k, v in cfg.items() if k.startswith("machine.options.")))
        key = (cfg["machine.policy"], opts)
        if key not in seen_policies:
            seen_policies.add(key)
            options = {k[len("machine.options."):]: v for k, v in opts}
            try:
                # One access: builds the policy (checking its options) and stops.
                api.replay([0], policy=cfg["machine.policy"], frames=64, options=options)
            except VmemsimError as e:
                raise VmemsimError(
                    f"machine.options in run {r.index} ({describe_run(r)}): {e}") from None


class _Progress:
    """Runs done / total, failures, elapsed and ETA: a rich bar on a terminal, a plain line
    every few seconds otherwise, nothing when quiet."""

    def __init__(self, mode: str, total: int, skipped: int, label: str,
                 stream: Optional[TextIO] = None, estimate_after: int = 0) -> None:
        self.stream = stream or sys.stderr
        #: After this many runs of this invocation, say once how long the rest should take
        #: (0: never). Large grids do, so the user learns it before most of the wait.
        self.estimate_after = estimate_after
        if mode == "auto":
            try:
                mode = "rich" if self.stream.isatty() else "plain"
            except (AttributeError, ValueError):
                mode = "plain"
        self.mode = mode
        self.total, self.done, self.failed = total, skipped, 0
        self.start = time.monotonic()
        self.start_done = skipped
        self.last_line = self.start
        self.label = label
        self._bar: Any = None
        if mode == "rich":
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("runs  [red]{task.fields[failed]} failed"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self._task = self._bar.add_task(label, total=total, completed=skipped, failed=0)
            self._bar.start()
        elif mode not in ("plain", "quiet"):
            raise VmemsimError(f"progress: unknown mode {mode!r} (auto, rich, plain, quiet)")

    def advance(self, ok: bool) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        if self.estimate_after and self.done - self.start_done == self.estimate_after \
                and self.mode != "quiet" and self.done < self.total:
            self._say(self.expected())
        if self._bar is not None:
            self._bar.update(self._task, advance=1, failed=self.failed)
        elif self.mode == "plain":
            now = time.monotonic()
            if now - self.last_line >= 5.0 or self.done == self.total:
                self.last_line = now
                self.stream.write(self.line() + "\n")
                self.stream.flush()

    def expected(self) -> str:
        """The expected time of the runs left, from the pace of the runs finished so far."""
        el = time.monotonic() - self.start
        ran = self.done - self.start_done
        left = self.total - self.done
        return (f"vmemsim: {self.label}: expected about {_dur(left * el / ran)} more for "
                f"{left:,} runs (the first {ran:,} took {_dur(el)})")

    def _say(self, text: str) -> None:
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def line(self) -> str:
        el = time.monotonic() - self.start
        ran = self.done - self.start_done
        eta = (self.total - self.done) * el / ran if ran else float("nan")
        eta_s = "?" if eta != eta else _dur(eta)
        return (f"{self.label}: {self.done}/{self.total} runs, {self.failed} failed, "
                f"{_dur(el)} elapsed, ETA {eta_s}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _dur(s: float) -> str:
    s = int(round(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s // 60 % 60:02d}m"


def _stop_on_signals(summary: "SweepSummary") -> Callable[[], None]:
    """While a sweep runs, SIGTERM and SIGHUP stop it as Ctrl-C does: what finished is kept,
    the results table is written and the resume command printed. Returns the function that
    puts the previous handlers back. (Only the main thread can set handlers.)"""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    old = {}

    def handler(signum: int, frame: Any) -> None:
        summary.stopped_by = signal.Signals(signum).name
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            old[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):
            pass

    def restore() -> None:
        for sig, h in old.items():
            signal.signal(sig, h)

    return restore


def run_sweep(
    exp: Experiment,
    out: "str | os.PathLike[str]",
    executor: str = "local",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    resume: bool = False,
    force: bool = False,
    retry_failed: bool = False,
    progress: str = "auto",
    function: Optional[str] = None,
    check: bool = True,
    on_record: Optional[Callable[[Dict[str, Any]], None]] = None,
) -> SweepSummary:
    """Run every run of ``exp`` not already in ``out`` (with ``resume``), storing each as
    it finishes. ``executor`` is ``local`` or ``ray`` (``address`` of the cluster);
    ``function`` names the run function (``None``: the simulation; ``"noop"``: nothing, to
    measure the orchestration). Returns a :class:`SweepSummary`; Ctrl-C stops the sweep
    keeping every finished run."""
    if exp.total > MAX_RUNS:
        raise VmemsimError(
            f"{exp.name}: {exp.total:,} runs; one sweep holds at most {MAX_RUNS:,} (its plan, "
            "manifest and results table are in memory): split the grid into several "
            "experiments or fewer seeds")
    if exp.total >= ANNOUNCE_RUNS and progress != "quiet":
        sys.stderr.write(f"vmemsim: {exp.name}: {exp.total:,} runs; the expected time "
                         "follows once the first runs have finished, and the progress line "
                         "keeps it up to date (`vmemsim sweep plan --estimate N` times N "
                         "sample runs beforehand)\n")
    runs = list(exp.runs())
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        seen: Dict[str, Run] = {}
        for r in runs:
            if r.run_id in seen:
                raise VmemsimError(
                    f"runs {seen[r.run_id].index} and {r.index} have the same configuration "
                    f"and seed ({describe_run(r)}); remove the duplicate axis value")
            seen[r.run_id] = r
    if check and function is None:
        check_runs(exp, runs)
    store = ResultsStore(out)
    store.prepare(exp, ids, resume=resume, force=force)
    done = store.finished(retry_failed=retry_failed) if resume else {}
    todo = [r for r in runs if r.run_id not in done]
    skipped = len(runs) - len(todo)
    fn = runner.resolve_function(function)
    by_id = {r.run_id: r for r in todo}
    ex = make_executor(executor, workers=workers, address=address)
    # A large grid says its expected time once the first runs (a few per worker) are done.
    bar = _Progress(progress, len(runs), skipped, exp.name,
                    estimate_after=(max(8, 4 * ex.workers) if len(todo) >= ANNOUNCE_RUNS
                                    else 0))
    summary = SweepSummary(path=store.path, total=len(runs), skipped=skipped, ok=0, failed=0,
                           wall_seconds=0.0, executor=ex.name, workers=ex.workers)
    started = time.monotonic()
    last_compact = started
    gen = ex.map_unordered(fn, (runner.payload(r, exp.base_dir) for r in todo))
    restore = _stop_on_signals(summary)
    try:
        for p, res in gen:
            run = by_id[p["run_id"]]
            if isinstance(res, BaseException):
                res = {"run_id": run.run_id, "seed": run.seed, "status": "error",
                       "error": f"{type(res).__name__}: {res}", "metrics": None,
                       "side": None, "wall_seconds": None}
            rec = dict(res)
            rec.update(index=run.index, config=run.config, axes=run.axes,
                       executor=ex.name)
            store.write(rec)
            ok = rec["status"] == "ok"
            if ok:
                summary.ok += 1
            else:
                summary.failed += 1
                summary.errors.append((describe_run(run), rec.get("error") or ""))
            bar.advance(ok)
            if on_record is not None:
                on_record(rec)
            if time.monotonic() - last_compact > COMPACT_EVERY:
                store.compact(ids)
                last_compact = time.monotonic()
    except KeyboardInterrupt:
        summary.interrupted = True
        summary.stopped_by = summary.stopped_by or "SIGINT"
    finally:
        restore()
        gen.close()
        bar.close()
        ex.close()
        summary.wall_seconds = time.monotonic() - started
        failing = sys.exc_info()[1]
        try:
            store.compact(ids)
        except OSError as e:
            if failing is None:
                raise
            # Already failing (e.g. the disk is full): the records written so far stay in
            # runs/ and the next --resume rebuilds the table; report the first error.
            sys.stderr.write(f"vmemsim: warning: {store.path}: results table not rewritten: "
                             f"{e.strerror or e}\n")
    return summary

"""``vmemsim compare``: several policies at several memory sizes on one trace, in one command
(as libCacheSim's ``cachesim trace csv lru,s3fifo 0.01,0.1``), without a sweep file.

Contract::

    vmemsim compare --trace TRACE --policies P1,P2,.. --sizes S1,S2,..
                    [--warmup N|FRACTION] [--seed S] [--workers N] [--json] [--out DIR]
                    [--format F --page-size N --addresses --csv MAP] [--progress]

- ``--trace`` is anything ``vmemsim replay --trace`` reads (the same reader options; every
  run goes through :func:`vmemsim.replay`).
- ``--sizes``: frame counts (``4096``), percentages (``10%``) or fractions (``0.1``) of the
  trace's distinct pages (its working set), and byte sizes (``64MiB``, ``1GiB``,
  ``512KiB``, ``4096B``; divided by the 4 KiB page, rounded down).
- ``--warmup``: accesses (``20000``) or a fraction (``0.2``, or ``20%``) of the trace
  replayed before counting starts (the core's ``ReplaySpec::warmup``); every counter covers
  the rest.
- ``--json`` prints one object: the trace (``trace``, ``accesses``, ``distinct_pages``),
  ``warmup``, ``seed``, ``version``, ``workers``, ``policies``, ``sizes`` (``size`` as
  given, ``frames``), a ``byte_miss_ratio`` note and ``results``: one
  :meth:`vmemsim.ReplayResult.to_dict` per (policy, size) (its config, seed and version),
  with the ``size`` item it came from.
- ``--out DIR`` writes ``DIR/compare.csv`` (one row per run) and ``DIR/miss_ratio.png`` and
  ``.svg`` (miss ratio against memory size, one line per policy; :mod:`vmemsim.report`).
- Runs go in parallel on ``--workers`` threads (default: the CPU count, fewer when the
  memory estimate of the runs at once exceeds ``MemAvailable``). A run that fails (out of
  memory at a tiny size) is a row with its error, and the exit status is 1; bad input is one
  line ``vmemsim: error: ...`` and status 2, as everywhere.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _native
from .api import GEN_PREFIX, ReplayResult, VmemsimError, replay, trace_info
from .cli import (
    PROG,
    CliError,
    Progress,
    _fmt_bytes,
    _positive,
    _seed,
    _want_progress,
    add_progress_argument,
    add_trace_arguments,
    register,
    trace_kwargs,
)

#: Bytes of one frame (vmemsim simulates 4 KiB pages).
PAGE_BYTES = 4096
#: The largest machine the core simulates (``engine::MAX_FRAMES``: 2^28 frames, 1 TiB).
MAX_FRAMES = 1 << 28

_UNITS = {
    "b": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}
_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"
_BYTES_RE = re.compile(rf"^{_NUMBER}\s*([A-Za-z]+)$")
_PERCENT_RE = re.compile(rf"^{_NUMBER}\s*%$")
_INT_RE = re.compile(r"^\d+$")
_FRACTION_RE = re.compile(rf"^{_NUMBER}$")


# ---------------------------------------------------------------- sizes


@dataclass(frozen=True)
class SizeSpec:
    """One item of ``--sizes``: ``kind`` is ``frames`` (``value`` a count), ``share``
    (``value`` a share of the distinct pages, 0.1 = 10%) or ``bytes``."""

    text: str
    kind: str
    value: float

    def frames(self, distinct: Optional[int]) -> int:
        """Frames for a trace of ``distinct`` pages (shares round to nearest)."""
        if self.kind == "frames":
            n = int(self.value)
        elif self.kind == "bytes":
            n = int(self.value) // PAGE_BYTES
            if n < 1:
                raise CliError(
                    f"--sizes: '{self.text}' is below one frame ({PAGE_BYTES} bytes, 4 KiB)"
                )
        else:
            if distinct is None:  # pragma: no cover - resolve_sizes always passes it
                raise CliError(f"--sizes: '{self.text}' needs the trace's distinct pages")
            n = math.floor(distinct * self.value + 0.5)
            if n < 1:
                raise CliError(
                    f"--sizes: '{self.text}' is below one frame "
                    f"(the trace has {distinct:,} distinct pages)"
                )
        if n > MAX_FRAMES:
            raise CliError(
                f"--sizes: '{self.text}' is {n:,} frames, more than the largest machine "
                f"({MAX_FRAMES:,} frames, 1 TiB)"
            )
        return n


def parse_size(item: str) -> SizeSpec:
    """One ``--sizes`` item: ``4096`` frames, ``10%`` or ``0.1`` of the distinct pages,
    ``64MiB``/``1GiB``/``512KiB``/``4096B`` bytes (K, KB, KiB are all 1024, as
    libCacheSim reads them). Raises :class:`CliError` naming the item."""
    s = item.strip()
    if not s:
        raise CliError("--sizes: an empty item (two commas in a row, or a trailing comma)")

    def bad(why: str) -> CliError:
        return CliError(f"--sizes: '{s}' {why}")

    if _INT_RE.match(s):
        n = int(s)
        if n < 1:
            raise bad("is below one frame")
        if n > MAX_FRAMES:
            raise bad(f"is more frames than the largest machine ({MAX_FRAMES:,}, 1 TiB)")
        return SizeSpec(s, "frames", n)
    m = _PERCENT_RE.match(s)
    if m:
        v = float(m.group(1))
        if v <= 0:
            raise bad("is below one frame")
        return SizeSpec(s, "share", v / 100.0)
    m = _FRACTION_RE.match(s)
    if m:
        v = float(m.group(1))
        if v <= 0:
            raise bad("is below one frame")
        if v > 1:
            raise bad(
                "is not a fraction of the working set (0 < f <= 1); give frames as a whole "
                "number, a percentage such as 150%, or bytes such as 64MiB"
            )
        return SizeSpec(s, "share", v)
    m = _BYTES_RE.match(s)
    if m:
        unit = m.group(2).lower()
        if unit not in _UNITS:
            raise bad(
                f"has an unknown unit '{m.group(2)}' (B, KiB, MiB, GiB, TiB; K/KB/M/MB/G/GB/T/TB "
                "are the same binary units)"
            )
        nbytes = float(m.group(1)) * _UNITS[unit]
        if nbytes < PAGE_BYTES:
            raise bad(f"is below one frame ({PAGE_BYTES} bytes, 4 KiB)")
        spec = SizeSpec(s, "bytes", math.floor(nbytes))
        spec.frames(None)  # too large?
        return spec
    if s.startswith("-"):
        raise bad("is below one frame")
    raise bad(
        "is not a size: give frames (4096), a percentage (10%) or fraction (0.1) of the "
        "trace's distinct pages, or bytes (64MiB, 1GiB, 512KiB, 4096B)"
    )


def parse_sizes(text: str) -> List[SizeSpec]:
    """Every item of a ``--sizes`` list, in order."""
    items = text.split(",")
    if not text.strip():
        raise CliError("--sizes: give at least one size, e.g. 10%,25%,50% or 64MiB,1GiB")
    return [parse_size(x) for x in items]


def resolve_sizes(specs: Sequence[SizeSpec], distinct: int) -> List[Tuple[str, int]]:
    """``(item, frames)`` by frames ascending; items giving the same frames are one size
    (its first item)."""
    seen: Dict[int, str] = {}
    for sp in specs:
        seen.setdefault(sp.frames(distinct), sp.text)
    return [(seen[f], f) for f in sorted(seen)]


# ---------------------------------------------------------------- policies, warm-up


def parse_policies(text: str) -> List[str]:
    """Registered policy names from a comma list (repeats dropped); an unknown name is an
    error with the sweep's did-you-mean hint."""
    from .sweep.spec import check_policy

    names = [x.strip() for x in text.split(",")]
    if not any(names):
        raise CliError("--policies: give at least one policy, e.g. lru,mglru,clock-lru")
    out: List[str] = []
    for n in names:
        if not n:
            raise CliError("--policies: an empty item (two commas in a row, or a trailing comma)")
        name = check_policy(n, "--policies")
        if name not in out:
            out.append(name)
    return out


def parse_warmup(text: Optional[str]) -> Optional[Tuple[str, float]]:
    """``("accesses", n)`` or ``("share", f)`` (0 <= f < 1); None when not given."""
    if text is None:
        return None
    s = text.strip()
    if _INT_RE.match(s):
        return ("accesses", int(s))
    m = _PERCENT_RE.match(s)
    v = float(m.group(1)) / 100.0 if m else None
    if v is None and _FRACTION_RE.match(s):
        v = float(s)
    if v is None:
        raise CliError(
            f"--warmup: '{s}' is not a number of accesses (20000) or a fraction of the trace "
            "(0.2 or 20%)"
        )
    if not 0 <= v < 1:
        raise CliError(f"--warmup: '{s}' is not a fraction of the trace below 1 (0 <= f < 1)")
    return ("share", v)


def resolve_warmup(w: Optional[Tuple[str, float]], accesses: int, text: str = "") -> int:
    """Accesses of warm-up for a trace of ``accesses``; an error when nothing would be left
    to count."""
    if w is None:
        return 0
    n = int(w[1]) if w[0] == "accesses" else math.floor(accesses * w[1] + 0.5)
    if n and n >= accesses:
        raise CliError(
            f"--warmup: '{text}' is {n:,} accesses, which leaves nothing to count "
            f"(the trace has {accesses:,} accesses)"
        )
    return n


# ---------------------------------------------------------------- memory estimate

#: Bytes a replay holds per distinct page of its trace (page tables, swap slots, the policy's
#: per-page state): the README's benchmark measured 30-40 B/page (peak RSS of the replay less
#: that of reading the trace, over 1 M distinct pages); rounded up for headroom.
BYTES_PER_PAGE = 64
#: Per frame of memory (frame table, the policy's lists).
BYTES_PER_FRAME = 64
#: OPT reads the whole trace first: an access (16 B) and its next use (8 B) per access.
OPT_BYTES_PER_ACCESS = 24
#: The two chunk buffers of the reading thread (2 x 65,536 accesses of 16 B) and the rest.
BYTES_PER_RUN = 4 << 20


def estimate_run_bytes(policy: str, frames: int, distinct: int, accesses: int) -> int:
    """Peak memory of one replay, roughly."""
    b = BYTES_PER_RUN + BYTES_PER_PAGE * distinct + BYTES_PER_FRAME * frames
    if policy == "opt":
        b += OPT_BYTES_PER_ACCESS * accesses
    return b


def available_bytes() -> Optional[int]:
    """``MemAvailable`` of ``/proc/meminfo``; None where there is none."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def plan_workers(
    estimates: Sequence[int], workers: int, available: Optional[int]
) -> Tuple[int, int, List[str]]:
    """Workers whose runs (the largest at once) fit ``available``, the peak estimate for
    that many, and notes for stderr."""
    top = sorted(estimates, reverse=True)
    notes: List[str] = []
    w = max(1, min(workers, len(top)))
    if available is not None:
        while w > 1 and sum(top[:w]) > available:
            w -= 1
        if w < min(workers, len(top)):
            notes.append(
                f"memory: {min(workers, len(top))} runs at once would need about "
                f"{_fmt_bytes(sum(top[:min(workers, len(top))]))}, more than the "
                f"{_fmt_bytes(available)} available; running {w} at once"
            )
        if top[0] > available:
            notes.append(
                f"memory: the largest run alone needs about {_fmt_bytes(top[0])}, more than "
                f"the {_fmt_bytes(available)} available; it may fail or swap"
            )
    return w, sum(top[:w]), notes


# ---------------------------------------------------------------- running


@dataclass
class Row:
    """One (policy, size) run: its result, or the one-line error it stopped with."""

    policy: str
    size: str
    frames: int
    result: Optional[ReplayResult] = None
    error: Optional[str] = None


class _Cancelled(Exception):
    pass


class _Meter:
    """Progress across runs in parallel: accesses done by finished runs plus what the running
    ones reported, over every run's accesses."""

    def __init__(self, progress: Optional[Progress], runs: int, per_run: int) -> None:
        self.progress = progress
        self.runs = runs
        self.per_run = per_run
        self.finished = 0
        self.live: Dict[int, int] = {}
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        self.last = 0.0

    def callback(self, job: int):
        def cb(done: int, _total: Optional[int]) -> None:
            if self.cancel.is_set():
                raise _Cancelled()
            with self.lock:
                self.live[job] = done
            self.show()

        return cb

    def finish(self, job: int) -> None:
        with self.lock:
            self.live.pop(job, None)
            self.finished += 1
        self.show(force=True)

    def show(self, force: bool = False) -> None:
        if self.progress is None:
            return
        now = time.perf_counter()
        with self.lock:
            if not force and now - self.last < 0.5:
                return
            self.last = now
            done = self.finished * self.per_run + sum(self.live.values())
            self.progress.label = f"compare: {self.finished}/{self.runs} runs"
            self.progress(done, self.runs * self.per_run or None)


def run_all(
    trace: Any,
    jobs: Sequence[Tuple[str, str, int]],
    *,
    warmup: int,
    seed: int,
    workers: int,
    reader: Dict[str, Any],
    meter: _Meter,
) -> List[Row]:
    """Replay every ``(policy, size item, frames)`` in ``jobs`` on ``workers`` threads (the
    core releases the GIL), in the order of ``jobs``. A run that fails with a
    ``VmemsimError`` (out of memory at a tiny size) becomes a row with its error; anything
    else (Ctrl-C, a bug) stops every run and is raised."""
    out: List[Optional[Row]] = [None] * len(jobs)

    def one(i: int) -> Row:
        policy, size, frames = jobs[i]
        try:
            r = replay(
                trace, policy=policy, frames=frames, seed=seed, warmup=warmup,
                progress=meter.callback(i), **reader,
            )
        except VmemsimError as e:
            return Row(policy, size, frames, error=str(e))
        return Row(policy, size, frames, result=r)

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vmemsim-compare")
    try:
        pending = {pool.submit(one, i): i for i in range(len(jobs))}
        while pending:
            # A timeout lets Ctrl-C reach this thread while the runs go on.
            done, _ = wait(list(pending), timeout=0.2, return_when=FIRST_COMPLETED)
            for fut in done:
                i = pending.pop(fut)
                out[i] = fut.result()
                meter.finish(i)
    except BaseException:
        # Queued runs never start; running ones stop at their next progress report.
        meter.cancel.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return [r for r in out if r is not None]


# ---------------------------------------------------------------- output

BYTE_MISS_NOTE = (
    "byte miss ratio = miss ratio: vmemsim traces carry no object sizes (every access is one "
    "4 KiB page; oracleGeneral's obj_size is not read), so missed bytes = misses x 4 KiB"
)
CSV_COLUMNS = (
    "policy", "size", "frames", "memory_bytes", "accesses", "misses", "miss_ratio",
    "major_faults", "minor_faults", "first_touch", "warmup", "seed", "trace", "version",
    "error",
)


def _ratio(v: float) -> str:
    return f"{v:.4f}"


def format_table(
    rows: Sequence[Row], trace: str, accesses: int, distinct: int, warmup: int, seed: int,
    workers: int, seconds: float,
) -> str:
    """The readable table: one line per (size, policy), sizes ascending."""
    counted = accesses - warmup
    acc = f"{accesses:,}"
    if warmup:
        acc += f" ({warmup:,} warm-up, {counted:,} counted)"
    lines = [
        f"{PROG} compare",
        f"  {'trace':<14} {trace}",
        f"  {'accesses':<14} {acc}",
        f"  {'distinct pages':<14} {distinct:,} ({_fmt_bytes(distinct * PAGE_BYTES)})",
        f"  {'seed':<14} {seed}",
        f"  {'version':<14} {_native.version()}",
        f"  {'runs':<14} {len(rows)} on {workers} worker(s), {seconds:.1f} s",
        "",
    ]
    pw = max([len("policy")] + [len(r.policy) for r in rows])
    sw = max([len("size")] + [len(r.size) for r in rows])
    lines.append(
        f"  {'size':>{sw}}  {'frames':>11}  {'memory':>10}  {'policy':<{pw}}  {'misses':>13}  "
        f"{'miss ratio':>10}  {'major faults':>13}"
    )
    order = sorted(rows, key=lambda r: r.frames)  # stable: policies keep their order
    prev = None
    for r in order:
        if prev is not None and r.frames != prev:
            lines.append("")
        prev = r.frames
        head = f"  {r.size:>{sw}}  {r.frames:>11,}  {_fmt_bytes(r.frames * PAGE_BYTES):>10}  "
        x = r.result
        if x is None:
            lines.append(f"{head}{r.policy:<{pw}}  error: {r.error}")
            continue
        lines.append(
            f"{head}{r.policy:<{pw}}  {x.faults:>13,}  {_ratio(x.miss_ratio):>10}  "
            f"{x.major_faults:>13,}"
        )
    lines.append("")
    lines.append("misses count every fault, cold (first-touch) misses included"
                 + ("; counters cover the accesses after the warm-up" if warmup else ""))
    lines.append(BYTE_MISS_NOTE)
    return "\n".join(lines)


def to_json(
    rows: Sequence[Row], trace: str, accesses: int, distinct: int, warmup: int, seed: int,
    workers: int, policies: Sequence[str], sizes: Sequence[Tuple[str, int]],
) -> Dict[str, Any]:
    """The ``--json`` object (see the module documentation)."""
    results: List[Dict[str, Any]] = []
    for r in rows:
        if r.result is None:
            results.append({"policy": r.policy, "size": r.size, "frames": r.frames,
                            "seed": seed, "warmup": warmup, "error": r.error})
        else:
            results.append(dict(r.result.to_dict(), size=r.size, error=None))
    return {
        "command": "compare",
        "trace": trace,
        "accesses": accesses,
        "distinct_pages": distinct,
        "warmup": warmup,
        "seed": seed,
        "version": _native.version(),
        "workers": workers,
        "policies": list(policies),
        "sizes": [{"size": s, "frames": f} for s, f in sizes],
        "byte_miss_ratio": BYTE_MISS_NOTE,
        "results": results,
    }


def write_csv(rows: Sequence[Row], path: str, trace: str, seed: int, warmup: int) -> None:
    """One row per run (:data:`CSV_COLUMNS`); a failed run has its ``error`` and no counts."""
    version = _native.version()
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            x = r.result
            if x is None:
                w.writerow([r.policy, r.size, r.frames, r.frames * PAGE_BYTES] + [""] * 6
                           + [warmup, seed, trace, version, r.error])
                continue
            w.writerow([
                r.policy, r.size, x.frames, x.frames * PAGE_BYTES, x.accesses, x.faults,
                f"{x.miss_ratio:.6f}", x.major_faults, x.minor_faults,
                x.stats.get("first_touch", 0), x.warmup, x.seed, x.trace, x.version, "",
            ])


def _trace_title(trace: str) -> str:
    if trace.startswith(GEN_PREFIX):
        kind = trace[len(GEN_PREFIX):].split(":", 1)[0]
        return f"a {kind} generator trace"
    return os.path.basename(trace) or trace


def miss_ratio_figure(rows: Sequence[Row], trace: str, warmup: int) -> Any:
    """Miss ratio against memory size, one line per policy in the report's palette (a
    :func:`vmemsim.report.plot_figure` line figure); None when every run failed."""
    import pandas as pd

    from .report import plot_figure

    ok = [r for r in rows if r.result is not None]
    if not ok:
        return None
    df = pd.DataFrame({
        "policy": [r.policy for r in ok],
        "frames": [r.frames for r in ok],
        "miss_ratio": [r.result.miss_ratio for r in ok],  # type: ignore[union-attr]
        "seed": [r.result.seed for r in ok],  # type: ignore[union-attr]
        "status": ["ok"] * len(ok),
    })
    frames = sorted(set(df["frames"]))
    title = f"Miss ratio by memory size, {_trace_title(trace)}"
    if warmup:
        title += f" (warm-up {warmup:,} accesses)"
    fig = {
        "name": "miss_ratio",
        "kind": "line",
        "metric": "miss_ratio",
        "x": "frames",
        "group": "policy",
        "error": "none",
        "title": title,
        "xlabel": "memory size (4 KiB frames)",
        "ylabel": "miss ratio (misses / accesses)",
        "logx": len(frames) > 1 and frames[-1] >= 10 * frames[0],
    }
    return plot_figure(fig, df)


def write_figure(rows: Sequence[Row], trace: str, warmup: int, out_dir: str) -> List[str]:
    """:func:`miss_ratio_figure` as ``out_dir/miss_ratio.png`` and ``.svg``; returns the
    files written (none when every run failed)."""
    from .report import _DPI

    mfig = miss_ratio_figure(rows, trace, warmup)
    if mfig is None:
        return []
    paths = [os.path.join(out_dir, "miss_ratio.png"), os.path.join(out_dir, "miss_ratio.svg")]
    mfig.savefig(paths[0], dpi=_DPI, metadata={"Software": None})
    mfig.savefig(paths[1], metadata={"Date": None})
    return paths


# ---------------------------------------------------------------- command


def _default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def configure(p: argparse.ArgumentParser) -> None:
    add_trace_arguments(p)
    p.add_argument(
        "--policies",
        required=True,
        metavar="P1,P2,..",
        help="policies to compare, comma-separated, as 'vmemsim replay --policy' takes them "
        "(e.g. lru,mglru,clock-lru; 'vmemsim policies' lists them)",
    )
    p.add_argument(
        "--sizes",
        required=True,
        metavar="S1,S2,..",
        help="memory sizes, comma-separated, forms mixed freely: frames (4096); a "
        "percentage (10%%) or fraction (0.1) of the trace's distinct pages, its working set "
        "(as libCacheSim's fractions); bytes (64MiB, 1GiB, 512KiB, 4096B; K/KB/KiB all mean "
        "1024), divided by the 4 KiB page and rounded down",
    )
    p.add_argument(
        "--warmup",
        metavar="N|FRACTION",
        default=None,
        help="replay the first N accesses (an integer), or that fraction of the trace (0.2 "
        "or 20%%), before counting: misses, miss ratio and every counter cover only the rest "
        "(default: none)",
    )
    p.add_argument(
        "--seed", type=_seed, default=0, metavar="S",
        help="seed of the policies' randomness and of gen: traces (default 0)",
    )
    p.add_argument(
        "--workers",
        type=_positive,
        default=None,
        metavar="N",
        help="runs in parallel, one (policy, size) each (default: the CPU count; fewer when "
        "the memory estimate says they would not fit)",
    )
    p.add_argument(
        "--json", action="store_true",
        help="print one JSON object: the trace, warm-up, seed, version and every run's full "
        "result (its config, seed and version)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="also write DIR/compare.csv (one row per run) and DIR/miss_ratio.png and .svg "
        "(miss ratio vs memory size, one line per policy); DIR is created",
    )
    add_progress_argument(p)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    policies = parse_policies(args.policies)
    specs = parse_sizes(args.sizes)
    warm = parse_warmup(args.warmup)
    reader = trace_kwargs(args)
    if args.out is not None and os.path.exists(args.out) and not os.path.isdir(args.out):
        raise CliError(f"--out: '{args.out}' exists and is not a directory")
    show = _want_progress(args.progress)
    progress = Progress(sys.stderr, "compare: reading the trace") if show else None
    try:
        info = trace_info(args.trace, reuse=False, seed=args.seed, progress=progress, **reader)
    finally:
        if progress is not None:
            progress.clear()
    accesses, distinct = info.accesses, info.distinct_pages
    if accesses == 0:
        raise CliError(f"--trace: '{args.trace}' has no accesses")
    sizes = resolve_sizes(specs, distinct)
    warmup = resolve_warmup(warm, accesses, args.warmup or "")
    jobs = [(p, s, f) for s, f in sizes for p in policies]
    estimates = [estimate_run_bytes(p, f, distinct, accesses) for p, _, f in jobs]
    workers, peak, notes = plan_workers(
        estimates, args.workers or _default_workers(), available_bytes()
    )
    for n in notes:
        sys.stderr.write(f"{PROG}: {n}\n")
    if show:
        sys.stderr.write(
            f"{PROG}: compare: {len(jobs)} runs ({len(policies)} policies x {len(sizes)} sizes) "
            f"on {workers} worker(s), memory about {_fmt_bytes(peak)}\n"
        )
    progress = Progress(sys.stderr, "compare") if show else None
    meter = _Meter(progress, len(jobs), accesses)
    try:
        rows = run_all(
            args.trace, jobs, warmup=warmup, seed=args.seed, workers=workers, reader=reader,
            meter=meter,
        )
    finally:
        if progress is not None:
            progress.clear()
    trace_name = info.trace
    if args.out is not None:
        try:
            os.makedirs(args.out, exist_ok=True)
            write_csv(rows, os.path.join(args.out, "compare.csv"), trace_name, args.seed, warmup)
            write_figure(rows, trace_name, warmup, args.out)
        except OSError as e:
            raise CliError(f"--out: {e.filename or args.out}: {e.strerror or e}") from None
    if args.json:
        print(json.dumps(to_json(
            rows, trace_name, accesses, distinct, warmup, args.seed, workers, policies, sizes,
        )))
    else:
        print(format_table(
            rows, trace_name, accesses, distinct, warmup, args.seed, workers,
            time.perf_counter() - started,
        ))
    failed = [r for r in rows if r.result is None]
    for r in failed:
        sys.stderr.write(
            f"{PROG}: {r.policy} at {r.size} ({r.frames:,} frames) failed: {r.error}\n"
        )
    return 1 if failed else 0


register(
    "compare",
    "compare policies at several memory sizes on one trace (libCacheSim-style)",
    configure,
    run,
    description="Replay one trace through several policies at several memory sizes, in "
    "parallel, and print a table of frames, misses, miss ratio and major faults per policy "
    "and size (as libCacheSim's 'cachesim TRACE csv lru,s3fifo 0.01,0.1'); optionally a "
    "CSV and a miss-ratio figure. Example: vmemsim compare --trace app.vmt --policies "
    "lru,mglru,clock-lru --sizes 10%,25%,50% --warmup 0.2",
)

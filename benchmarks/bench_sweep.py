#!/usr/bin/env python3
"""Sweep orchestration benchmark.

1. Overhead: time per run of the orchestration alone — expanding, shipping the payload to a
   worker, the worker's answer, writing the run's record — measured with a run function that
   does nothing (``noop``), locally with 1 and 2 workers and on Ray (a private local Ray,
   when the ray package is installed).
2. Speedup: a 200-run sweep of real simulations with 2 workers against 1.

Each figure is the median of ``--repeats`` repetitions, alternating the configurations so
that the noise of this machine falls on all of them alike.

    python benchmarks/bench_sweep.py [--repeats 3] [--runs 200] [--no-ray]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

from vmemsim.sweep import parse_experiment, run_sweep

NOOP = """
[experiment]
name = "overhead"
seeds = {runs}
[machine]
frames = 10
[workload]
trace = "gen:scan:pages=1"
"""

REAL = """
[experiment]
name = "speedup"
seeds = {seeds}
[machine]
frames = "25%"
[workload]
trace = "gen:mix:(zipf:pages=20000,alpha=0.9,write=0.3)*0.8+(loop:pages=8000,start=20000)*0.2,n=300000"
[sweep]
"machine.policy" = ["lru", "clock", "clock-lru", "mglru"]
"""


def timed(text: str, **kw) -> float:
    exp = parse_experiment(text, "<bench>")
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        s = run_sweep(exp, d, progress="quiet", **kw)
        el = time.perf_counter() - t
    assert s.ok == s.total, f"{s.failed} runs failed: {s.errors[:1]}"
    return el


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--no-ray", action="store_true")
    args = ap.parse_args()

    configs = [("local, 1 worker", dict(executor="local", workers=1)),
               ("local, 2 workers", dict(executor="local", workers=2))]
    ray_start = None
    if not args.no_ray:
        try:
            import ray
        except ImportError:
            print("ray not installed: no Ray figures", file=sys.stderr)
        else:
            # Start Ray once (its start-up is reported apart): a sweep in a process already
            # connected to Ray reuses the connection, as a long-lived cluster would be used.
            t = time.perf_counter()
            ray.init(address="local", num_cpus=2, include_dashboard=False,
                     log_to_driver=False, logging_level="ERROR")
            timed(NOOP.format(runs=2), function="noop", check=False, executor="ray")
            ray_start = time.perf_counter() - t
            configs.append(("ray (local instance), 2 workers", dict(executor="ray", workers=2)))

    noop = NOOP.format(runs=args.runs)
    times = {name: [] for name, _ in configs}
    for _ in range(args.repeats):
        for name, kw in configs:
            times[name].append(timed(noop, function="noop", check=False, **kw))
    print(f"orchestration overhead, {args.runs} trivial runs, median of {args.repeats}:")
    print("| executor | s per sweep | ms per run |")
    print("|---|---|---|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {m:.3f} | {m / args.runs * 1e3:.2f} |")
    if ray_start is not None:
        print(f"(Ray start-up and first tasks, once: {ray_start:.2f} s)")

    real = REAL.format(seeds=max(1, args.runs // 4))
    one, two = [], []
    for _ in range(args.repeats):
        one.append(timed(real, workers=1))
        two.append(timed(real, workers=2))
    m1, m2 = statistics.median(one), statistics.median(two)
    n = 4 * max(1, args.runs // 4)
    print(f"\nreal sweep, {n} runs (300k accesses each), median of {args.repeats}:")
    print("| workers | s | ms per run |")
    print("|---|---|---|")
    print(f"| 1 | {m1:.2f} | {m1 / n * 1e3:.1f} |")
    print(f"| 2 | {m2:.2f} | {m2 / n * 1e3:.1f} |")
    print(f"speedup 2 vs 1 workers: {m1 / m2:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Orchestration cost of the Ray executor per run, measured on no-op tasks.

Runs ``--tasks`` (default 200) payloads of a function that does nothing (``copy.copy``, which
every worker can import) through ``RayExecutor.map_unordered`` ``--repeat`` times (default 3)
after one warm-up pass that starts the workers, and prints the median wall time per task.
With ``workers`` runs in parallel, that is the executor's throughput cost per run, the floor
under which a sweep's runs are not worth sending to Ray. Without ``--address`` it starts a
private local instance. This is a benchmark, not a test: nothing here asserts a timing.

Usage: python benchmarks/ray_overhead.py [--address HOST:PORT|ray://HOST:PORT] [--workers N]
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time

from vmemsim.sweep.ray_executor import RayExecutor


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--address", default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    start = time.perf_counter()
    with RayExecutor(args.address, args.workers) as ex:
        print(f"ray up in {time.perf_counter() - start:.1f} s, workers={ex.workers}")
        payloads = [{"i": i} for i in range(args.tasks)]
        for _ in ex.map_unordered(copy.copy, payloads):  # warm-up: start the workers
            pass
        per_task = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            n = sum(1 for _ in ex.map_unordered(copy.copy, payloads))
            assert n == args.tasks
            per_task.append((time.perf_counter() - t) / args.tasks)
    print(
        f"{args.tasks} no-op tasks x {args.repeat}: median {statistics.median(per_task) * 1e3:.2f}"
        f" ms per task (runs: {', '.join(f'{x * 1e3:.2f}' for x in per_task)} ms)"
    )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""vmemsim vs libCacheSim on the same trace, measured in one run.

Generates a zipf(1.0) trace (default 10 M requests over 1 M pages), writes it as
libCacheSim's oracleGeneral and as vmemsim's native format, then times whole processes:

* ``vmemsim replay --trace T.vmt --policy P --frames 10%`` for fifo, lru, clock, arc, s3fifo,
  clock-lru and mglru;
* libCacheSim's ``process_trace`` on the oracleGeneral file (the ``libcachesim`` package),
  for the policies both have;
* vmemsim reading the native trace alone (no simulation).

Runs alternate between the two tools and the median of ``--repeat`` (default 5) is reported,
with M accesses/s and the ratio vmemsim/libCacheSim, plus the peak RSS of vmemsim per tracked
page. This is a benchmark, not a test: nothing here asserts a timing.

Usage: python benchmarks/bench_vs_libcachesim.py [--requests 10000000] [--pages 1000000]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

LCS = {"fifo": "FIFO", "lru": "LRU", "clock": "Clock", "arc": "ARC", "s3fifo": "S3FIFO"}
POLICIES = ["fifo", "lru", "clock", "arc", "s3fifo", "clock-lru", "mglru"]

LCS_SCRIPT = r"""
import sys, libcachesim as l
path, pol, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
kw = {"cache_size": size}
if pol == "Clock":
    kw.update(n_bit_counter=1, init_freq=0)
cache = getattr(l, pol)(**kw)
reader = l.TraceReader(path, l.TraceType.ORACLE_GENERAL_TRACE)
mr = cache.process_trace(reader)
print(mr)
"""


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """Wall time, peak RSS (KiB, from GNU time's %M) of the command, its stdout."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    rss = int(p.stderr.strip().splitlines()[-1])
    return dt, rss, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--frames-pct", type=float, default=10.0)
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--keep", help="directory for the generated traces (default: a temp dir)")
    args = ap.parse_args()

    if not os.path.exists("/usr/bin/time"):
        sys.exit("needs GNU time for peak memory: apt-get install time")
    vm = [sys.executable, "-m", "vmemsim"]
    d = args.keep or tempfile.mkdtemp(prefix="vmemsim-bench-")
    os.makedirs(d, exist_ok=True)
    native, oracle = os.path.join(d, "zipf.vmt"), os.path.join(d, "zipf.oracleGeneral")
    spec = f"zipf:pages={args.pages},alpha={args.alpha},n={args.requests},seed=42"
    if not os.path.exists(native):
        subprocess.run(vm + ["generate", spec, "--out", native], check=True)
    if not os.path.exists(oracle):
        subprocess.run(vm + ["trace", "convert", native, oracle, "--to", "oracle-general"], check=True)
    info = json.loads(subprocess.run(vm + ["trace", "info", native, "--json", "--no-reuse"],
                                     check=True, capture_output=True, text=True).stdout)
    distinct = info["distinct_pages"]
    frames = max(1, round(distinct * args.frames_pct / 100))
    n = info["accesses"]
    print(f"trace: {n} accesses, {distinct} distinct pages, frames = {frames} ({args.frames_pct}%)")

    rows = []
    reads = [timed(vm + ["trace", "read", native]) for _ in range(args.repeat)]
    base_rss = max(r[1] for r in reads)
    rows.append(("(read native trace)", statistics.median(r[0] for r in reads), None, None, None))
    for pol in args.policies.split(","):
        vt, lt, rss = [], [], 0
        for _ in range(args.repeat):
            t, r, out = timed(vm + ["replay", "--trace", native, "--policy", pol, "--frames", str(frames), "--json"])
            vt.append(t)
            rss = max(rss, r - base_rss)
            faults = json.loads(out)["faults"]
            if pol in LCS:
                t, _, out = timed([sys.executable, "-c", LCS_SCRIPT, oracle, LCS[pol], str(frames)])
                lt.append(t)
        lmed = statistics.median(lt) if lt else None
        rows.append((pol, statistics.median(vt), lmed, faults, rss))

    print(f"\n{'policy':<22}{'vmemsim s':>10}{'M acc/s':>9}{'libCacheSim s':>15}{'M acc/s':>9}{'ratio':>7}{'faults':>11}{'B/page':>8}")
    for pol, v, l, faults, rss in rows:
        lcol = f"{l:>15.3f}{n / l / 1e6:>9.2f}{l / v:>7.2f}" if l else f"{'-':>15}{'-':>9}{'-':>7}"
        bpp = f"{rss * 1024 / distinct:>8.1f}" if rss else f"{'-':>8}"
        fcol = f"{faults:>11}" if faults is not None else f"{'-':>11}"
        print(f"{pol:<22}{v:>10.3f}{n / v / 1e6:>9.2f}{lcol}{fcol}{bpp}")
    print("\nratio = libCacheSim time / vmemsim time (higher is faster for vmemsim); medians of",
          args.repeat, "alternating whole-process runs; B/page = (peak RSS of the replay - peak RSS of",
          "reading the trace alone) / distinct pages")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()

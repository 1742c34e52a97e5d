"""Simulated guest accesses per second of VM runs (`vmemsim.run_vm`, untimed), for a
TLB-friendly and a TLB-hostile workload under native, nested (tdp) and shadow paging, and
the simulator's memory per guest page.

    python benchmarks/bench_vm.py [--repeat 3]

TLB-friendly: LMBench lat_mem_rd over 128 KiB (32 pages) with a 64-byte stride, every load
an access (hits the L1 dTLB). TLB-hostile: lat_mem_rd over 256 MiB with a 4 KiB stride
(65,536 pages, every load a new page), with 4 KiB pages and with 2 MiB pages in both
dimensions (which make it TLB-friendly again). Medians of --repeat runs in this process.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import vmemsim

CASES = {
    "tlb-friendly": "lmbench-like:bench=lat_mem_rd,size=128KiB,stride=64,passes=400",
    "tlb-hostile": "lmbench-like:bench=lat_mem_rd,size=256MiB,stride=4096,passes=4",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"vmemsim {vmemsim.__version__}, median of {a.repeat}")
    print(f"{'case':<14}{'paging':<8}{'pages':<7}{'accesses':>12}{'walks':>10}"
          f"{'refs/walk':>10}{'wall s':>9}{'M acc/s':>9}")
    runs = [(c, p, "4k") for c in CASES for p in ("native", "tdp", "shadow")]
    runs += [("tlb-hostile", p, "2m") for p in ("native", "tdp", "shadow")]
    for case, paging, page in runs:
        walls = []
        r = None
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            r = vmemsim.run_vm(CASES[case], paging=paging, guest_page=page, host_page=page)
            walls.append(time.perf_counter() - t0)
        w = statistics.median(walls)
        n = r.translate["accesses"]
        print(f"{case:<14}{paging:<8}{page:<7}{n:>12,}{r.translate['walks']:>10,}"
              f"{r.refs_per_walk:>10.2f}{w:>9.3f}{n / w / 1e6:>9.2f}", flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # The largest run: a 65,536-page footprint in 131,072 guest and 196,704 host frames.
    pages = 131_072 + 196_704
    print(f"peak RSS of this process: {rss / 1024:,.0f} MiB, {rss * 1024 / pages:,.0f} bytes "
          f"per simulated page of the largest run ({pages:,} guest and host frames; the "
          f"Python interpreter and numpy included)")


if __name__ == "__main__":
    main()

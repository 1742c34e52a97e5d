"""Simulated accesses per second of timed runs (`vmemsim.run`): each workload model under
clock-lru and mglru, with SSD and zram swap, at 50% of the footprint.

    python benchmarks/bench_timed.py [--repeat 3] [--scale small|large]

`small` is the scale of experiments/mglru-characterization (16 MiB footprints, pagerank
scale 15); `large` is 4x to 8x that. Wall times are medians of `--repeat` runs in this
process (the machine is noisy: compare the rows of one run, not absolute numbers).
"""

from __future__ import annotations

import argparse
import statistics
import time

import vmemsim

SCALES = {
    "small": {
        "tpch-like": "tpch-like:footprint=16MiB",
        "pagerank": "pagerank:scale=15",
        "ycsb-a": "ycsb-a:footprint=16MiB",
        "ycsb-b": "ycsb-b:footprint=16MiB",
        "ycsb-c": "ycsb-c:footprint=16MiB",
    },
    "large": {
        "tpch-like": "tpch-like:footprint=64MiB",
        "pagerank": "pagerank:scale=18",
        "ycsb-a": "ycsb-a:footprint=128MiB",
        "ycsb-b": "ycsb-b:footprint=128MiB",
        "ycsb-c": "ycsb-c:footprint=128MiB",
    },
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scale", choices=sorted(SCALES), default="small")
    ap.add_argument("--policies", default="clock-lru,mglru")
    ap.add_argument("--devices", default="ssd,zram")
    a = ap.parse_args()
    print(f"vmemsim {vmemsim.__version__}, scale {a.scale}, median of {a.repeat}")
    print(f"{'workload':<11}{'policy':<11}{'swap':<6}{'accesses':>11}{'faults':>9}"
          f"{'wall s':>9}{'M acc/s':>9}{'sim s':>8}")
    for name, spec in SCALES[a.scale].items():
        for policy in a.policies.split(","):
            for dev in a.devices.split(","):
                walls = []
                r = None
                for _ in range(a.repeat):
                    t0 = time.perf_counter()
                    r = vmemsim.run(spec, policy=policy, frames="50%", cpus=6, device=dev,
                                    seed=1, charge_device_ram=False)
                    walls.append(time.perf_counter() - t0)
                w = statistics.median(walls)
                acc = r.stats["accesses"]
                print(f"{name:<11}{policy:<11}{dev:<6}{acc:>11,}{r.stats['faults']:>9,}"
                      f"{w:>9.3f}{acc / w / 1e6:>9.2f}{r.runtime_ns / 1e9:>8.2f}", flush=True)


if __name__ == "__main__":
    main()

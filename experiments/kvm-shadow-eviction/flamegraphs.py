#!/usr/bin/env python3
"""Where KVM's handler time goes with a pool of 32 shadow pages: one flame graph (SVG) and
folded-stacks file per workload and eviction (FIFO, clock, clock with leaf A-bit
harvesting), seed 0, the workloads of experiment.toml, plus a table of each function's share
of the handler time (self time; printed as Markdown).

    python experiments/kvm-shadow-eviction/flamegraphs.py [OUT_DIR] > experiments/kvm-shadow-eviction/flamegraphs/README.md

OUT_DIR defaults to experiments/kvm-shadow-eviction/flamegraphs. The folded files are the
input `flamegraph.pl` and inferno read; the SVGs come from vmemsim.flamegraph.
"""

from __future__ import annotations

import collections
import pathlib
import sys

import vmemsim
from vmemsim.flamegraph import write_svg

WORKLOADS = {
    "stress-vm": "stress-vm:vcpus=4,bytes=64MiB,rounds=4",
    "redis-like": "redis-like:keys=50000,requests=100000",
    "kernbench-like": "kernbench-like:jobs=24,parallel=4",
}
EVICTIONS = ["fifo", "clock", "clock-leaf"]
POOL = 32


def shares(folded: str) -> dict:
    """Self time (simulated ns) per KVM function: each folded line's weight is the work of
    its last frame."""
    out: dict = collections.Counter()
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        out[stack.split(";")[-1]] += int(n)
    return out


def main() -> int:
    here = pathlib.Path(__file__).resolve().parent
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here / "flamegraphs"
    out.mkdir(parents=True, exist_ok=True)
    w = print
    w("# KVM handler time with a pool of 32 shadow pages\n")
    w(f"Made by `flamegraphs.py` (vmemsim {vmemsim.__version__}, seed 0): simulated ns of "
      "KVM's handlers by function, priced by the VM layer's event costs (estimates). Each "
      "row: total handler time and the functions with the most self time.\n")
    w("| workload | eviction | handler time (ms) | self time by function (share) | graph |")
    w("|---|---|---|---|---|")
    for name, spec in WORKLOADS.items():
        for ev in EVICTIONS:
            r = vmemsim.run_vm(spec, paging="shadow", eviction=ev, mmu_pages=POOL, seed=0)
            stem = f"{name}-{ev}"
            (out / f"{stem}.folded").write_text(r.kvm_folded)
            write_svg(r.kvm_folded, str(out / f"{stem}.svg"),
                      title=f"KVM handler time (simulated ns): {name}, {ev}, pool {POOL}")
            s = shares(r.kvm_folded)
            total = sum(s.values())
            top = ", ".join(f"`{k}` {v / total:.0%}" for k, v in s.most_common(4))
            w(f"| {name} | {ev} | {total / 1e6:,.1f} | {top} | [{stem}.svg]({stem}.svg) |")
    w("")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The kernel-validation matrix: workloads x {classic, MG-LRU} x {disk page-cluster 0, disk
page-cluster 3, zram}, each on the real kernel (repeats per setting) and through vmemsim.

    python experiments/kernel-validation/matrix.py run [--jobs 2] [--repeats 2] [--only NAME]
    python experiments/kernel-validation/matrix.py table

`run` boots the kernel for every case not yet in the cache (~/.cache/vmemsim/validate) and
writes data/kernel-runs.json: every kernel run's counters, settings, kernel version and serial
log checksum, so the tests and FINDINGS.md use them without booting. `table` re-runs only the
simulator on the committed data and prints the comparison.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "kernel-runs.json"

#: name -> (spec, mode, guest RAM). Footprints are 2-4x the ~21,000 pages a 160 MiB guest has
#: free before the phase.
WORKLOADS = {
    "zipf-0.9": ("gen:zipf:pages=50000,alpha=0.9,n=500000", "rw", "160M"),
    "zipf-1.2": ("gen:zipf:pages=50000,alpha=1.2,n=500000", "rw", "160M"),
    "zipf+scan": (
        "gen:mix:(zipf:pages=30000,alpha=0.9)*0.8+(scan:pages=30000,start=30000)*0.2,n=500000",
        "rw",
        "160M",
    ),
    "loop": ("gen:loop:pages=50000,n=200000", "rw", "160M"),
}
#: (label, swap, page-cluster)
SWAPS = [("disk-pc0", "disk", 0), ("disk-pc3", "disk", 3), ("zram", "zram", 0)]
SEED = 1


def cases(only=None):
    for name, (spec, mode, mem) in WORKLOADS.items():
        if only and name not in only:
            continue
        for label, swap, pc in SWAPS:
            yield name, spec, mode, mem, label, swap, pc


def _one(args):
    name, spec, mode, mem, label, swap, pc, repeats = args
    from vmemsim.validate.compare import validate

    out = validate(spec, mem=mem, swap=swap, lrus=("classic", "mglru"), page_cluster=pc,
                   repeats=repeats, mode=mode, seed=SEED,
                   progress=lambda m: print(f"[{name} {label}] {m}", file=sys.stderr, flush=True))
    return name, label, [c.to_dict() for c in out]


def run(jobs: int, repeats: int, only) -> None:
    todo = [(*c, repeats) for c in cases(only)]
    results = json.loads(DATA.read_text()) if DATA.exists() else {"cases": []}
    keep = {(c["name"], c["swap_label"], c["settings"]["lru"]): c for c in results["cases"]}
    with ProcessPoolExecutor(jobs) as ex:
        futs = [ex.submit(_one, t) for t in todo]
        for f in as_completed(futs):
            name, label, out = f.result()
            for c in out:
                keep[(name, label, c["settings"]["lru"])] = dict(
                    name=name, swap_label=label, spec=WORKLOADS[name][0], mode=c["mode"],
                    seed=c["seed"], settings=c["settings"], kernel=c["kernel"],
                    kernel_runs=c["kernel_runs"],
                )
            DATA.parent.mkdir(parents=True, exist_ok=True)
            DATA.write_text(json.dumps({"cases": sorted(keep.values(), key=lambda c: (
                list(WORKLOADS).index(c["name"]) if c["name"] in WORKLOADS else 99,
                c["swap_label"], c["settings"]["lru"]))}, indent=1))
            print(f"done: {name} {label}", file=sys.stderr, flush=True)


def load_cases():
    """Every committed case re-compared with the simulator as it is now."""
    from vmemsim.validate.compare import compare
    from vmemsim.validate.kernel import KernelRun, Settings
    from vmemsim.validate.workload import make_workload

    out = []
    for c in json.loads(DATA.read_text())["cases"]:
        w = make_workload(c["spec"], mode=c["mode"], seed=c["seed"])
        runs = [KernelRun.from_dict(r) for r in c["kernel_runs"]]
        case = compare(w, Settings(**c["settings"]), runs, seed=c["seed"])
        out.append((c["name"], c["swap_label"], case))
    return out


def table() -> None:
    from vmemsim.validate.compare import format_case

    for name, label, case in load_cases():
        print(f"## {name} / {label}")
        print(format_case(case))
        print()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--repeats", type=int, default=2)
    r.add_argument("--only", nargs="*")
    sub.add_parser("table")
    a = ap.parse_args()
    if a.cmd == "run":
        run(a.jobs, a.repeats, a.only)
    else:
        table()

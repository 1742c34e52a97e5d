#!/usr/bin/env python3
"""Mean runtime and major faults of MG-LRU, Scan-All and Scan-None relative to Clock-LRU at
50% capacity, per workload and swap device, at the scales of scale.toml (and, given the
results of experiment.toml as a second argument, at its 1x scale with the same seeds'
count of runs).

    python experiments/mglru-characterization/scale_table.py RESULTS_SCALE [RESULTS_MAIN]
"""

from __future__ import annotations

import sys

from vmemsim.sweep import open_results

POLICIES = ["mglru", "mglru-scan-all", "mglru-scan-none"]
SHORT = {"mglru": "MG-LRU", "mglru-scan-all": "Scan-All", "mglru-scan-none": "Scan-None"}


def rows_of(df, label_of):
    df = df[(df["status"] == "ok") & (df["machine.frames"] == "50%")]
    out = []
    for (name, swap), d in df.groupby(["workload.name", "machine.swap"], sort=True):
        label = label_of(name)
        if label is None:
            continue
        c = d[d["machine.policy"] == "clock-lru"]
        if c.empty:
            continue
        rt, mf = c["runtime_s"].mean(), c["pgmajfault"].mean()
        cells = []
        for p in POLICIES:
            x = d[d["machine.policy"] == p]
            cells.append(f"{x['runtime_s'].mean() / rt:.2f} / {x['pgmajfault'].mean() / mf:.2f}")
        out.append((label, swap, len(c), rt, mf, cells))
    return out


def main() -> int:
    rows = rows_of(open_results(sys.argv[1]).table(), lambda n: n)
    if len(sys.argv) > 2:
        main_df = open_results(sys.argv[2]).table()
        keep = {"tpch": "tpch 1x", "pagerank": "pagerank 1x", "ycsb-a": "ycsb-a 1x"}
        rows = rows_of(main_df, keep.get) + rows
    order = {"1x": 0, "4x": 1, "16x": 2}
    rows.sort(key=lambda r: (r[0].split()[0], order.get(r[0].split()[-1], 9), r[1]))
    print_table(rows, "workload")
    return 0


def print_table(rows, first: str) -> None:
    print(f"| {first} | swap | seeds | Clock runtime s | Clock major faults | "
          + " | ".join(f"{SHORT[p]} runtime / faults vs Clock" for p in POLICIES) + " |")
    print("|---|---|---|---|---|" + "---|" * len(POLICIES))
    for label, swap, n, rt, mf, cells in rows:
        print(f"| {label} | {swap} | {n} | {rt:.3f} | {mf:,.0f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())

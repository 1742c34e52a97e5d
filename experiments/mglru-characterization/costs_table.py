#!/usr/bin/env python3
"""Runtime / major faults of MG-LRU, Scan-All and Scan-None relative to Clock-LRU per
workload, swap device and scanning-cost level of costs.toml (same table as scale_table.py).

    python experiments/mglru-characterization/costs_table.py RESULTS_COSTS
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_table import print_table, rows_of  # noqa: E402

from vmemsim.sweep import open_results  # noqa: E402

LEVELS = {(300, 5): "default", (3000, 5): "rmap x10", (3000, 50): "all x10"}


def main() -> int:
    df = open_results(sys.argv[1]).table()
    level = [LEVELS.get((int(a), int(b)), f"rmap {a} walk {b}")
             for a, b in zip(df["machine.costs.scan_page_ns"], df["machine.costs.walk_pte_ns"])]
    df = df.assign(**{"workload.name": df["workload.name"] + ", " + level})
    print_table(rows_of(df, lambda n: n), "workload, costs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

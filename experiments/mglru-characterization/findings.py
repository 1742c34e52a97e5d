#!/usr/bin/env python3
"""Compute each finding of the MG-LRU characterization (seed 001, §V-A to §V-D) from a
results directory of experiment.toml, and print FINDINGS.md.

    python experiments/mglru-characterization/findings.py RESULTS > FINDINGS.md

Every number comes from the results table; the verdict of each finding is a fixed rule
stated next to it (written before looking at the results, from the paper's wording).
"""

from __future__ import annotations

import sys
from typing import List

from vmemsim import stats
from vmemsim.sweep import open_results

VARIANTS = ["clock-lru", "mglru", "mglru-gen14", "mglru-scan-all", "mglru-scan-none",
            "mglru-scan-rand"]
SHORT = {"clock-lru": "Clock", "mglru": "MG-LRU", "mglru-gen14": "Gen-14",
         "mglru-scan-all": "Scan-All", "mglru-scan-none": "Scan-None",
         "mglru-scan-rand": "Scan-Rand"}


def main() -> int:
    res = open_results(sys.argv[1])
    df = res.table()
    df = df[df["status"] == "ok"]
    seeds = df["seed"].nunique()
    out: List[str] = []
    w = out.append

    def sel(**kw):
        d = df
        for k, v in kw.items():
            col = {"swap": "machine.swap", "cap": "machine.frames", "wl": "workload.name",
                   "pol": "machine.policy"}[k]
            d = d[d[col] == v]
        return d

    def mean(d, m):
        return float(d[m].mean())

    def iqr(d, m):
        return float(d[m].quantile(0.75) - d[m].quantile(0.25))

    w("# Findings of the MG-LRU characterization, as vmemsim reproduces them\n")
    w(f"Computed by `findings.py` from `{sys.argv[1]}`: {len(df)} runs, {seeds} seeds per "
      f"configuration, vmemsim {', '.join(sorted(df['version'].unique()))}. Workloads are "
      "scaled down to 16 MiB footprints (the paper's are 12–16 GiB); the machine has 6 CPUs, "
      "SSD swap at 7.5 ms per 4 KiB and zram at 20/35 µs, as in the paper's §IV. Runtime is "
      "simulated time. A finding is marked *reproduces* only when the rule written next to it "
      "holds; otherwise the table says what the simulator shows instead.\n")
    rows = []

    # §V-A: MG-LRU better mean runtime than Clock at 50% with SSD, via fewer faults.
    ratios = {}
    for wl in ["tpch", "pagerank", "ycsb-a", "ycsb-b", "ycsb-c"]:
        c = sel(swap="ssd", cap="50%", wl=wl, pol="clock-lru")
        m = sel(swap="ssd", cap="50%", wl=wl, pol="mglru")
        ratios[wl] = (mean(m, "runtime_s") / mean(c, "runtime_s"),
                      mean(m, "pgmajfault") / mean(c, "pgmajfault"))
    ok = all(r < 1.0 for r, _ in ratios.values())
    txt = ", ".join(f"{wl} {r:.2f} (faults {f:.2f})" for wl, (r, f) in ratios.items())
    rows.append(("§V-A, Fig. 1", "Under high pressure (50%, SSD) MG-LRU matches or beats Clock "
                 "in mean runtime on every workload, through fewer faults.",
                 "MG-LRU / Clock mean runtime < 1 on all five workloads",
                 f"runtime ratio {txt}", ok))

    # §V-A: MG-LRU wider spread on PageRank than Clock.
    c = sel(swap="ssd", cap="50%", wl="pagerank", pol="clock-lru")
    m = sel(swap="ssd", cap="50%", wl="pagerank", pol="mglru")
    sc, sm = float(c["runtime_s"].std()), float(m["runtime_s"].std())
    rows.append(("§V-A, Fig. 2", "On PageRank, Clock has a far tighter runtime distribution than "
                 "MG-LRU.", "stdev of runtime across seeds: MG-LRU > Clock",
                 f"stdev Clock {sc:.3f} s, MG-LRU {sm:.3f} s (IQR {iqr(c, 'runtime_s'):.3f} vs "
                 f"{iqr(m, 'runtime_s'):.3f})", sm > sc))

    # §V-A: r² runtime vs faults > 0.98 on TPC-H, no correlation on PageRank.
    r2 = {}
    for wl in ["tpch", "pagerank"]:
        vals = []
        for pol in VARIANTS:
            d = sel(swap="ssd", cap="50%", wl=wl, pol=pol)
            if len(d) >= 3 and d["pgmajfault"].nunique() > 1:
                vals.append(stats.linregress(d["pgmajfault"], d["runtime_s"]).r2)
        r2[wl] = vals
    def span(v):
        return f"{min(v):.3f}–{max(v):.3f}" if v else "n/a (fewer than 3 seeds)"
    ok = bool(r2["tpch"]) and bool(r2["pagerank"]) and min(r2["tpch"]) > 0.98 \
        and max(r2["pagerank"]) < 0.5
    rows.append(("§V-A, Fig. 2/5", "Runtime is linear in faults on TPC-H (r² > 0.98 in every "
                 "configuration) but not on PageRank.",
                 "min r² (TPC-H, per policy) > 0.98 and max r² (PageRank) < 0.5",
                 f"TPC-H r² per policy {span(r2['tpch'])}; PageRank {span(r2['pagerank'])}",
                 ok))

    # §V-B: no single best configuration.
    best = {}
    for wl in ["tpch", "pagerank", "ycsb-a", "ycsb-b", "ycsb-c"]:
        for cap in ["50%", "75%", "90%"]:
            for swap in ["ssd", "zram"]:
                means = {p: mean(sel(swap=swap, cap=cap, wl=wl, pol=p), "runtime_s")
                         for p in VARIANTS}
                best[(wl, cap, swap)] = min(means, key=means.get)
    winners = sorted({SHORT[b] for b in best.values()})
    rows.append(("§V-B, §VI-A", "No single configuration is best on every workload and system.",
                 "more than one policy has the lowest mean runtime across the 30 "
                 "(workload, capacity, swap) settings",
                 f"best policies: {', '.join(winners)} "
                 f"({', '.join(f'{SHORT[p]} {sum(1 for b in best.values() if b == p)}' for p in VARIANTS if any(b == p for b in best.values()))})",
                 len(winners) > 1))

    # §V-B: Scan-None best and Scan-All worst on TPC-H; reversed on PageRank.
    def order(wl):
        ms = {p: mean(sel(swap="ssd", cap="50%", wl=wl, pol=p), "runtime_s")
              for p in VARIANTS if p != "clock-lru"}
        return sorted(ms, key=ms.get), ms
    ot, mt = order("tpch")
    op, mp = order("pagerank")
    ok = (ot[0] == "mglru-scan-none" and ot[-1] == "mglru-scan-all"
          and op[0] == "mglru-scan-all" and op[-1] == "mglru-scan-none")
    rows.append(("§V-B, Fig. 4/5", "Scan-None is the best MG-LRU configuration on TPC-H and "
                 "Scan-All the worst; on PageRank the order is reversed.",
                 "on TPC-H best = Scan-None and worst = Scan-All; on PageRank best = Scan-All "
                 "and worst = Scan-None (mean runtime, SSD, 50%)",
                 "TPC-H " + " < ".join(SHORT[p] for p in ot) + "; PageRank "
                 + " < ".join(SHORT[p] for p in op), ok))

    # §V-D: faster swap (zram) → more faults.
    more = []
    for wl in ["tpch", "pagerank", "ycsb-a", "ycsb-b", "ycsb-c"]:
        for pol in VARIANTS:
            z = mean(sel(swap="zram", cap="50%", wl=wl, pol=pol), "pgmajfault")
            s = mean(sel(swap="ssd", cap="50%", wl=wl, pol=pol), "pgmajfault")
            more.append((wl, pol, z / s if s else float("nan")))
    n_more = sum(1 for _, _, r in more if r > 1)
    lo = min(r for _, _, r in more)
    hi = max(r for _, _, r in more)
    rows.append(("§V-D, §VI-B", "With faster swap (zram) the number of faults per execution "
                 "increases.", "mean major faults zram / SSD > 1 in every (workload, policy) "
                 "at 50%", f"{n_more} of {len(more)} settings have more faults with zram; ratio "
                 f"{lo:.2f}–{hi:.2f}", n_more == len(more)))

    # §V-D: MG-LRU 2–5× longer p99.99 with zram on YCSB.
    tails = []
    for wl in ["ycsb-a", "ycsb-b", "ycsb-c"]:
        c = mean(sel(swap="zram", cap="50%", wl=wl, pol="clock-lru"), "latency.all.p9999_ns")
        m = mean(sel(swap="zram", cap="50%", wl=wl, pol="mglru"), "latency.all.p9999_ns")
        tails.append((wl, m / c))
    ok = all(2 <= r <= 5 for _, r in tails)
    rows.append(("§V-D, §VI-A", "With zram, MG-LRU has 2–5× longer p99.99 latency than Clock "
                 "on YCSB.", "MG-LRU / Clock mean p99.99 (all requests) in [2, 5] on A, B, C",
                 ", ".join(f"{wl} {r:.2f}×" for wl, r in tails), ok))

    w("| paper | finding | rule | vmemsim | reproduces |")
    w("|---|---|---|---|---|")
    for sec, claim, rule, got, ok in rows:
        w(f"| {sec} | {claim} | {rule} | {got} | {'yes' if ok else '**no**'} |")
    w("")
    n_ok = sum(1 for r in rows if r[4])
    w(f"{n_ok} of {len(rows)} findings reproduce under these rules.\n")
    w("Status: a first pass with the timing model as it stands. Its event costs are "
      "starting-point estimates (docs/models.md) that have not been checked against these "
      "results, and why each finding does or does not reproduce has not yet been worked out "
      "(scaled-down footprints, the workload models' locality, the cost of aging walks, "
      "zram's pool outside the capacity are all candidates). Nothing here has been tuned "
      "toward the paper.\n")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

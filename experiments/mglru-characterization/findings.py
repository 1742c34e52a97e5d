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


def scan_mix() -> dict:
    """Major faults of a replay with no timing: a 16,000-page loop mixed 1:1 with uniform
    accesses to 4,000 other pages, 400,000 accesses, 10,000 frames, no swap readahead."""
    import vmemsim

    spec = "gen:mix:(loop:pages=16000)*0.5+(uniform:pages=4000,start=16000)*0.5,n=400000"
    return {p: int(vmemsim.replay(spec, policy=p, frames=10_000,
                                  page_cluster=0).stats["major_faults"])
            for p in ["clock-lru", "mglru", "lru"]}


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
    mix = scan_mix()
    faults = ", ".join(f"{wl} {f:.2f}" for wl, (_, f) in ratios.items())
    why = (f"Runtime follows faults (MG-LRU / Clock major faults: {faults}). At this scale "
           "the margins are a few hundred faults and are fragile: changes of the time model "
           "that leave the policies' code alone (issue 14: kswapd preempting on wake-up, "
           "pages locked while their read is in flight) moved TPC-H's fault ratio from 1.36 "
           f"to {ratios['tpch'][1]:.2f} and PageRank's from 1.26 to "
           f"{ratios['pagerank'][1]:.2f}; the 4x and 16x rows of scale.toml "
           "(README.md) are the sturdier comparison. The policies' own difference shows "
           "where data "
           "larger than memory is re-read beside a hot set (column scans beside hash tables, "
           "CSR edge arrays beside rank vectors): MG-LRU takes more faults there. Linux 6.8 "
           "puts every page faulted in into "
           "MG-LRU's youngest generation (`folio_add_lru` sets it active when "
           "`lru_gen_in_fault()`), so a page read once per pass competes with hot pages "
           "until it ages out, while Clock adds faulted anonymous pages to the inactive list "
           "and only pages referenced twice reach the active list, which a pass cannot flush. "
           "The same decisions on a plain replay (no timing) of a 16,000-page loop mixed 1:1 "
           f"with uniform accesses to 4,000 other pages, in 10,000 frames, no readahead: "
           f"Clock {mix['clock-lru']:,} major faults, MG-LRU {mix['mglru']:,}, exact LRU "
           f"{mix['lru']:,}. The paper's Spark and GAP programs allocate and touch memory in "
           "ways these generators only approximate (JVM heap and garbage collection, file "
           "I/O through the page cache), and that is where MG-LRU's advantage would have to "
           "come from; the model has no such term to tune.")
    rows.append(("§V-A, Fig. 1", "Under high pressure (50%, SSD) MG-LRU matches or beats Clock "
                 "in mean runtime on every workload, through fewer faults.",
                 "MG-LRU / Clock mean runtime < 1 on all five workloads",
                 f"runtime ratio {txt}", ok, why))

    # §V-A: MG-LRU wider spread on PageRank than Clock.
    c = sel(swap="ssd", cap="50%", wl="pagerank", pol="clock-lru")
    m = sel(swap="ssd", cap="50%", wl="pagerank", pol="mglru")
    sc, sm = float(c["runtime_s"].std()), float(m["runtime_s"].std())
    rows.append(("§V-A, Fig. 2", "On PageRank, Clock has a far tighter runtime distribution than "
                 "MG-LRU.", "stdev of runtime across seeds: MG-LRU > Clock",
                 f"stdev Clock {sc:.3f} s, MG-LRU {sm:.3f} s (IQR {iqr(c, 'runtime_s'):.3f} vs "
                 f"{iqr(m, 'runtime_s'):.3f})", sm > sc,
                 "PageRank's per-thread work is skewed by vertex degree and every iteration "
                 "ends at a barrier, so a few faults on a straggler's critical path move the "
                 "runtime; which pages those are depends on the seed's graph and on reclaim "
                 "timing." if sm > sc else
                 "Spread comes from the seed's graph and reclaim timing; here Clock's is as "
                 "wide."))

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
    cv = []
    for pol in VARIANTS:
        d = sel(swap="ssd", cap="50%", wl="tpch", pol=pol)
        cv.append((float(d["pgmajfault"].std() / d["pgmajfault"].mean()),
                   float(d["runtime_s"].std() / d["runtime_s"].mean())))
    why = ("Across seeds of one TPC-H configuration the fault count varies little "
           f"(coefficient of variation {min(c for c, _ in cv):.1%}–{max(c for c, _ in cv):.1%}) "
           f"and so does the runtime ({min(r for _, r in cv):.1%}–{max(r for _, r in cv):.1%}); "
           "what remains is which thread's pages fault before each barrier and how the SSD "
           "queue overlaps them, which is not proportional to the total. The paper's runs "
           "spread over a far wider range of faults (its Fig. 5), which a linear fit "
           "explains almost entirely. With the model's deterministic work per thread, a "
           "seed changes only data placement and random keys, not the amount of work.")
    rows.append(("§V-A, Fig. 2/5", "Runtime is linear in faults on TPC-H (r² > 0.98 in every "
                 "configuration) but not on PageRank.",
                 "min r² (TPC-H, per policy) > 0.98 and max r² (PageRank) < 0.5",
                 f"TPC-H r² per policy {span(r2['tpch'])}; PageRank {span(r2['pagerank'])}",
                 ok, why if not ok else "TPC-H's balanced stages make runtime proportional "
                 "to faults; PageRank's barriers make it depend on stragglers."))

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
                 len(winners) > 1,
                 "The policies' decisions differ by workload pattern and capacity; at 90% "
                 "several are within noise of each other, so the winner changes with little "
                 "at stake."))

    # §V-B: Scan-None best and Scan-All worst on TPC-H; reversed on PageRank.
    def order(wl):
        ms = {p: mean(sel(swap="ssd", cap="50%", wl=wl, pol=p), "runtime_s")
              for p in VARIANTS if p != "clock-lru"}
        return sorted(ms, key=ms.get), ms
    ot, mt = order("tpch")
    op, mp = order("pagerank")
    ok = (ot[0] == "mglru-scan-none" and ot[-1] == "mglru-scan-all"
          and op[0] == "mglru-scan-all" and op[-1] == "mglru-scan-none")
    sa = sel(swap="ssd", cap="50%", wl="tpch", pol="mglru-scan-all")
    mg = sel(swap="ssd", cap="50%", wl="tpch", pol="mglru")
    sn = sel(swap="ssd", cap="50%", wl="tpch", pol="mglru-scan-none")
    cpu_cols = ["cpu.app_ns", "cpu.direct_reclaim_ns", "cpu.kswapd_ns"]
    share = float(sa["cpu.aging_ns"].sum() / sa[cpu_cols].sum(axis=1).sum())

    def fr(wl, pol):
        return (mean(sel(swap="ssd", cap="50%", wl=wl, pol=pol), "pgmajfault")
                / mean(sel(swap="ssd", cap="50%", wl=wl, pol="mglru"), "pgmajfault"))
    variants = [v for v in mp if v != "mglru"]
    spread_lo = min(mp[v] / mp["mglru"] for v in variants)
    spread_hi = max(mp[v] / mp["mglru"] for v in variants)
    why = ("The paper explains Scan-All's loss on TPC-H by the CPU its full page-table scans "
           "take from the application (stragglers). Here a full scan costs what the "
           "model's per-entry costs say (5 ns a PTE, 20 ns a PMD: estimates, docs/models.md): "
           f"Scan-All's aging walks take {share:.2%} of all CPU time on TPC-H at 50% with "
           f"SSD, in runs where threads mostly wait for 7.5 ms reads. What remains is the "
           "quality of decisions, that is, which pages the walks find young and promote: "
           f"Scan-All takes {mean(sa, 'pgmajfault') / mean(mg, 'pgmajfault'):.2f}× "
           f"MG-LRU's faults and Scan-None {mean(sn, 'pgmajfault') / mean(mg, 'pgmajfault'):.2f}×. "
           "On PageRank runtime does not follow faults: Scan-None has "
           f"{fr('pagerank', 'mglru-scan-none'):.2f}× MG-LRU's faults and "
           f"{mp['mglru-scan-none'] / mp['mglru']:.2f}× its runtime, Scan-All "
           f"{fr('pagerank', 'mglru-scan-all'):.2f}× and {mp['mglru-scan-all'] / mp['mglru']:.2f}×; "
           "which thread's faults delay each barrier decides (finding 3), and the "
           f"variants' mean runtimes lie at {spread_lo:.2f}–{spread_hi:.2f}× MG-LRU's. "
           "Making scanning as costly as the paper implies would need per-entry costs "
           "measured on a real kernel (perf on `walk_pte_range`), not chosen to fit.")
    rows.append(("§V-B, Fig. 4/5", "Scan-None is the best MG-LRU configuration on TPC-H and "
                 "Scan-All the worst; on PageRank the order is reversed.",
                 "on TPC-H best = Scan-None and worst = Scan-All; on PageRank best = Scan-All "
                 "and worst = Scan-None (mean runtime, SSD, 50%)",
                 "TPC-H " + " < ".join(SHORT[p] for p in ot) + "; PageRank "
                 + " < ".join(SHORT[p] for p in op), ok, why))

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
    by_wl = {}
    for wl, pol, r in more:
        by_wl.setdefault(wl, []).append(r)
    stall = {}
    for sw in ["ssd", "zram"]:
        d = sel(swap=sw, cap="50%", wl="tpch", pol="mglru")
        stall[sw] = (mean(d, "allocstall"), float(d["cpu.aging_ns"].mean() / 1e6))
    flat = [wl for wl, v in by_wl.items() if max(v) < 1.05]
    rising = [wl for wl, v in by_wl.items() if min(v) > 1.05]
    why = ("Per workload the zram/SSD fault ratio is "
           + ", ".join(f"{wl} {min(v):.2f}–{max(v):.2f}" for wl, v in by_wl.items())
           + ". " + (f"Faults rise with zram on {', '.join(rising)}, " if rising else "")
           + (f"and stay flat on {', '.join(flat)}, as the paper's §V-D says of YCSB "
              "(\"fault rates do not increase much with YCSB workloads due to their random "
              "access patterns\"); the rule written beforehand asked for an increase in every "
              "setting, which the flat ones miss by at most 1%. " if flat else "")
           + "The paper attributes the rise to aging scans getting less done per fault. In "
           "Linux 6.8, which the model follows, MG-LRU has no aging thread: the reclaimer "
           "ages (`try_to_inc_max_seq`) when too few generations are left, before it evicts, "
           "and Clock has no aging at all, yet both show the rise here. What changes with "
           "zram is the pace: a fault costs its thread 20–35 µs of CPU instead of a 7.5 ms "
           "sleep, so the program touches many more pages between two reclaim passes and "
           "each pass's accessed-bit sample (rmap checks, walks) reflects a longer stretch "
           "of the program; that is the likely cause, not isolated by these runs "
           f"(MG-LRU on TPC-H: allocstall {stall['ssd'][0]:.0f} with SSD vs "
           f"{stall['zram'][0]:.0f} with zram, aging CPU {stall['ssd'][1]:.2f} vs "
           f"{stall['zram'][1]:.2f} ms per run). Random access (YCSB) has no recency for "
           "either to lose.")
    rows.append(("§V-D, §VI-B", "With faster swap (zram) the number of faults per execution "
                 "increases.", "mean major faults zram / SSD > 1 in every (workload, policy) "
                 "at 50%", f"{n_more} of {len(more)} settings have more faults with zram; ratio "
                 f"{lo:.2f}–{hi:.2f}", n_more == len(more), why))

    # §V-D: MG-LRU 2–5× longer p99.99 with zram on YCSB.
    tails = []
    for wl in ["ycsb-a", "ycsb-b", "ycsb-c"]:
        c = mean(sel(swap="zram", cap="50%", wl=wl, pol="clock-lru"), "latency.all.p9999_ns")
        m = mean(sel(swap="zram", cap="50%", wl=wl, pol="mglru"), "latency.all.p9999_ns")
        tails.append((wl, m / c))
    ok = all(2 <= r <= 5 for _, r in tails)
    p99 = []
    for wl in ["ycsb-a", "ycsb-b", "ycsb-c"]:
        c = sel(swap="zram", cap="50%", wl=wl, pol="clock-lru")
        m = sel(swap="zram", cap="50%", wl=wl, pol="mglru")
        p99.append((wl, mean(c, "latency.all.p99_ns") / 1e3, mean(m, "latency.all.p99_ns") / 1e3,
                    mean(c, "allocstall"), mean(m, "allocstall")))
    # Pages reclaimed and scanned per direct reclaim (one `do_try_to_free_pages` each), over
    # the three YCSB workloads' zram runs at 50%.
    per_stall = {}
    for pol in ["clock-lru", "mglru"]:
        d = sel(swap="zram", cap="50%", pol=pol)
        d = d[d["workload.name"].isin(["ycsb-a", "ycsb-b", "ycsb-c"])]
        n = float(d["allocstall"].sum())
        per_stall[pol] = (float(d["pgsteal_direct"].sum()) / n, float(d["pgscan_direct"].sum()) / n)
    p9999 = [(wl, mean(sel(swap="zram", cap="50%", wl=wl, pol="clock-lru"),
                       "latency.all.p9999_ns") / 1e3,
              mean(sel(swap="zram", cap="50%", wl=wl, pol="mglru"),
                   "latency.all.p9999_ns") / 1e3) for wl in ["ycsb-a", "ycsb-b", "ycsb-c"]]
    lo_t, hi_t = min(r for _, r in tails), max(r for _, r in tails)
    if ok:
        size = f"Direction and size as in the paper: MG-LRU's p99.99 is {lo_t:.2f}–{hi_t:.2f}× Clock's"
    elif all(r > 1 for _, r in tails):
        size = ("Direction as in the paper, size " + ("smaller" if lo_t < 2 else "larger")
                + f": MG-LRU's p99.99 is {lo_t:.2f}–{hi_t:.2f}× Clock's, outside [2, 5]")
    else:
        size = f"Direction not as in the paper: MG-LRU / Clock p99.99 {lo_t:.2f}–{hi_t:.2f}×"
    why = (size + " ("
           + ", ".join(f"{wl} Clock {c:,.0f} µs vs MG-LRU {m:,.0f} µs" for wl, c, m in p9999)
           + "). The model's tails come from requests that stall in direct reclaim, and "
           "a stall is one `do_try_to_free_pages`: passes from priority 12 down until they "
           "have reclaimed `SWAP_CLUSTER_MAX` (32) pages in all, each page compressed by zram "
           "on the stalling thread. Clock's stalls reclaim "
           f"{per_stall['clock-lru'][0]:.1f} pages each ({per_stall['clock-lru'][1]:.1f} "
           "scanned: with lists of a few thousand pages `lru_size >> priority` scans nothing "
           "at the first priorities, and the cascade goes on down), MG-LRU's "
           f"{per_stall['mglru'][0]:.1f} (one eviction batch, {per_stall['mglru'][1]:.1f} "
           "scanned), so the two policies' stalls are of a size, and so are their tails "
           "(p99 "
           + ", ".join(f"{wl} Clock {c:.0f} µs vs MG-LRU {m:.0f} µs" for wl, c, m, _, _ in p99)
           + "; allocstall "
           + ", ".join(f"{wl} {a:.0f} vs {b:.0f}" for wl, _, _, a, b in p99)
           + "). This is the kernel's rule; until the engine followed it (it used to stop "
           "a stall at the first pass that lifted free memory above the min watermark) "
           "Clock's stalls were short and many (30,920 a run on YCSB-A, against 811 for "
           "MG-LRU), its p99.99 was 0.43× MG-LRU's, and this finding reproduced "
           "(2.31–2.46×). What "
           "would make MG-LRU's stalls longer than Clock's in the kernel (the paper's §VI-A "
           "suggests slow reclaim under MG-LRU's look-around, which the model's walk costs, "
           "5 ns a PTE, estimates, make cheap) the model does not show.")
    rows.append(("§V-D, §VI-A", "With zram, MG-LRU has 2–5× longer p99.99 latency than Clock "
                 "on YCSB.", "MG-LRU / Clock mean p99.99 (all requests) in [2, 5] on A, B, C",
                 ", ".join(f"{wl} {r:.2f}×" for wl, r in tails), ok, why))

    w("| paper | finding | rule | vmemsim | reproduces |")
    w("|---|---|---|---|---|")
    for sec, claim, rule, got, ok, _ in rows:
        w(f"| {sec} | {claim} | {rule} | {got} | {'yes' if ok else '**no**'} |")
    w("")
    n_ok = sum(1 for r in rows if r[4])
    w(f"{n_ok} of {len(rows)} findings reproduce under these rules.\n")
    w("## Why\n")
    w("Each explanation quotes numbers from the same results (and, for the first, from a "
      "plain replay that findings.py runs). The models change only to follow the kernel's "
      "code, as measured against a real kernel (experiments/kernel-validation), never to "
      "move a finding.\n")
    for i, (sec, claim, _, _, ok, why) in enumerate(rows, 1):
        w(f"{i}. **{sec}, {'reproduces' if ok else 'does not reproduce'}.** {why}\n")
    w("## What the scale changes\n")
    w("The workloads here are 16 MiB (4,096 pages), the paper's 12–16 GiB. Kernel constants "
      "do not scale with them: reclaim batches of SWAP_CLUSTER_MAX = 32 pages, scan targets "
      "of `lru_size >> priority` (4,096 >> 12 = 1 page at the first priority), MG-LRU's "
      "Bloom filter and look-around windows sized per 2 MiB PMD (a 16 MiB workload spans "
      "8 PMDs), and watermarks from `min_free_kbytes`. Reclaim therefore works in coarser "
      "steps relative to memory than on the paper's machine. `vmemsim sweep run "
      "experiments/mglru-characterization/scale.toml` repeats the central comparisons at 4× "
      "and 16× the footprint; see its table in README.md.\n")
    w("## What the scanning costs change\n")
    w("The per-event costs of checking accessed bits are estimates (docs/models.md). "
      "`costs.toml` repeats the comparison with rmap checks ten times dearer, and with "
      "every scanning cost ten times dearer; its table is in README.md. With rmap ×10 "
      "MG-LRU beats Clock on PageRank with SSD, as the paper has it, and falls further "
      "behind on TPC-H; findings 1 and 5 depend on these costs.\n")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Compare the results of experiment.toml with seed 000 (KVM shadow-page eviction: FIFO vs
an approximate-LRU clock) and print FINDINGS.md.

    python experiments/kvm-shadow-eviction/findings.py RESULTS [RESULTS_LATENCY] > FINDINGS.md

RESULTS comes from experiment.toml, RESULTS_LATENCY (optional) from latency.toml.
"""

from __future__ import annotations

import sys

from vmemsim.sweep import open_results

EVICTIONS = ["fifo", "clock", "clock-leaf", "clock-parent"]


def latency_rows(path: str) -> dict:
    """p99 latency (ns) per request rate and variant (fifo, clock, clock-leaf, tdp)."""
    df = open_results(path).table()
    df = df[df["status"] == "ok"].copy()
    df["rps"] = df["workload.guest"].str.extract(r"rps=(\d+)")[0].astype(int)
    df["variant"] = [("tdp" if p == "tdp" else e)
                     for p, e in zip(df["vm.paging"], df["vm.eviction"])]
    rows = {}
    for rps in sorted(df["rps"].unique()):
        d = df[df["rps"] == rps]
        rows[int(rps)] = {v: float(d[d["variant"] == v]["latency.all.p99_ns"].mean())
                          for v in ("fifo", "clock", "clock-leaf", "tdp")}
    return rows


def kvm_time(path: str) -> dict:
    """(KVM handler ns, exits, SPTEs scanned by A-bit harvesting) per shadow variant at the
    lowest request rate."""
    df = open_results(path).table()
    df = df[(df["status"] == "ok") & (df["vm.paging"] == "shadow")].copy()
    df["rps"] = df["workload.guest"].str.extract(r"rps=(\d+)")[0].astype(int)
    d = df[df["rps"] == df["rps"].min()]
    return {e: (float(g["time.kvm_ns"].mean()), float(g["exits"].mean()),
                float(g["kvm.lru_age_sptes"].mean()))
            for e, g in d.groupby("vm.eviction")}


def main() -> int:
    df = open_results(sys.argv[1]).table()
    df = df[df["status"] == "ok"].copy()
    df["pool"] = df["vm.mmu_pages"].map(lambda v: "default" if v != v or v is None
                                        else str(int(v)))
    seeds = df["seed"].nunique()
    shadow = df[df["vm.paging"] == "shadow"]
    tdp = df[df["vm.paging"] == "tdp"]
    out = []
    w = out.append
    w("# KVM shadow-page eviction (seed 000), as vmemsim reproduces it\n")
    w(f"Computed by `findings.py` from {len(df)} runs ({seeds} seeds per configuration), "
      f"vmemsim {', '.join(sorted(df['version'].unique()))}. The pool comparison counts "
      "exits, shadow page faults and zaps; it does not depend on the event "
      "costs; the latency comparison comes from latency.toml, timed by the VM layer's "
      "event costs.\n")
    w("Shadow page faults (`#PF` exits: the guest's own faults, injected, plus faults on "
      "missing shadow entries), mean over seeds, and each clock variant relative to FIFO:\n")
    pools = ["32", "64", "128", "default"]
    w("| workload | pool | " + " | ".join(EVICTIONS) + " | clock / fifo | clock-leaf / fifo | "
      "clock-parent / fifo | zapped (fifo) |")
    w("|---|---|" + "---|" * (len(EVICTIONS) + 4))
    ratios = {}
    for wl in sorted(shadow["workload.name"].unique()):
        for pool in pools:
            d = shadow[(shadow["workload.name"] == wl) & (shadow["pool"] == pool)]
            if d.empty:
                continue
            m = {e: d[d["vm.eviction"] == e]["exits_pf"].mean() for e in EVICTIONS}
            z = d[d["vm.eviction"] == "fifo"]["kvm.mmu_shadow_zapped"].mean()
            r = {e: m[e] / m["fifo"] for e in EVICTIONS[1:]}
            ratios[(wl, pool)] = r
            w(f"| {wl} | {pool} | " + " | ".join(f"{m[e]:,.0f}" for e in EVICTIONS) + " | "
              + " | ".join(f"{r[e]:.3f}" for e in EVICTIONS[1:]) + f" | {z:,.0f} |")
    w("")
    w("Nested paging (TDP, no shadow pages) on the same guests: EPT violations and exits.\n")
    w("| workload | EPT violations | exits | guest page faults |")
    w("|---|---|---|---|")
    for wl in sorted(tdp["workload.name"].unique()):
        d = tdp[tdp["workload.name"] == wl]
        w(f"| {wl} | {d['ept_violations'].mean():,.0f} | {d['exits'].mean():,.0f} | "
          f"{d['faults'].mean():,.0f} |")
    w("")
    sv = {p: ratios.get(("stress-vm", p), {}) for p in pools}
    best = min((r.get("clock", 9), p) for p, r in sv.items() if r)
    w("## Against the seed\n")
    w("| seed 000 | vmemsim | reproduces |")
    w("|---|---|---|")
    w("| stress-ng: page faults 117,375 (FIFO) → 112,016 (approximate LRU), 0.954× | "
      "stress-vm, clock / fifo shadow page faults: "
      + ", ".join(f"pool {p} {r['clock']:.3f}×" for p, r in sv.items() if r)
      + " (with leaf A-bit harvesting: "
      + ", ".join(f"{r['clock-leaf']:.3f}×" for p, r in sv.items() if r) + ") | "
      + ("yes" if best[0] < 0.99 else "**no**") + " |")
    lat = latency_rows(sys.argv[2]) if len(sys.argv) > 2 else None
    if lat is None:
        w("| redis-benchmark: lower latency across the RPS range with the clock | not "
          "measured (give latency.toml's results) | not yet |")
    else:
        better = all(r["clock"] < r["fifo"] * 0.99 for r in lat.values())
        w("| redis-benchmark: lower latency across the RPS range with the clock; FIFO's "
          "grows under load; TDP more variable | p99 clock / fifo by request rate: "
          + ", ".join(f"{rps // 1000}k {r['clock'] / r['fifo']:.3f}×" for rps, r in lat.items())
          + "; clock-leaf / fifo: "
          + ", ".join(f"{r['clock-leaf'] / r['fifo']:.2f}×" for r in lat.values())
          + "; TDP's p99 is below every shadow variant's at every rate | "
          + ("yes" if better else "**no**") + " |")
    w("")
    if lat is not None:
        w("p99 request latency (µs) of redis-like (100,000 keys, one vCPU) against offered "
          "load, shadow paging with a pool of 32 shadow pages, and TDP (latency.toml):\n")
        w("| requests/s | fifo | clock | clock-leaf | tdp |")
        w("|---|---|---|---|---|")
        for rps, r in lat.items():
            w(f"| {rps:,} | " + " | ".join(f"{r[k] / 1e3:,.1f}"
                                          for k in ("fifo", "clock", "clock-leaf", "tdp")) + " |")
        w("")
        k = kvm_time(sys.argv[2])
        w("Under shadow paging with 32 shadow pages the server saturates between 50,000 and "
          "80,000 requests/s: every recycled shadow page costs shadow page faults, exits and "
          "KVM's handler work on later requests. The plain clock's latency equals FIFO's (it "
          "zaps the same pages, below). Leaf harvesting takes fewer exits "
          f"({k['clock-leaf'][1]:,.0f} against FIFO's {k['fifo'][1]:,.0f} at 20,000 "
          "requests/s), but KVM's handlers spend more time "
          f"({k['clock-leaf'][0] / 1e6:,.0f} ms against {k['fifo'][0] / 1e6:,.0f} ms; its "
          f"accessed-bit scans alone visit {k['clock-leaf'][2]:,.0f} SPTEs, "
          f"{k['clock-leaf'][2] * 5 / 1e6:,.0f} ms at the model's 5 ns each, an estimate), "
          "and its latency is higher; `vmemsim vm --flamegraph` shows where the handlers' "
          "time goes. Nested paging has no pool and stays far from saturation.\n")
    ck = shadow[(shadow["vm.eviction"] == "clock") & (shadow["pool"] == "32")]
    skips = ck["kvm.lru_ref_skips"].sum()
    zaps = ck["kvm.mmu_shadow_zapped"].sum()
    w("## Why\n")
    w("The plain clock sets a shadow page's reference bit on every lookup, creation and "
      "non-prefetch fill. When KVM refills (fewer than 5 free → free up to 25), the hand "
      "meets pages that were almost all referenced since its last pass (at pool 32, over "
      f"all workloads: {skips:,.0f} second chances given for {zaps:,.0f} pages zapped), "
      "clears them in one lap and then zaps in list order: the same pages FIFO would zap, "
      "so the counts match "
      "FIFO's wherever every resident shadow page is used between refills (the stress-vm "
      "workers sweep their whole region every round). Harvesting the hardware accessed bits "
      "of a page's leaf SPTEs (clock-leaf) distinguishes pages whose translations were used "
      "from pages merely looked up, which is where the clock departs from FIFO (redis-like "
      "at the smallest pool). The seed's stress-ng run used the fork's own parameters, pool "
      "size and guest memory, which the seed does not give; its 4.6% reduction is within "
      "the range these variants span but not reproduced by the plain clock here.\n")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

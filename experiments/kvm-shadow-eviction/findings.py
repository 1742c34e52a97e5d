#!/usr/bin/env python3
"""Compare the results of experiment.toml with seed 000 (KVM shadow-page eviction: FIFO vs
an approximate-LRU clock) and print FINDINGS.md.

    python experiments/kvm-shadow-eviction/findings.py RESULTS > FINDINGS.md
"""

from __future__ import annotations

import sys

from vmemsim.sweep import open_results

EVICTIONS = ["fifo", "clock", "clock-leaf", "clock-parent"]


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
      f"vmemsim {', '.join(sorted(df['version'].unique()))}. Untimed runs: the VM layer "
      "counts exits, shadow page faults and zaps; it does not schedule vCPUs or charge "
      "costs yet, so the seed's redis latency-vs-RPS curves are not reproduced.\n")
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
          f"{d['guest.faults'].mean():,.0f} |")
    w("")
    sv = {p: ratios.get(("stress-vm", p), {}) for p in pools}
    best = min((r.get("clock", 9), p) for p, r in sv.items() if r)
    w("## Against the seed\n")
    w("| seed 000 | vmemsim | reproduces |")
    w("|---|---|---|")
    w("| stress-ng: page faults 117,375 (FIFO) → 112,016 (approximate LRU), 0.954× | "
      "stress-vm, clock / fifo shadow page faults: "
      + ", ".join(f"pool {p} {r['clock']:.3f}×" for p, r in sv.items() if r)
      + f" (with leaf A-bit harvesting: "
      + ", ".join(f"{r['clock-leaf']:.3f}×" for p, r in sv.items() if r) + ") | "
      + ("yes" if best[0] < 0.99 else "**no**") + " |")
    w("| redis-benchmark: lower latency across the RPS range with the clock | not measured: "
      "the VM layer is untimed so far | not yet |")
    w("")
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

"""One machine: a native run is a VM run without the guest.

`vmemsim run W --tlb` (the timed front end) and `vmemsim vm W --paging native` (the VM front
end) build their configurations in different code (api.run / timed::TimedSpec, api.run_vm /
vm::VmConfig) and must describe the same machine: with the same settings they give the
same counters, runtime, CPU times and latency, for every native workload model.
"""

from __future__ import annotations

import pytest

import vmemsim

# Every native workload model, at two sizes each (the trace kind is covered by
# tests/test_run_trace.py through the same executor).
MODELS = [
    "tpch-like:footprint={mib}MiB,queries=1/6,threads=4",
    "pagerank:scale={scale},iterations=2,threads=4",
    "ycsb-a:footprint={mib}MiB,requests=20000",
    "ycsb-b:footprint={mib}MiB,requests=20000",
    "ycsb-c:footprint={mib}MiB,requests=20000",
    "custom:(scan:pages={pages},write=1)+(zipf:pages={pages},alpha=0.9,n=20000,write=0.3),"
    "threads=3,compute_ns=200",
]
SIZES = [dict(mib=4, scale=11, pages=1024), dict(mib=8, scale=12, pages=2048)]

# The VM front end's own defaults differ (a flat-cost access, no timed swap device, clock-lru):
# give it the timed front end's settings.
COSTS = {"access_ns": 100}


@pytest.mark.parametrize("size", SIZES, ids=["small", "large"])
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.split(":")[0])
def test_run_equals_vm_native(model, size):
    spec = model.format(**size)
    policy = "mglru" if "ycsb" in spec or "custom" in spec else "clock-lru"
    r = vmemsim.run(spec, policy=policy, frames="60%", device="nvme", cpus=3, seed=5, tlb=True)
    v = vmemsim.run_vm(spec, paging="native", guest_policy=policy, guest_frames=r.frames,
                       guest_swap="nvme", host_cpus=3, costs=COSTS, seed=5)
    assert r.stats["major_faults"] > 0, "the size must put the machine under pressure"
    assert v.runtime_ns == r.runtime_ns
    g = v.guest
    for k in ("faults", "major_faults", "minor_faults", "pswpin", "pswpout", "pgscan_kswapd",
              "pgscan_direct", "pgsteal_kswapd", "pgsteal_direct", "allocstall",
              "swap_ra", "swap_ra_hit", "first_touch"):
        assert g[k] == r.stats[k], k
    assert v.cpu == r.cpu
    assert list(v.threads) == list(r.threads)
    assert v.latency_by_kind == r.latency
    assert v.translate == r.translate


# The guest models run natively too, as programs on the machine (their processes, munmaps and
# open-loop arrivals included).
GUEST_MODELS = [
    "stress-vm:vcpus=2,bytes=4MiB,rounds=2",
    "redis-like:rps=20000,keys=4000,requests=8000",
    "kernbench-like:jobs=6,parallel=2,job_ns=2000000",
    "lmbench-like:bench=lat_mem_rd,size=4MiB,passes=2",
]


@pytest.mark.parametrize("model", GUEST_MODELS, ids=lambda m: m.split(":")[0])
def test_guest_models_run_natively_as_in_vm_native(model):
    r = vmemsim.run(model, policy="clock-lru", frames="70%", device="nvme", cpus=2, seed=2,
                    tlb=True)
    v = vmemsim.run_vm(model, paging="native", guest_policy="clock-lru", guest_frames=r.frames,
                       guest_swap="nvme", host_cpus=2, costs=COSTS, seed=2)
    assert r.stats["faults"] > 0
    assert v.runtime_ns == r.runtime_ns
    for k in ("faults", "major_faults", "pswpin", "pswpout", "pgscan_kswapd", "pgsteal_kswapd"):
        assert v.guest[k] == r.stats[k], k
    assert v.cpu == r.cpu
    assert v.latency_by_kind == r.latency


def test_without_tlbs_every_access_reaches_the_memory_manager():
    # Without the TLB model (vmemsim run's default) each access sets the accessed bit: the
    # manager counts every access of the program. With it, TLB hits do not reach it, so on
    # a workload that reuses pages it counts fewer; both count the program's accesses in
    # threads[].accesses and the same first touches (each page faults in once).
    spec = "ycsb-c:footprint=4MiB,requests=20000"
    off = vmemsim.run(spec, policy="clock-lru", frames="200%", device="nvme", seed=1)
    on = vmemsim.run(spec, policy="clock-lru", frames="200%", device="nvme", seed=1, tlb=True)
    assert not off.tlb and on.tlb
    program = sum(t["accesses"] for t in off.threads)
    assert program == sum(t["accesses"] for t in on.threads) == off.stats["accesses"]
    assert off.translate["walks"] == 0 and on.translate["walks"] > 0
    assert off.stats["first_touch"] == on.stats["first_touch"] == off.footprint_pages
    assert off.stats["major_faults"] == on.stats["major_faults"] == 0

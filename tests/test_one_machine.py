"""One machine: a native run is a VM run without the guest.

`vmemsim run W --tlb` (the timed front end) and `vmemsim vm W --paging native` (the VM front
end) build their configurations in different code (api.run / timed::TimedSpec, api.run_vm /
vm::VmConfig) and must describe the same machine: with the same settings they give the
same counters, runtime, CPU times and latency, for every native workload model.
"""

from __future__ import annotations

import pytest

import vmemsim
from vmemsim import VmemsimError

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

# The cost table is one, with the same defaults both ways (no costs= below); the VM front
# end's other defaults differ (no timed swap device, clock-lru, a CPU per vCPU): give it the
# timed front end's settings.


@pytest.mark.parametrize("size", SIZES, ids=["small", "large"])
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.split(":")[0])
def test_run_equals_vm_native(model, size):
    spec = model.format(**size)
    policy = "mglru" if "ycsb" in spec or "custom" in spec else "clock-lru"
    r = vmemsim.run(spec, policy=policy, frames="60%", device="nvme", cpus=3, seed=5, tlb=True)
    v = vmemsim.run_vm(spec, paging="native", guest_policy=policy, guest_frames=r.frames,
                       guest_swap="nvme", host_cpus=3, seed=5)
    assert r.stats["major_faults"] > 0, "the size must put the machine under pressure"
    assert v.runtime_ns == r.runtime_ns
    # One result type: the same fields, equal (the counters, the /proc/vmstat view, CPU
    # time by category, each thread, the device, the latency histograms, the TLBs).
    for k in ("stats", "vmstat", "cpu", "threads", "device_stats", "device_frames_peak",
              "latency", "latency_buckets", "translate", "policy_counters", "frames",
              "footprint_pages", "cpus", "slice_ns", "device", "policy", "paging", "seed",
              "workload", "version", "tlb"):
        assert getattr(v, k) == getattr(r, k), k
    assert r.stats["major_faults"] == r.vmstat["pgmajfault"] > 0


# The guest models run natively too, as programs on the machine (their processes, munmaps and
# open-loop arrivals included).
GUEST_MODELS = [
    "stress-vm:vcpus=2,bytes=4MiB,rounds=2",
    "redis-like:rps=20000,keys=4000,requests=8000",
    "kernbench-like:jobs=6,parallel=2,job_ns=2000000",
    "lmbench-like:bench=lat_mem_rd,size=4MiB,passes=2",
    "jvm-like:heap_bytes=3MiB,live_bytes=256KiB,alloc_bytes=8MiB,perm_bytes=256KiB,"
    "code_bytes=64KiB,jvm_text_bytes=256KiB,stack_bytes=64KiB",
]


@pytest.mark.parametrize("model", GUEST_MODELS, ids=lambda m: m.split(":")[0])
def test_guest_models_run_natively_as_in_vm_native(model):
    r = vmemsim.run(model, policy="clock-lru", frames="70%", device="nvme", cpus=2, seed=2,
                    tlb=True)
    v = vmemsim.run_vm(model, paging="native", guest_policy="clock-lru", guest_frames=r.frames,
                       guest_swap="nvme", host_cpus=2, seed=2)
    assert r.stats["faults"] > 0
    assert v.runtime_ns == r.runtime_ns
    for k in ("stats", "vmstat", "cpu", "threads", "device_stats", "latency",
              "latency_buckets"):
        assert getattr(v, k) == getattr(r, k), k


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


def test_vm_settings_and_costs_are_declared_once_in_the_core():
    # A VM run's settings and the cost table are declared once, in the core (VmRunConfig,
    # Costs); the Python API's, the CLI's and the sweep's defaults are those.
    import inspect

    from vmemsim.cli import build_parser
    from vmemsim.sweep import runner
    from vmemsim.sweep.spec import OPEN_TABLES, SCHEMA

    core = vmemsim.api.VM_DEFAULTS
    sig = inspect.signature(vmemsim.run_vm).parameters
    # costs, balloon_costs, mom_config: None there is the core's table.
    for k, v in core.items():
        if k not in ("workload", "translate", "costs", "balloon_costs", "mom_config"):
            assert sig[k].default == v, k
    assert sig["balloon_costs"].default is None and core["balloon_costs"]["kick_ns"] == 10_000
    assert sig["mom_config"].default is None and core["mom_config"]["history"] == 10
    for path, arg in runner._VM_KEYS.items():
        if path.startswith("vm.") and arg != "walk_caches":  # walk_caches: translate's pwc
            assert SCHEMA[path].default == core[arg], path
    args = build_parser().parse_args(["vm", "stress-vm"])
    for k in ("paging", "guest_frames", "host_frames", "eviction", "vms", "pt_pages"):
        assert getattr(args, k) == core[k], k
    assert set(core["costs"]) == set(vmemsim.COST_KEYS)
    # The core's schema lists every setting with its documentation, and every setting is
    # reachable from each front end: the Python API (a parameter of run_vm), the CLI (an
    # option of `vmemsim vm`, documented with the core's text) and a sweep (a key, ditto).
    schema = vmemsim.api.VM_SCHEMA["properties"]
    assert set(schema) == set(core)
    sweep_key = {"workload": "workload.guest", "guest_frames": "machine.frames",
                 "guest_policy": "machine.policy", "vms": "vm.count", "seed": None,
                 "translate": "vm.walk_caches", "costs": "machine.costs",
                 # one name with the native runs' (and the replay's read_ahead_kb)
                 "file_device": "machine.file_device", "read_ahead_kb": "machine.read_ahead_kb",
                 "sample_every_ns": "run.sample_every_ns"}
    vm = next(a for a in build_parser()._subparsers._group_actions[0].choices.items()
              if a[0] == "vm")[1]
    options = {o.dest: o for o in vm._actions}
    for k in schema:
        assert k in sig or k == "workload" and "workload" in sig, k
        if k not in ("workload", "translate", "costs"):
            assert options[k].help.startswith(
                vmemsim.api.vm_setting_help(k).replace("%", "%%")), k
        path = sweep_key.get(k, f"vm.{k}")
        if path in OPEN_TABLES:  # tables: their keys are the sweep's keys, path.KEY
            assert vmemsim.api.vm_setting_help(k) in OPEN_TABLES[path] or k == "costs", k
        elif path:
            assert path in SCHEMA, k
            if path.startswith("vm.") and path != "vm.walk_caches":
                assert vmemsim.api.vm_setting_help(k) in SCHEMA[path].doc, k
    # Both front ends take every key of the one table; a misspelt key is named.
    for run in (lambda c: vmemsim.run("ycsb-c:footprint=4MiB,requests=100", costs=c),
                lambda c: vmemsim.run_vm("stress-vm:bytes=1MiB,rounds=1", costs=c)):
        run({"exit_ns": 1000, "access_ns": 50, "kvm_work_ns": [1.0] * 8})
        with pytest.raises(VmemsimError, match=r"costs.acess_ns: unknown cost \(did you mean "
                           r"'access_ns'\?\)"):
            run({"acess_ns": 5})


def test_one_result_type_with_the_same_names_natively_and_in_a_vm(tmp_path):
    # The same thing has the same name: the counters of the workload's kernel (natively the
    # machine's, in a VM the guest's) are `stats` / `vmstat`, the host's `host_stats` /
    # `host_vmstat`; the swap devices' `device_stats` / `host_device_stats`; latency by kind.
    assert vmemsim.VmResult is vmemsim.RunResult
    spec = "redis-like:rps=20000,keys=4000,requests=4000"
    r = vmemsim.run(spec, policy="clock-lru", frames="70%", device="nvme", cpus=2)
    v = vmemsim.run_vm(spec, paging="tdp", guest_frames="70%", host_frames="60%",
                       guest_swap="nvme", host_swap="ssd")
    assert type(r) is type(v)
    assert r.paging == "native" and v.paging == "tdp"
    for x in (r, v):
        assert x.vmstat["pgmajfault"] == x.stats["major_faults"] > 0
        assert x.vmstat["pswpout"] == x.stats["pswpout"] == x.device_stats["pages_written"]
        # 4,000 requests, every one measured, by kind and in all.
        assert x.latency["all"]["count"] == 4_000
        assert sum(s["count"] for k, s in x.latency.items() if k != "all") == 4_000
        assert sum(c for _, c in x.latency_buckets["all"]) == 4_000
        # The program's accesses are the kernel's `accesses` natively and in a VM alike.
        assert x.stats["accesses"] == sum(t["accesses"] for t in x.threads)
        assert x.config["seed"] == x.seed == 0 and x.version == vmemsim.__version__
    assert r.host_stats["faults"] == 0 and r.host_vmstat == {} and r.host_device_stats is None
    assert v.host_vmstat["pgmajfault"] == v.host_stats["major_faults"] > 0
    assert v.host_device_stats["pages_written"] == v.host_stats["pswpout"] > 0
    # The names of older releases still read.
    assert v.guest is v.stats and v.host is v.host_stats
    assert v.guest_device is v.device_stats and v.host_device is v.host_device_stats
    assert v.latency_by_kind is v.latency
    assert (v.guest_policy, v.guest_frames) == (v.policy, v.frames)
    with pytest.raises(AttributeError):
        v.stats = {}
    # A sweep's columns: the same names for both kinds of run.
    from vmemsim.sweep.runner import run_metrics
    mr, mv = run_metrics(r), run_metrics(v)
    for col in ("runtime_ns", "faults", "major_faults", "pgmajfault", "cpu.app_ns",
                "device.pages_written", "latency.all.p99_ns", "latency.all.count", "frames",
                "miss_ratio"):
        assert col in mr and col in mv, col
    assert mv["host.major_faults"] == v.host_stats["major_faults"]
    assert mv["host_device.read_requests"] == v.host_device_stats["read_requests"]
    assert mv["latency.all.count"] == 4_000


def test_run_settings_are_declared_once_in_the_core():
    # A native timed run's settings are declared once, in the core (timed::RunConfig); the
    # Python API's, the CLI's and the sweep's defaults are those.
    import inspect
    import json

    from vmemsim.cli import build_parser
    from vmemsim.sweep import runner
    from vmemsim.sweep.spec import SCHEMA

    core = vmemsim.api.RUN_DEFAULTS
    # The core's schema documents every setting (its keys are the defaults' keys).
    assert set(vmemsim.api.RUN_SCHEMA["properties"]) == set(core)
    assert all(p.get("description") for p in vmemsim.api.RUN_SCHEMA["properties"].values())
    sig = inspect.signature(vmemsim.run).parameters
    # translate: not an argument of run(); costs, options: None there is the empty table;
    # zones: None there is the empty list (one zone).
    for k, v in core.items():
        if k not in ("workload", "translate", "costs", "options", "zones"):
            assert sig[k].default == v, k
    assert sig["costs"].default is None and sig["options"].default is None
    assert sig["zones"].default is None and core["zones"] == []
    # The sweep's timed-run keys and the machine's knobs (cgroup: charge_device_ram inverted).
    for path, arg in runner._TIMED_KEYS.items():
        want = not core["charge_device_ram"] if arg == "cgroup" else core[arg]
        assert SCHEMA[path].default == want, path
    for k in ("swappiness", "page_cluster", "watermarks", "check_invariants"):
        assert SCHEMA[f"machine.{k}"].default == core[k], k
        # a replay's default is the same
        assert inspect.signature(vmemsim.replay).parameters[k].default == core[k], k
    args = build_parser().parse_args(["run", "ycsb-c"])
    for k in ("policy", "frames", "seed", "device", "cpus", "slice_ns", "sample_every_ns",
              "step_ns", "tlb", "swappiness", "page_cluster", "watermarks",
              "check_invariants"):
        assert getattr(args, k) == core[k], k
    assert args.cgroup == (not core["charge_device_ram"])
    # The timed-run settings' help, in `vmemsim run --help` and in the sweep, is the core's.
    run = build_parser()._subparsers._group_actions[0].choices["run"]
    options = {o.dest: o for o in run._actions}
    for path, arg in runner._TIMED_KEYS.items():
        text = vmemsim.api.run_setting_help(arg)
        assert text in SCHEMA[path].doc, path
        assert options[arg].help.startswith(text.replace("%", "%%")), arg
    # The core reads its own defaults back, and names an unknown key or a bad value.
    run_timed = vmemsim._native.run_timed
    with pytest.raises(VmemsimError, match=r"^swapiness: unknown field"):
        run_timed(json.dumps({"swapiness": 60}))
    with pytest.raises(VmemsimError, match=r"^swappiness: must be 0..=200, got 201"):
        run_timed(json.dumps({**core, "workload": "ycsb-c", "swappiness": 201}))
    with pytest.raises(VmemsimError, match=r"^workload: "):
        run_timed(json.dumps(core))
    with pytest.raises(VmemsimError, match=r"^cgroup: cgroup and charge_device_ram disagree"):
        vmemsim.run("ycsb-c:footprint=1MiB,requests=10", charge_device_ram=False, cgroup=False)

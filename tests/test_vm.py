"""The VM layer through Python and the CLI: `vmemsim.run_vm` and `vmemsim vm`."""

import contextlib
import io
import json
import subprocess
import sys

import pytest

import vmemsim
from vmemsim import VmemsimError

OFF = {"pwc": {"enabled": False}, "ntlb": {"enabled": False}}


def test_guest_workload_kinds():
    names = [n for n, _ in vmemsim.guest_workload_kinds()]
    assert names == ["stress-vm", "redis-like", "kernbench-like", "lmbench-like", "jvm-like",
                     "trace",
                     "tpch-like", "pagerank", "ycsb-a", "ycsb-b", "ycsb-c", "custom",
                     "dd-like", "fileio", "gzip-like", "pbzip2-like", "mapreduce-like"]


def test_process_models_run_in_a_vm():
    # ycsb-a in a VM: the model's own streams (4 threads = 4 vCPUs) and its canonical name,
    # the one `vmemsim run` reports; half its footprint as guest memory makes the guest swap.
    spec = "ycsb-a:records=2000,requests=4000"
    r = vmemsim.run_vm(spec, paging="native", guest_frames="50%")
    assert r.workload == vmemsim.run(spec, policy="clock-lru", frames="50%").workload
    assert len(r.vcpu_ns) == 4
    assert r.stats["major_faults"] > 0
    # Every request measured: the load phase's 2,000 inserts, then the 4,000 requests.
    assert r.latency["all"]["count"] == 2_000 + 4_000


def test_references_per_walk_with_the_walk_caches_off():
    # lat_mem_rd over 64 MiB with a 4 KiB stride: every load is a new page, far more pages
    # (16,384) than the TLBs hold, so nearly every access walks. With the page-walk caches
    # and nested TLB off a walk reads 4 entries natively and under shadow paging, and
    # (4+1)(4+1)-1 = 24 under nested paging (seed 002). Walks that stop at a fault read fewer
    # (every page's first walk stops at its missing guest leaf, the 20th of 24 reads under
    # TDP), so the mean is at most those values and close to them.
    spec = "lmbench-like:bench=lat_mem_rd,size=64MiB,stride=4096,passes=2"
    got = {}
    for paging in ("native", "shadow", "tdp"):
        r = vmemsim.run_vm(spec, paging=paging, translate=OFF)
        got[paging] = r.refs_per_walk
        assert r.translate["walks"] > 30_000
    assert 3.9 <= got["native"] <= 4
    assert 3.9 <= got["shadow"] <= 4
    assert 20 <= got["tdp"] <= 24


def test_shadow_pool_eviction_and_errors():
    # Two workers each map 32 MiB: 16 leaf shadow pages plus upper levels and a root each,
    # more than a pool of 32, so KVM recycles shadow pages with either policy.
    kw = dict(paging="shadow", guest_frames="100%", mmu_pages=32)
    spec = "stress-vm:vcpus=2,bytes=64MiB,rounds=2"
    fifo = vmemsim.run_vm(spec, eviction="fifo", **kw)
    clock = vmemsim.run_vm(spec, eviction="clock", **kw)
    for r in (fifo, clock):
        assert r.kvm["mmu_recycled"] > 0
        assert r.exits >= r.exits_pf + r.exits_pt_write + r.exits_cr3 + r.exits_invlpg
    assert clock.kvm["lru_hand_steps"] > 0 and fifo.kvm["lru_hand_steps"] == 0
    with pytest.raises(VmemsimError, match="eviction"):
        vmemsim.run_vm(spec, paging="shadow", eviction="lru")
    with pytest.raises(VmemsimError, match="stress-vm.bites"):
        vmemsim.run_vm("stress-vm:bites=1MiB")
    with pytest.raises(VmemsimError, match="translate"):
        vmemsim.run_vm(spec, translate={"tlb": 1})


def test_cli_vm():
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "vm", "kernbench-like:jobs=4,parallel=2", "--paging",
         "shadow", "--guest-frames", "60%", "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["paging"] == "shadow" and j["processes_created"] == 1 + 4
    assert j["processes_exited"] == 4 and j["exits_cr3"] > 0
    r = subprocess.run([sys.executable, "-m", "vmemsim", "vm", "redis-like:requests=2000"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "refs per walk" in r.stdout and "ept_violations" in r.stdout


def test_cli_vm_has_the_python_and_sweep_keys():
    # vm.guest_levels, vm.host_levels, vm.pt_pages and vm.walk_caches (run_vm's guest_levels,
    # host_levels, pt_pages, walk_caches) have CLI options of the same names
    spec = "lmbench-like:bench=lat_mem_rd,size=8MiB,stride=4096,passes=1"
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "vm", spec, "--guest-levels", "5", "--host-levels",
         "5", "--pt-pages", "200", "--no-walk-caches", "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    api = vmemsim.run_vm(spec, guest_levels=5, host_levels=5, pt_pages=200, translate=OFF)
    assert j == json.loads(json.dumps(api.to_dict()))
    # with the caches off a nested walk reads at most (5+1)(5+1)-1 = 35 entries with 5
    # levels on both sides, more than 4-level tables' (4+1)(4+1)-1 = 24 can
    assert 24 < j["translate"]["walk_refs"] / j["translate"]["walks"] <= 35
    assert (vmemsim.run_vm(spec, walk_caches=False).to_dict()
            == vmemsim.run_vm(spec, translate=OFF).to_dict())


def test_vm_runs_in_a_sweep(tmp_path):
    import textwrap

    from vmemsim.sweep import load_experiment, open_results, run_sweep

    p = tmp_path / "e.toml"
    p.write_text(textwrap.dedent("""
        [experiment]
        name = "vm"
        seeds = 1
        [machine]
        policy = "clock-lru"
        frames = "200%"
        [workload]
        guest = "stress-vm:vcpus=2,bytes=4MiB,rounds=1"
        [sweep]
        "vm.paging" = ["native", "tdp", "shadow"]
        """))
    s = run_sweep(load_experiment(p), tmp_path / "res", workers=1, progress="quiet")
    assert (s.ok, s.failed) == (3, 0), s.errors
    df = open_results(tmp_path / "res").table().set_index("vm.paging")
    # The same guest program: the same first touches whatever the translation.
    assert df["first_touch"].nunique() == 1
    assert df.loc["tdp", "ept_violations"] > 0 and df.loc["native", "ept_violations"] == 0
    assert df.loc["shadow", "exits_pf"] > 0
    # A key of another kind of run is an error naming it.
    p.write_text(p.read_text().replace('frames = "200%"', 'frames = "200%"\nswappiness = 10'))
    s = run_sweep(load_experiment(p), tmp_path / "res2", workers=1, progress="quiet")
    assert s.failed == 3 and "machine.swappiness" in " ".join(map(str, s.errors))


def test_latency_grows_with_the_request_rate_and_the_flamegraph(tmp_path):
    # An open-loop server with 7 µs of work per request (parse 3 µs + reply 4 µs, the
    # model's defaults) plus its memory accesses: far below saturation (20,000 requests/s)
    # a request waits for nobody and takes about its service time; near saturation
    # (130,000/s, ~0.9 utilisation) it queues, so the mean latency is several times higher.
    spec = "redis-like:requests=20000,keys=20000,rps={}"
    low = vmemsim.run_vm(spec.format(20000), paging="shadow")
    high = vmemsim.run_vm(spec.format(130000), paging="shadow")
    assert 7_000 <= low.latency["all"]["p50"] <= 9_000
    assert high.latency["all"]["mean"] > 3 * low.latency["all"]["mean"]
    assert low.runtime_ns > 20000 / 20000 * 0.9e9  # the arrivals span ~1 s
    # The flame graph of KVM's handler time.
    svg = tmp_path / "fg.svg"
    folded = tmp_path / "fg.folded"
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "vm", spec.format(50000), "--paging", "shadow",
         "--mmu-pages", "32", "--flamegraph", str(svg), "--folded", str(folded)],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    lines = folded.read_text().splitlines()
    assert any(ln.startswith("kvm_mmu_page_fault;paging64_page_fault") for ln in lines)
    assert svg.read_text().startswith("<svg") and "kvm_mmu_page_fault" in svg.read_text()
    r = subprocess.run([sys.executable, "-m", "vmemsim", "vm", spec.format(1000), "--paging",
                        "tdp", "--flamegraph", str(svg)], capture_output=True, text=True)
    assert r.returncode != 0 and "--paging shadow" in r.stderr


def test_folded_stacks_parse_and_errors():
    from vmemsim.flamegraph import parse_folded, render_svg

    root = parse_folded("a;b 3\na;c 2\nd 5\n")
    assert root.total() == 10 and root.children["a"].total() == 5
    assert 'a (5 ns, 50.00%)' in render_svg("a;b 3\na;c 2\nd 5\n")
    with pytest.raises(VmemsimError, match="line 2"):
        parse_folded("a 1\nb x\n")


def test_large_pages_in_both_dimensions(tmp_path):
    # lat_mem_rd over 64 MiB, one load per 4 KiB page, twice, plus the program's 2 text
    # pages, 1 data page and 1 stack page. With 4 KiB pages the guest's first touches are
    # 16,384 + 4. With 2 MiB guest pages: the buffer is mapped top-down below mmap_base
    # (page 0x7_ffff_7fff, the last of its 2 MiB region), so its 16,384 pages span 33 2 MiB
    # regions; text and data share one, the stack has one: 35. With 2 MiB pages on both
    # sides the TLBs (32 + 1,536 2 MiB entries) hold them all, so walks are a handful,
    # against one per load otherwise.
    spec = "lmbench-like:bench=lat_mem_rd,size=64MiB,stride=4096,passes=2"
    small = vmemsim.run_vm(spec, paging="tdp")
    large = vmemsim.run_vm(spec, paging="tdp", guest_page="2m", host_page="2m")
    assert small.stats["first_touch"] == 16_384 + 4
    assert large.stats["first_touch"] == 35
    assert large.to_dict()["guest_page"] == "2m" and large.to_dict()["host_page"] == "2m"
    assert small.translate["walks"] > 16_384
    assert large.translate["walks"] < 200
    # A guest 2 MiB page on 4 KiB host pages is splintered: the TLB caches 4 KiB pieces.
    split = vmemsim.run_vm(spec, paging="tdp", guest_page="2m", host_page="4k")
    assert split.translate["splintered"] > 16_384
    with pytest.raises(VmemsimError, match="guest_page"):
        vmemsim.run_vm(spec, guest_page="3m")
    with pytest.raises(VmemsimError, match="guest_frames"):
        vmemsim.run_vm(spec, guest_page="2m", guest_frames=1000)
    # The CLI and a sweep take the same keys; machine.costs.* (the one cost table, as for
    # timed runs) reach the VM's costs.
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "vm", spec, "--guest-page", "2m", "--host-page",
         "2m", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["stats"]["first_touch"] == 35
    import textwrap

    from vmemsim.sweep import load_experiment, open_results, run_sweep

    p = tmp_path / "e.toml"
    p.write_text(textwrap.dedent(f"""
        [experiment]
        name = "pages"
        seeds = 1
        [machine]
        policy = "clock-lru"
        frames = "200%"
        [workload]
        guest = "{spec}"
        [machine.costs]
        clear_page_ns = 1000
        [sweep]
        "vm.guest_page" = ["4k", "2m"]
        """))
    s = run_sweep(load_experiment(p), tmp_path / "res", workers=1, progress="quiet")
    assert (s.ok, s.failed) == (2, 0), s.errors
    df = open_results(tmp_path / "res").table().set_index("vm.guest_page")
    # 35 first-touch faults of 2 MiB pages: 35 × (1 µs + 511 × 1 µs clearing).
    assert df.loc["2m", "time.guest_fault_ns"] == 35 * (1_000 + 511 * 1_000)
    assert df.loc["4k", "time.guest_fault_ns"] == (16_384 + 4) * 1_000
    # The table's old name in VM runs, [vm.costs], is read as [machine.costs], with a note.
    p.write_text(p.read_text().replace("[machine.costs]", "[vm.costs]"))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        runs = list(load_experiment(p).runs())
    assert [r.config["machine.costs.clear_page_ns"] for r in runs] == [1000, 1000]
    assert "[vm.costs] is deprecated; write machine.costs.clear_page_ns = 1000" in err.getvalue()


def test_several_vms_share_the_host():
    # Two VMs of stress-vm (16 MiB written twice; guest memory 200% of it, 8,204 frames plus
    # 96 page-table pages each): with a host of 150% of their memory each runs as it would
    # alone; with 40% (6,640 frames for the 8,236 pages they touch) the host reclaims guest
    # memory of both (host major faults, more EPT violations) and the merged result sums
    # the VMs.
    spec = "stress-vm:vcpus=1,bytes=16MiB,rounds=2"
    alone = [vmemsim.run_vm(spec, seed=s) for s in (3, 4)]
    both = vmemsim.run_vm(spec, seed=3, vms=2)
    assert len(both.per_vm) == 2
    for one, shared in zip(alone, both.per_vm):
        assert one.stats == shared["stats"]
        assert one.ept_violations == shared["ept_violations"]
    assert both.ept_violations == sum(r.ept_violations for r in alone)
    assert both.host_stats["major_faults"] == 0
    tight = vmemsim.run_vm(spec, seed=3, vms=2, host_frames="40%")
    assert tight.host_frames == 6_640
    assert tight.host_stats["major_faults"] > 0
    assert all(r["ept_violations"] > alone[0].ept_violations for r in tight.per_vm)
    with pytest.raises(VmemsimError, match="native"):
        vmemsim.run_vm(spec, paging="native", vms=2)
    r = subprocess.run([sys.executable, "-m", "vmemsim", "vm", spec, "--vms", "2", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["per_vm"]) == 2
    r = subprocess.run([sys.executable, "-m", "vmemsim", "vm", spec, spec],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.split("per VM")[1].splitlines()[2:]
    assert [ln.split()[0] for ln in rows] == ["0", "1"]
    # Different workloads, one VM each: guest memory is 200% of each one's footprint (4,096
    # and 8,192 pages of stress-vm's regions plus the worker's 6 image pages: 2 × 4,102 =
    # 8,204 and 2 × 8,198 = 16,396 frames).
    mixed = vmemsim.run_vm([spec, "stress-vm:vcpus=1,bytes=32MiB,rounds=1"])
    assert [v["frames"] for v in mixed.per_vm] == [8_204, 16_396]
    assert mixed.guest_frames == 8_204 + 16_396


def test_a_shipped_real_program_trace_runs_in_a_vm():
    # traces/sort-300k.vmt (GNU sort recorded by `vmemsim trace record`) as a guest process:
    # every distinct page of the trace is one guest first touch (guest memory 200% of the
    # trace's footprint, no reclaim), under native, nested and shadow paging alike.
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / "traces" / "sort-300k.vmt"
    info = vmemsim.trace_info(str(path))
    for paging in ("native", "tdp", "shadow"):
        r = vmemsim.run_vm(f"trace:path={path}", paging=paging)
        assert r.stats["first_touch"] == info.distinct_pages, paging
        assert r.time["compute_ns"] > 0
    with pytest.raises(VmemsimError, match="trace.path"):
        vmemsim.run_vm("trace:path=/nonexistent.vmt")


def test_vms_sharing_a_host_report_its_swap_device_once():
    # The host and its swap device are shared by the VMs: the merged result's host device is
    # the host's own, every page the host swapped out written once (it was each VM's view of
    # the one device summed: twice the host's pswpout with two VMs).
    r = vmemsim.run_vm("stress-vm:vcpus=1,bytes=8MiB,rounds=2", vms=2, host_frames="50%",
                       host_swap="ssd")
    assert r.host_device_stats["pages_written"] == r.host_stats["pswpout"] > 0
    assert r.host_vmstat["pswpout"] == r.host_stats["pswpout"]


def test_timed_swap_devices_for_the_host():
    # stress-vm with the host at 50% of guest memory swaps guest memory out and in. With a
    # timed device every page the host swapped out is a device write (pages written =
    # pswpout) and every host major fault one read request (with its readahead window),
    # and zram's compression (35 µs a page by default) is CPU time of whoever reclaimed the
    # page: the host's kswapd (its own thread) or a vCPU reclaiming directly (host fault
    # time); each at least 35 µs per page it reclaimed (every page reclaimed here is
    # anonymous, so written).
    spec = "stress-vm:vcpus=2,bytes=32MiB,rounds=2"
    r = vmemsim.run_vm(spec, host_frames="50%", host_swap="zram")
    d = r.host_device_stats
    assert r.host_stats["pswpout"] > 0
    assert d["pages_written"] == r.host_stats["pswpout"]
    assert d["read_requests"] == r.host_stats["major_faults"]
    h = r.host_stats
    assert h["pgsteal_kswapd"] > 0 and h["pgsteal_direct"] > 0
    assert h["pgsteal_kswapd"] + h["pgsteal_direct"] == h["pswpout"]
    assert r.to_dict()["host_kswapd_ns"] >= 35_000 * h["pgsteal_kswapd"]
    assert r.time["host_fault_ns"] >= 35_000 * h["pgsteal_direct"]
    assert r.device_stats is None
    with pytest.raises(VmemsimError, match="host_swap"):
        vmemsim.run_vm(spec, host_swap="floppy")


def test_vms_sharing_a_disk_queue_their_swap_requests_together():
    # Two VMs swap to one-channel NVMe devices: their own (each queues behind itself) or one
    # disk of the host (each queues behind both): the queueing and the run grow, each VM's
    # device_stats counts its own requests, and the merged counts are their sum.
    spec = "stress-vm:vcpus=1,bytes=4MiB,rounds=2"
    kw = dict(vms=2, guest_frames="60%", guest_swap="nvme:qd=1")
    apart = vmemsim.run_vm(spec, **kw)
    shared = vmemsim.run_vm(spec, shared_disk=True, **kw)
    delay = lambda d: d["queue_delay_total_ns"]  # noqa: E731
    assert delay(shared.device_stats) > delay(apart.device_stats)
    assert shared.runtime_ns > apart.runtime_ns
    for r in (apart, shared):
        assert r.device_stats["read_requests"] == sum(
            v["device_stats"]["read_requests"] for v in r.per_vm) > 0
        assert delay(r.device_stats) == sum(delay(v["device_stats"]) for v in r.per_vm)
    p = subprocess.run([sys.executable, "-m", "vmemsim", "vm", spec, "--vms", "2",
                        "--guest-frames", "60%", "--guest-swap", "zram", "--shared-disk"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "vm.shared_disk: zram is memory of each guest" in p.stderr


def test_vcpus_sharing_host_cpus_accrue_steal_time():
    # Two single-vCPU redis-like VMs at 60k requests/s each: alone on their CPUs they never
    # wait; on one host CPU they take turns, the waiting is steal time, and the tail latency
    # grows with it.
    spec = "redis-like:rps=60000,requests=20000"
    free = vmemsim.run_vm(spec, vms=2)
    shared = vmemsim.run_vm(spec, vms=2, host_cpus=1)
    assert free.time["steal_ns"] == 0
    assert shared.time["steal_ns"] > 0
    assert shared.latency["all"]["p99"] > free.latency["all"]["p99"]
    assert vmemsim.run_vm(spec, vms=2, host_cpus=2).time["steal_ns"] == 0
    with pytest.raises(VmemsimError, match="host_cpus"):
        vmemsim.run_vm(spec, host_cpus=0)


def test_a_balloon_at_boot_through_the_api_and_the_cli():
    # stress-vm of 4 MiB: 1,030 pages, guest 200% = 2,060 frames. A balloon of 2 MiB at
    # boot = 512 pages: 2 rounds of 256 before the program touches anything (so no host
    # page backed them: none freed). Each round: 256 × 250 ns + a 10 µs kick of guest time,
    # 256 × 1.5 µs of QEMU's.
    spec = "stress-vm:vcpus=1,bytes=4MiB,rounds=1"
    r = vmemsim.run_vm(spec, balloon=True, balloon_size_mib=2)
    b = r.balloon
    assert (b["target_pages"], b["actual_pages"], b["inflated"], b["rounds"]) == (512, 512,
                                                                                 512, 2)
    assert (b["out_of_puff"], b["deflated"], b["oom_killed"]) == (0, 0, False)
    assert (b["guest_ns"], b["host_ns"], b["host_frames_released"]) == (148_000, 768_000, 0)
    assert r.time["balloon_ns"] == 148_000 and r.mom is None
    assert vmemsim.run_vm(spec).balloon is None
    out = subprocess.run(
        [sys.executable, "-m", "vmemsim", "vm", spec, "--balloon", "--balloon-size-mib", "2",
         "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(json.dumps(r.to_dict()))
    out = subprocess.run(
        [sys.executable, "-m", "vmemsim", "vm", spec, "--balloon", "--balloon-size-mib", "2"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "balloon (pages)" in out.stdout
    from vmemsim.sweep.spec import SCHEMA

    assert SCHEMA["vm.balloon"].default is False and SCHEMA["vm.deflate_on_oom"].default is False


def test_bad_balloon_settings_are_errors_naming_the_key():
    spec = "stress-vm:vcpus=1,bytes=4MiB,rounds=1"
    with pytest.raises(VmemsimError, match="balloon_costs.kick_nss: unknown field"):
        vmemsim.run_vm(spec, balloon=True, balloon_costs={"kick_nss": 5})
    with pytest.raises(VmemsimError, match="mom_config.history: at least one sample"):
        vmemsim.run_vm(spec, balloon=True, mom=True, mom_config={"history": 0})
    # 2,060 guest pages are 8 MiB and a bit: 9 MiB is more
    with pytest.raises(VmemsimError, match="balloon_size_mib: 9 MiB is more than the guest"):
        vmemsim.run_vm(spec, balloon=True, balloon_size_mib=9)
    with pytest.raises(VmemsimError, match="deflate_on_oom: needs a balloon device"):
        vmemsim.run_vm(spec, deflate_on_oom=True)
    with pytest.raises(VmemsimError, match="balloon: "):
        vmemsim.run_vm(spec, balloon=True, paging="native")
    with pytest.raises(VmemsimError, match="balloon: expected True or False"):
        vmemsim.run_vm(spec, balloon="yes")


def _vm_sweep(tmp_path, name, rest, index, runs):
    """The table of a sweep of VM runs of a 4 MiB stress-vm guest (clock-lru, guest memory
    200%) with the TOML ``rest`` ([vm], [sweep]), indexed by ``index``, once all ``runs``
    have run."""
    import textwrap

    from vmemsim.sweep import load_experiment, open_results, run_sweep

    p = tmp_path / f"{name}.toml"
    p.write_text(textwrap.dedent(f"""
        [experiment]
        name = "{name}"
        seeds = 1
        [machine]
        policy = "clock-lru"
        frames = "200%"
        [workload]
        guest = "stress-vm:vcpus=1,bytes=4MiB,rounds=1"
        """) + textwrap.dedent(rest))
    s = run_sweep(load_experiment(p), tmp_path / name, workers=1, progress="quiet")
    assert (s.ok, s.failed) == (runs, 0), s.errors
    return open_results(tmp_path / name).table().set_index(index)


def test_balloon_keys_in_a_sweep(tmp_path):
    df = _vm_sweep(tmp_path, "balloon", """
        [vm]
        balloon = true
        [sweep]
        "vm.balloon_size_mib" = [1, 2]
        """, "vm.balloon_size_mib", 2)
    # 1 MiB = 256 pages (1 round), 2 MiB = 512 (2 rounds)
    assert list(df["balloon.actual_pages"]) == [256, 512]
    assert list(df["balloon.rounds"]) == [1, 2]


def test_balloon_costs_and_moms_rules_from_the_cli_and_a_sweep(tmp_path):
    # The 2 MiB boot balloon above with a 20 µs kick: 2 × (256 × 250 + 20,000) = 168,000 ns of
    # guest time; QEMU's 512 × 1,500 unchanged.
    spec = "stress-vm:vcpus=1,bytes=4MiB,rounds=1"
    out = subprocess.run(
        [sys.executable, "-m", "vmemsim", "vm", spec, "--balloon", "--balloon-size-mib", "2",
         "--balloon-cost", "kick_ns=20000", "--json"], capture_output=True, text=True,
        timeout=120)
    assert out.returncode == 0, out.stderr
    b = json.loads(out.stdout)["balloon"]
    assert (b["guest_ns"], b["host_ns"]) == (168_000, 768_000)
    bad = subprocess.run(
        [sys.executable, "-m", "vmemsim", "vm", spec, "--balloon", "--mom",
         "--mom-config", "history=0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "mom_config.history" in bad.stderr
    # A sweep's vm.balloon_costs.KEY: the same run per value.
    df = _vm_sweep(tmp_path, "balloon-costs", """
        [vm]
        balloon = true
        balloon_size_mib = 2
        [sweep]
        "vm.balloon_costs.kick_ns" = [10000, 20000]
        """, "vm.balloon_costs.kick_ns", 2)
    assert list(df["balloon.guest_ns"]) == [148_000, 168_000]


def test_swap_pathologies_are_counted_per_vm():
    # Two guests of 600 frames read a file three times through their page caches, on a
    # host of 600 frames (its page cache of the images included): the first guest's 4 MiB
    # file is more than its memory, so each pass reads it again, the second's 2 MiB stays
    # cached after its first pass. The host swaps out clean page-cache pages of the images
    # (silent swap writes), some in the slot after the previous block's, and swaps some of
    # the first guest's back in under QEMU's DMA of a read into a frame the guest reuses
    # (stale reads); the second guest reads each block once, into frames the host never
    # backed before: no stale read. Every VM's counters sum to the run's; a VM without file
    # I/O and a host with room has none.
    keys = {"silent_swap_writes", "silent_swap_writes_in_sequence", "stale_swap_reads",
            "false_swap_reads", "host_swap_readahead", "host_swap_readahead_hits",
            "hypervisor_code_faults", "mapper_discards", "mapper_refaults", "mapper_cow_breaks",
            "mapper_write_maps", "qemu_write_swap_reads", "preventer_emulated",
            "preventer_reads_avoided", "preventer_merges"}
    r = vmemsim.run_vm(["dd-like:bytes=4MiB,bs=4KiB,passes=3",
                        "dd-like:bytes=2MiB,bs=4KiB,passes=3"],
                       guest_frames=600, host_frames=600, sample_every_ns=1_000_000)
    p = r.swap_pathologies
    assert set(p) == keys
    assert 0 < p["silent_swap_writes_in_sequence"] < p["silent_swap_writes"]
    assert p["stale_swap_reads"] > 0
    for k in keys:
        assert p[k] == sum(v["swap_pathologies"][k] for v in r.per_vm)
    assert r.per_vm[1]["swap_pathologies"]["stale_swap_reads"] == 0
    # Over time: each sample has each VM's counts so far, never falling, up to the totals.
    silent = [s["caches"][0]["swap_pathologies"]["silent_swap_writes"] for s in r.series]
    assert silent == sorted(silent) and 0 < silent[-1] <= p["silent_swap_writes"]
    quiet = vmemsim.run_vm("stress-vm:bytes=1MiB")
    assert quiet.swap_pathologies == dict.fromkeys(keys, 0)
    # QEMU's code as 64 named host pages (false page anonymity): the host's reclaim takes
    # them before the guests' anonymous memory, and QEMU's next request faults them back;
    # without them (the default) there is no such fault.
    assert p["hypervisor_code_faults"] == 0
    text = vmemsim.run_vm("dd-like:bytes=4MiB,bs=4KiB,passes=3", guest_frames=600,
                          host_frames=500, cache_mode="none", qemu_text_pages=64)
    assert text.swap_pathologies["hypervisor_code_faults"] > 0
    with pytest.raises(VmemsimError, match="qemu_text_pages"):
        vmemsim.run_vm("stress-vm:bytes=1MiB", qemu_text_pages=-1)


def test_the_swap_mapper_discards_what_the_host_swapped_silently():
    # The first guest of the run above, alone (its file re-read three times through a page
    # cache larger than the host's room for it): without the Mapper the host writes clean
    # cached blocks to swap; with it (VSwapper §4.1) it drops those pages instead and reads
    # them back from the image. Off is the default, and off counts none of the Mapper's.
    args = dict(guest_frames=600, host_frames=450, cache_mode="none")
    off = vmemsim.run_vm("dd-like:bytes=4MiB,bs=4KiB,passes=3", **args)
    on = vmemsim.run_vm("dd-like:bytes=4MiB,bs=4KiB,passes=3", vswapper="mapper", **args)
    p, q = off.swap_pathologies, on.swap_pathologies
    assert p["silent_swap_writes"] > 0
    assert (p["mapper_discards"], p["mapper_refaults"], p["mapper_cow_breaks"]) == (0, 0, 0)
    assert q["silent_swap_writes"] == 0 and q["mapper_discards"] > 0
    assert on.config["vswapper"] == "mapper"
    with pytest.raises(VmemsimError, match="vswapper"):
        vmemsim.run_vm("stress-vm:bytes=1MiB", vswapper="preventor")


def test_the_false_reads_preventer_reads_no_page_the_guest_overwrites():
    # stress-vm rewrites its buffer on a host with 60% of the guest's memory: the host
    # swaps guest frames out, and the guest's `clear_page` of a frame it reuses has the host
    # read the old content first (false swap reads). With the Preventer (VSwapper §4.2)
    # each such fill is emulated whole: no false read, the reads avoided instead, and fewer
    # host swap reads; the Mapper alone changes nothing here (no disk I/O), and `vswapper`
    # (both) is the Preventer's run.
    args = dict(guest_frames="150%", host_frames="60%")
    runs = {vs: vmemsim.run_vm("stress-vm:bytes=4MiB,rounds=3", vswapper=vs, **args)
            for vs in ("off", "mapper", "preventer", "vswapper")}
    off, prev = runs["off"].swap_pathologies, runs["preventer"].swap_pathologies
    assert off["false_swap_reads"] > 0
    assert (off["preventer_emulated"], off["preventer_reads_avoided"]) == (0, 0)
    assert prev["false_swap_reads"] == 0
    assert prev["preventer_reads_avoided"] > 0
    assert prev["preventer_emulated"] == prev["preventer_reads_avoided"] + prev["preventer_merges"]
    assert runs["preventer"].host_stats["pswpin"] < runs["off"].host_stats["pswpin"]
    assert runs["mapper"].swap_pathologies == off
    assert runs["vswapper"].swap_pathologies == prev
    for vs, r in runs.items():
        assert r.config["vswapper"] == vs
    # The same under shadow paging (the host fault is KVM's, the guest's fill the same).
    shadow = {vs: vmemsim.run_vm("stress-vm:bytes=4MiB,rounds=3", vswapper=vs,
                                 paging="shadow", **args).swap_pathologies
              for vs in ("off", "preventer")}
    assert shadow["off"]["false_swap_reads"] > 0
    assert shadow["preventer"]["false_swap_reads"] == 0
    assert shadow["preventer"]["preventer_reads_avoided"] > 0
    # A bad name is refused naming the four; large host pages are refused too.
    with pytest.raises(VmemsimError, match="off, mapper, preventer, vswapper"):
        vmemsim.run_vm("stress-vm:bytes=1MiB", vswapper="both")
    with pytest.raises(VmemsimError, match="host_page = 4k"):
        vmemsim.run_vm("stress-vm:bytes=1MiB", vswapper="preventer", host_page="2m")


def test_the_cli_runs_the_preventer_and_names_the_settings():
    cmd = [sys.executable, "-m", "vmemsim", "vm", "stress-vm:bytes=4MiB,rounds=3",
           "--guest-frames", "150%", "--host-frames", "60%"]
    p = subprocess.run(cmd + ["--vswapper", "vswapper", "--json"], capture_output=True,
                       text=True, check=True)
    d = json.loads(p.stdout)
    assert d["config"]["vswapper"] == "vswapper"
    q = d["swap_pathologies"]
    assert q["false_swap_reads"] == 0 and q["preventer_reads_avoided"] > 0
    text = subprocess.run(cmd + ["--vswapper", "preventer"], capture_output=True, text=True,
                          check=True).stdout
    assert "preventer_reads_avoided" in text
    bad = subprocess.run(cmd + ["--vswapper", "prevent"], capture_output=True, text=True)
    assert bad.returncode != 0
    assert "'off', 'mapper', 'preventer', 'vswapper'" in bad.stderr


def test_the_sweep_key_vm_vswapper_takes_the_four_settings():
    from vmemsim.sweep import runner
    from vmemsim.sweep.spec import SCHEMA

    key = SCHEMA["vm.vswapper"]
    assert key.default == "off"
    defaults = {k: v.default for k, v in SCHEMA.items()}
    for vs in ("off", "mapper", "preventer", "vswapper"):
        assert key.check(vs, "vm.vswapper") == vs
        cfg = {**defaults, "workload.guest": "stress-vm:bytes=1MiB", "vm.vswapper": vs}
        assert runner.vm_kwargs(cfg, 1)["vswapper"] == vs
    with pytest.raises(VmemsimError, match="off, mapper, preventer, vswapper"):
        key.check("prevent", "vm.vswapper")


def test_vswappers_pbzip2_and_staggered_metis_guests():
    # pbzip2 (§5.1): 8 consumers' bzip2 -9 working sets of 1,868 pages each (14,944) do not
    # fit a guest of 12,000 frames: the guest swaps. Its CPU is 100 µs a KiB of each block,
    # rounded up: 18 blocks of 900,000 bytes (879 KiB) and one of 577,216 (564 KiB).
    r = vmemsim.run_vm("pbzip2-like:bytes=16MiB", guest_frames=12000, host_frames="150%")
    assert r.workload.startswith("pbzip2-like:bytes=16MiB,bs=900000,threads=8,vcpus=1,")
    assert len(r.vcpu_ns) == 1
    assert r.time["compute_ns"] == (18 * 879 + 564) * 100_000
    assert r.stats["major_faults"] > 0
    # Metis word count (§5.2): three guests start 10 ms apart, with room for all of them.
    # Each idles until its start (not CPU time) and then runs the same benchmark (same
    # seed), so each VM's runtime less its start is the same.
    specs = [f"mapreduce-like:bytes=2MiB,keys=2000,table_bytes=8MiB,bs=64KiB,"
             f"start_ns={i * 10_000_000},seed=1" for i in range(3)]
    r = vmemsim.run_vm(specs, guest_frames="150%", host_frames="150%")
    own = [v["runtime_ns"] - i * 10_000_000 for i, v in enumerate(r.per_vm)]
    assert own[0] == own[1] == own[2] > 0
    assert [v["time"]["compute_ns"] for v in r.per_vm] == [r.per_vm[0]["time"]["compute_ns"]] * 3
    assert r.per_vm[2]["time"]["idle_ns"] >= 2 * 20_000_000
    assert r.runtime_ns == r.per_vm[2]["runtime_ns"]

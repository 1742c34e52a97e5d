"""Timed runs from Python: vmemsim.run, `vmemsim run`, and timed runs in sweeps."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import vmemsim
from vmemsim import VmemsimError
from vmemsim.sweep import load_experiment, open_results, run_sweep

YCSB = "ycsb-a:footprint=4MiB,requests=4000"


def test_run_counters_agree_and_repeat():
    r = vmemsim.run(YCSB, policy="clock-lru", frames="50%", device="nvme", seed=3)
    v = r.vmstat
    assert r.runtime_ns > 0 and r.stats["accesses"] > 0
    # pgfault is every fault the kernel takes: the misses plus the write-protect faults,
    # each of them a write.
    assert r.faults <= v["pgfault"] <= r.faults + r.stats["writes"]
    assert v["pgmajfault"] == r.major_faults
    assert v["pgmajfault"] <= v["pswpin"]
    assert v["pgsteal_kswapd"] <= v["pgscan_kswapd"]
    assert v["pgsteal_direct"] <= v["pgscan_direct"]
    # frames = 50% of the footprint
    assert abs(r.frames - r.footprint_pages / 2) <= 1
    # Requests: the load phase inserts, the run phase reads and updates about half each.
    lat = r.latency
    assert lat["read"]["count"] + lat["update"]["count"] == 4000
    assert abs(lat["update"]["count"] / 4000 - 0.5) < 0.05
    assert lat["all"]["p50"] <= lat["all"]["p99"] <= lat["all"]["p9999"] <= lat["all"]["max"]
    assert r == vmemsim.run(YCSB, policy="clock-lru", frames="50%", device="nvme", seed=3)
    other = vmemsim.run(YCSB, policy="clock-lru", frames="50%", device="nvme", seed=4)
    assert other.runtime_ns != r.runtime_ns


def test_slower_swap_takes_longer():
    fast = vmemsim.run(YCSB, policy="mglru", frames="50%", device="remote")
    slow = vmemsim.run(YCSB, policy="mglru", frames="50%", device="ssd")
    assert slow.runtime_ns > fast.runtime_ns
    assert slow.cpu["io_wait_ns"] > fast.cpu["io_wait_ns"]


def test_swap_on_a_disk_waits_for_seeks_and_turns():
    # A 7,200 rpm disk serves one request at a time and seeks between them: YCSB's random
    # swap-ins wait far longer than on the SSD with its 32 channels, and the device was busy
    # for no more than the run (one head). Its slots come from the rotational allocator.
    kw = dict(policy="mglru", frames="50%", seed=1, cpus=2)
    ssd = vmemsim.run(YCSB, device="ssd", **kw)
    hdd = vmemsim.run(YCSB, device="hdd:size=1GiB", **kw)
    d = hdd.device_stats
    assert d["read_requests"] > 0 and d["write_requests"] > 0
    assert d["busy_ns"] == d["service_total_ns"] <= hdd.runtime_ns + 20_000_000
    assert hdd.runtime_ns > 2 * ssd.runtime_ns
    # Every request took at least a page's transfer at 150 MB/s (27.3 µs) and a random one
    # a seek of at least 1 ms and half a turn (4.17 ms): the mean is well above 1 ms.
    assert d["service_total_ns"] / (d["read_requests"] + d["write_requests"]) > 1_000_000
    with pytest.raises(VmemsimError, match="hdd.size"):
        vmemsim.run(YCSB, device="hdd:size=12XB", **kw)


@pytest.mark.parametrize(
    "kw, needle",
    [
        (dict(costs={"scan_ns": 5}), "costs.scan_ns: unknown cost (did you mean 'scan_page_ns'?)"),
        (dict(cpus=0), "cpus"),
        (dict(device="floppy"), "floppy"),
        (dict(workload="ycsb-z"), "unknown workload 'ycsb-z'"),
        (dict(workload="ycsb-a:footprnt=1MiB"), "footprnt"),
        (dict(policy="lruu"), "unknown policy"),
    ],
)
def test_bad_arguments_name_what_is_wrong(kw, needle):
    args = dict(workload=YCSB, policy="mglru", frames="50%")
    args.update(kw)
    with pytest.raises(VmemsimError) as e:
        vmemsim.run(**args)
    assert needle in str(e.value)


def test_cli_run_zram_charged_to_ram_runs_out_of_memory_on_random_values():
    # YCSB's values are random bytes: zram stores each swapped page whole (ZRAM_HUGE), so a
    # pool charged to the machine frees nothing and the kernel would OOM-kill; the error
    # says so and names the way out.
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "run", YCSB, "--policy", "clock-lru", "--device",
         "zram", "--frames", "50%", "--cpus", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode != 0
    assert "out of memory" in r.stderr and "zram" in r.stderr and "--cgroup" in r.stderr
    # the experiment-file key it names is the one that exists
    assert "machine.cgroup = true" in r.stderr and "swap_charged" not in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_run_json_and_table():
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "run", YCSB, "--policy", "mglru", "--device", "zram",
         "--cgroup", "--cpus", "2", "--cost", "scan_page_ns=500", "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["policy"] == "mglru" and j["cpus"] == 2 and j["device"].startswith("zram")
    assert j["vmstat"]["pgfault"] > 0 and j["runtime_s"] > 0
    r = subprocess.run([sys.executable, "-m", "vmemsim", "run", YCSB], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "runtime" in r.stdout and "pgmajfault" in r.stdout and "p99.99" in r.stdout
    r = subprocess.run([sys.executable, "-m", "vmemsim", "run", YCSB, "--cost", "x=1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("vmemsim: error: costs.x")


def test_timed_runs_in_a_sweep(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text(textwrap.dedent(f"""
        [experiment]
        name = "timed"
        seeds = 2
        [machine]
        frames = "50%"
        cpus = 2
        cgroup = true
        [workload]
        model = "{YCSB}"
        [sweep]
        "machine.policy" = ["clock-lru", "mglru"]
        "machine.swap" = ["ssd", "zram"]
        """))
    s = run_sweep(load_experiment(p), tmp_path / "res", workers=2, progress="quiet")
    assert (s.ok, s.failed) == (8, 0), s.errors
    res = open_results(tmp_path / "res")
    df = res.table()
    assert set(df["machine.swap"]) == {"ssd", "zram"}
    for col in ("runtime_s", "pgmajfault", "cpu.kswapd_ns", "latency.all.p9999_ns"):
        assert col in df.columns and df[col].notna().all()
    row = df.iloc[0]
    direct = vmemsim.run(YCSB, policy=row["machine.policy"], frames="50%", cpus=2,
                         device=row["machine.swap"], seed=int(row["seed"]),
                         charge_device_ram=False)
    assert row["runtime_ns"] == direct.runtime_ns
    lat = res.side(row["run_id"], "latency")
    assert set(lat["kind"]) >= {"read", "update", "all"}
    assert lat[lat["kind"] == "all"]["count"].sum() == direct.latency["all"]["count"]


def test_run_takes_the_names_of_the_cli_and_the_experiment_keys():
    # machine.swap / --swap is run(swap=...) as well as run(device=...)
    kw = dict(policy="clock-lru", frames="50%", seed=2, cpus=2)
    assert vmemsim.run(YCSB, swap="nvme", **kw) == vmemsim.run(YCSB, device="nvme", **kw)
    with pytest.raises(VmemsimError, match="swap and device are the same setting"):
        vmemsim.run(YCSB, swap="nvme", device="remote", **kw)
    # run.step_ns / run(step_ns=...) is --step-ns
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "run", YCSB, "--policy", "clock-lru", "--frames",
         "50%", "--seed", "2", "--cpus", "2", "--device", "nvme", "--step-ns", "50000",
         "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    fine = vmemsim.run(YCSB, device="nvme", **kw)
    coarse = vmemsim.run(YCSB, device="nvme", step_ns=50000, **kw)
    assert json.loads(r.stdout)["runtime_ns"] == coarse.runtime_ns != fine.runtime_ns


def _zram_experiment(tmp_path, machine_extra: str, file: str = "e.toml"):
    p = tmp_path / file
    p.write_text(textwrap.dedent(f"""
        [experiment]
        name = "cg"
        seeds = [1]
        [machine]
        policy = "clock-lru"
        frames = "50%"
        cpus = 2
        swap = "zram"
        {machine_extra}
        [workload]
        model = "{YCSB}"
        """))
    return p


def test_machine_cgroup_key_is_the_cli_cgroup_flag(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "run", YCSB, "--policy", "clock-lru", "--device",
         "zram", "--frames", "50%", "--cpus", "2", "--seed", "1", "--cgroup", "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    exp = load_experiment(_zram_experiment(tmp_path, "cgroup = true"))
    assert exp.base["machine.cgroup"] is True and "machine.swap_charged" not in exp.base
    s = run_sweep(exp, tmp_path / "res", workers=1, progress="quiet")
    assert (s.ok, s.failed) == (1, 0), s.errors
    row = open_results(tmp_path / "res").table().iloc[0]
    assert bool(row["machine.cgroup"]) is True
    assert row["runtime_ns"] == cli["runtime_ns"]
    assert row["pgmajfault"] == cli["vmstat"]["pgmajfault"]
    api = vmemsim.run(YCSB, policy="clock-lru", frames="50%", cpus=2, device="zram", seed=1,
                      cgroup=True)
    assert row["runtime_ns"] == api.runtime_ns
    # the result records say so under the same name
    assert cli["cgroup"] is True and api.cgroup is True and api.to_dict()["cgroup"] is True
    assert vmemsim.run(YCSB, policy="clock-lru", frames="50%", cpus=2, device="nvme",
                       seed=1).to_dict()["cgroup"] is False
    # charged to the machine (the default, cgroup = false), ycsb's incompressible pages
    # leave zram no memory: the run fails, so the key does reach the model
    s = run_sweep(load_experiment(_zram_experiment(tmp_path, "", "charged.toml")),
                  tmp_path / "res2", workers=1, progress="quiet")
    assert (s.ok, s.failed) == (0, 1) and "zram's compressed pool" in s.errors[0][1]


def test_machine_swap_charged_is_a_deprecated_alias(tmp_path, capsys):
    new = load_experiment(_zram_experiment(tmp_path, "cgroup = true"))
    capsys.readouterr()
    old = load_experiment(_zram_experiment(tmp_path, "swap_charged = false", "old.toml"))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "machine.swap_charged is deprecated" in err
    assert "machine.cgroup = true" in err
    # the same configuration, so the same run
    assert old.base == new.base
    assert [r.run_id for r in old.runs()] == [r.run_id for r in new.runs()]
    # swept under its old name: values converted
    swept = load_experiment(_zram_experiment(
        tmp_path, '[sweep]\n"machine.swap_charged" = [true, false]', "sw.toml"))
    assert [r.config["machine.cgroup"] for r in swept.runs()] == [False, True]
    # both names at once is one setting given twice
    with pytest.raises(VmemsimError, match="machine.swap_charged and machine.cgroup"):
        load_experiment(_zram_experiment(tmp_path, "cgroup = true\nswap_charged = false",
                                         "both.toml"))


def test_misspelt_cgroup_key_gets_did_you_mean(tmp_path):
    with pytest.raises(VmemsimError, match=r"unknown key 'machine.cgroups' \(did you mean "
                                           r"'machine.cgroup'\?\)"):
        load_experiment(_zram_experiment(tmp_path, "cgroups = true"))
    # a misspelt old name is pointed at the new one
    with pytest.raises(VmemsimError, match=r"unknown key 'machine.swap_chargd' \(did you mean "
                                           r"'machine.cgroup'\?\)"):
        load_experiment(_zram_experiment(tmp_path, "swap_chargd = false", "old.toml"))


def test_an_experiment_needs_a_trace_a_model_or_a_guest(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text('[experiment]\nname = "x"\n[machine]\nframes = 10\n')
    with pytest.raises(VmemsimError,
                       match=r"workload.trace \(a replay\), workload.model .* or workload.guest"):
        load_experiment(p)


def test_cgroup_mode_keeps_the_zram_pool_out_of_the_frames():
    # ycsb's slabs hold incompressible values: charged to the machine, zram's pool takes a
    # frame for each page it frees, so reclaim cannot get ahead and the run ends out of
    # memory; in a memory cgroup the pool is not charged (zsmalloc's pages are not) and the
    # run completes with no failed writes.
    kw = dict(policy="clock-lru", frames="50%", device="zram", seed=1)
    with pytest.raises(VmemsimError, match="zram's compressed pool"):
        vmemsim.run(YCSB, **kw)
    cgroup = vmemsim.run(YCSB, charge_device_ram=False, **kw)
    assert cgroup.device_frames_peak > 0
    assert cgroup.stats["swap_write_errors"] == 0


def test_latency_figure_from_the_side_files(tmp_path):
    import math

    p = tmp_path / "e.toml"
    p.write_text(textwrap.dedent(f"""
        [experiment]
        name = "lat"
        seeds = 2
        [machine]
        frames = "50%"
        cpus = 2
        swap = "nvme"
        [workload]
        model = "{YCSB}"
        [sweep]
        "machine.policy" = ["clock-lru", "mglru"]
        [[report.figures]]
        name = "tail"
        kind = "latency"
        metric = "read"
        group = "machine.policy"
        [[report.figures]]
        name = "bad"
        kind = "latency"
        metric = "delete"
        """))
    run_sweep(load_experiment(p), tmp_path / "res", workers=2, progress="quiet")
    # A request kind no run recorded is an error naming it.
    r = subprocess.run([sys.executable, "-m", "vmemsim", "report", str(tmp_path / "res"),
                        "--out", str(tmp_path / "rep")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "no run recorded 'delete'" in r.stderr
    good = p.read_text().split("[[report.figures]]\nname = \"bad\"")[0]
    p.write_text(good)
    r = subprocess.run([sys.executable, "-m", "vmemsim", "report", str(tmp_path / "res"),
                        "--out", str(tmp_path / "rep"), "--experiment", str(p)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rep" / "tail.png").read_bytes()[:4] == b"\x89PNG"
    html = (tmp_path / "rep" / "index.html").read_text()
    # p99 of clock-lru's reads, both seeds merged, by nearest rank, computed here.
    res = open_results(tmp_path / "res")
    df = res.table()
    counts = {}
    for rid in df[df["machine.policy"] == "clock-lru"]["run_id"]:
        h = res.side(rid, "latency")
        for v, c in zip(h[h["kind"] == "read"]["value_ns"], h[h["kind"] == "read"]["count"]):
            counts[int(v)] = counts.get(int(v), 0) + int(c)
    total = sum(counts.values())
    want, seen = math.ceil(0.99 * total), 0
    for v in sorted(counts):
        seen += counts[v]
        if seen >= want:
            p99 = v
            break
    assert f">{p99:,}<" in html and f">{total:,}<" in html  # thousands separated


def test_timed_keys_in_a_replay_are_an_error_not_ignored(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text('[experiment]\nname = "r"\n[machine]\nframes = 10\ncpus = 12\n'
                 '[workload]\ntrace = "gen:scan:pages=50"\n')
    s = run_sweep(load_experiment(p), tmp_path / "res", progress="quiet")
    assert s.failed == 1 and "machine.cpus: only timed runs" in s.errors[0][1]

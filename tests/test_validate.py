"""`vmemsim validate`: parsing a stored serial log, the cpio writer, the result cache, the
comparison, and one real kernel boot end to end (skipped only where qemu cannot run)."""

import hashlib
import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import vmemsim
from vmemsim.api import VmemsimError
from vmemsim.validate import compare as C
from vmemsim.validate import kernel as K
from vmemsim.validate import workload as W

DATA = Path(__file__).parent / "data" / "validate"
LOG = DATA / "serial-mglru-zram.log"
#: The stored log's workload and settings (a 96 MiB guest, Linux 6.1.0-56, MG-LRU, zram).
LOG_SPEC = "gen:zipf:pages=12000,alpha=0.9,n=30000"
LOG_SETTINGS = K.Settings(mem_mib=96, swap="zram", lru="mglru", page_cluster=0)


def test_parse_log_reads_the_phase_deltas_and_the_zones():
    d = K.parse_log(LOG.read_text())
    # Values read off the log by hand: vmstat before/after the phase.
    assert d["vmstat_before"]["nr_free_pages"] == 4340
    assert d["vmstat"]["pgmajfault"] == 1497 - 0
    assert d["vmstat"]["pswpout"] == 5387
    assert d["vmstat"]["pgscan_kswapd"] == 4345 and d["vmstat"]["pgscan_direct"] == 1675
    assert d["vmstat"]["nr_free_pages"] == 1054 - 4340
    # Zones with managed pages only: DMA and DMA32, with their watermarks.
    assert set(d["zones"]) == {"DMA", "DMA32"}
    assert (d["zones"]["DMA"]["min"], d["zones"]["DMA"]["low"], d["zones"]["DMA"]["high"]) == (80, 100, 120)
    assert (d["zones"]["DMA32"]["min"], d["zones"]["DMA32"]["high"], d["zones"]["DMA32"]["managed"]) == (109, 163, 7943)
    assert d["meminfo_before"]["MemFree"] == 17360
    assert d["mm_stat"]["orig_data_size"] == 253952 and d["mm_stat"]["compr_data_size"] == 13043
    assert d["release"] == "6.1.0-56-amd64" and d["lru_gen"] == "0x0007"
    assert d["accesses"] == 30000
    # The guest drew exactly the accesses vmemsim replays.
    w = W.make_workload(LOG_SPEC, "rw", 3)
    assert d["checksum"] == W.checksum(*w.sequence())


def test_parse_log_errors_name_what_went_wrong():
    text = LOG.read_text()
    with pytest.raises(VmemsimError, match="did not finish"):
        K.parse_log(text.split("@@vmwl")[0])
    with pytest.raises(VmemsimError, match="setup failed: swapon"):
        K.parse_log("@@error swapon\n" + text)
    with pytest.raises(VmemsimError, match="status 2"):
        K.parse_log(text.replace("@@rc 0", "@@rc 2"))


def test_simulator_gets_the_kernels_free_memory_and_summed_watermarks():
    d = K.parse_log(LOG.read_text())
    run = K.KernelRun(kernel="k", release="r", accel="tcg", settings={}, workload="w", **{
        k: d[k] for k in ("vmstat", "vmstat_before", "meminfo_before", "zones", "mm_stat",
                          "accesses", "checksum")})
    inp = C.simulator_inputs([run])
    assert inp["frames"] == 4340
    assert inp["watermarks"] == (80 + 109, 100 + 136, 120 + 163)
    # The log's zoneinfo: no boost in either zone; the per-CPU lists hold 74 and 61 pages.
    assert [z["boost"] for z in run.zones.values()] == [0, 0]
    assert [z["pcp"] for z in run.zones.values()] == [74, 61]


def test_watermark_boost_is_left_out_of_the_simulators_watermarks():
    # A repeat whose DMA32 zone was boosted by 512 pages at the snapshot prints min/low/high
    # 512 higher (min_wmark_pages adds zone->watermark_boost). Recorded, the boost is taken
    # off; not recorded (older runs), the smallest sum over the repeats is the zone's own.
    d = K.parse_log(LOG.read_text())
    fields = ("vmstat", "vmstat_before", "meminfo_before", "zones", "mm_stat", "accesses",
              "checksum")

    def run_with(zones):
        return K.KernelRun(kernel="k", release="r", accel="tcg", settings={}, workload="w",
                           **{**{k: d[k] for k in fields}, "zones": zones})

    boosted = {n: dict(z) for n, z in d["zones"].items()}
    for k in ("min", "low", "high"):
        boosted["DMA32"][k] += 512
    boosted["DMA32"]["boost"] = 512
    plain = (80 + 109, 100 + 136, 120 + 163)
    assert C.simulator_inputs([run_with(boosted)])["watermarks"] == plain
    unrecorded = {n: {k: v for k, v in z.items() if k != "boost"} for n, z in boosted.items()}
    assert C.simulator_inputs([run_with(unrecorded), run_with(d["zones"])])["watermarks"] \
        == plain


def test_each_kernel_swap_replays_on_its_model_of_the_device():
    # The guest sees virtio-blk as rotational (cluster readahead, the rotational allocator):
    # the replay gets a rotational disk of the kernel's SwapTotal plus the header page;
    # `ssd` declares it non-rotational before swapon, vmemsim's default `disk`. Both are
    # QEMU's virtio-blk, whose requests hold up to 254 pages (seg_max: the virtqueue's 256
    # entries less 2), the limit of the plug's merging.
    run = _stored_run()
    run.meminfo_before["SwapTotal"] = 131068  # kB: 32,767 usable slots
    s = K.Settings(mem_mib=96, swap="disk")
    assert C.swap_device(s, [run]) == "hdd:size=131072KiB,max_pages=254"
    assert C.swap_device(K.Settings(mem_mib=96, swap="ssd"), [run]) == "disk:max_pages=254"
    assert C.swap_device(K.Settings(mem_mib=96, swap="zram"), [run]) == "zram"
    assert "echo 0 > /sys/block/vda/queue/rotational" in K.SWAP_SETUP["ssd"]
    assert K.SWAP_MODULES["ssd"] == K.SWAP_MODULES["disk"]


def _stored_run():
    d = K.parse_log(LOG.read_text())
    d.pop("release")
    d.pop("lru_gen")
    return K.KernelRun(kernel="linux-image-test 1", release="6.1.0-56-amd64", accel="tcg",
                       settings={}, workload="w", lru_gen="0x0007", **d)


def test_a_cached_case_boots_nothing_and_replays_the_simulator(tmp_path, monkeypatch):
    kdir = tmp_path / "kernel"
    (kdir / "boot").mkdir(parents=True)
    (kdir / "boot" / "vmlinuz-6.1.0-56-amd64").write_bytes(b"")
    (kdir / ".complete").write_text(json.dumps({"package": "linux-image-test", "version": "1"}))
    kernel = K.kernel_from_dir(kdir)
    w = W.make_workload(LOG_SPEC, "rw", 3)
    path = C._cache_file(tmp_path, kernel, w, LOG_SETTINGS)
    C.save_runs(path, [_stored_run(), _stored_run()])

    def boom(*a, **k):
        raise AssertionError("booted a kernel for a cached case")

    monkeypatch.setattr(C, "run_kernel", boom)
    cases = C.validate(LOG_SPEC, mem="96M", swap="zram", lrus=("mglru",), page_cluster=0,
                       repeats=2, seed=3, cache=tmp_path, kernel_dir=kdir)
    (case,) = cases
    assert case.row("pgmajfault").kernel == [1497, 1497]
    assert case.row("pgmajfault").spread == 0.0
    # The simulator ran the same sequence on the log's zones (/proc/zoneinfo before the
    # phase): ZONE_DMA 2,217 free pages, 80/100/120, protection 20 against DMA32; ZONE_DMA32
    # 2,123 free, 109/136/163: 4,340 frames in all.
    zones = [
        dict(name="DMA", frames=2217, watermarks=[80, 100, 120], lowmem_reserve=20),
        dict(name="DMA32", frames=2123, watermarks=[109, 136, 163], lowmem_reserve=0),
    ]
    sim = vmemsim.replay(*W.make_workload(LOG_SPEC, "rw", 3).sequence()[:1], policy="mglru",
                         frames=4340, writes=w.sequence()[1], seed=3, page_cluster=0,
                         zones=zones, swap="zram", content_class="sparse")
    assert case.row("pgmajfault").vmemsim == sim.major_faults
    assert case.row("pswpout").vmemsim == sim.stats["pswpout"]
    assert len(sim.stats["pgalloc_zone"]) == 2
    # --one-zone: 4,340 frames with the summed watermarks.
    (one,) = C.validate(LOG_SPEC, mem="96M", swap="zram", lrus=("mglru",), page_cluster=0,
                        repeats=2, seed=3, cache=tmp_path, kernel_dir=kdir, zones=False)
    sim1 = vmemsim.replay(*W.make_workload(LOG_SPEC, "rw", 3).sequence()[:1], policy="mglru",
                          frames=4340, writes=w.sequence()[1], seed=3, page_cluster=0,
                          watermarks=(189, 236, 283), swap="zram", content_class="sparse")
    assert one.row("pgmajfault").vmemsim == sim1.major_faults
    assert "pgalloc_zone" not in sim1.stats
    # A different setting is not in the cache: it would boot (TCG named, so that no probe
    # of /dev/kvm, which boots a kernel of its own with Debian's busybox, comes first).
    with pytest.raises(AssertionError, match="booted"):
        C.validate(LOG_SPEC, mem="96M", swap="zram", lrus=("classic",), page_cluster=0,
                   repeats=2, seed=3, cache=tmp_path, kernel_dir=kdir, accel="tcg")


def test_row_statistics_by_hand():
    r = C.Row("pgmajfault", [90, 110], 105)
    assert r.mean == 100 and r.spread == pytest.approx(0.10) and r.error == pytest.approx(0.05)
    assert C.Row("x", [0, 0], 0).error == 0.0 and C.Row("x", [0], 3).error is None


def test_cpio_newc_layout(tmp_path):
    out = tmp_path / "a.cpio"
    K.write_cpio({"bin/x": (stat.S_IFREG | 0o755, b"hello"), "init": (stat.S_IFREG | 0o755, b"#!")}, out)
    data = out.read_bytes()
    # First entry: the implied directory "bin" (header 110 bytes + "bin\0", padded to 4).
    assert data[:6] == b"070701"
    assert int(data[14:22], 16) == stat.S_IFDIR | 0o755
    assert int(data[94:102], 16) == 4 and data[110:114] == b"bin\0"
    names = []
    i = 0
    while i < len(data):
        namesize = int(data[i + 94:i + 102], 16)
        filesize = int(data[i + 54:i + 62], 16)
        name = data[i + 110:i + 110 + namesize - 1].decode()
        names.append(name)
        i += 110 + namesize
        i += -i % 4
        body = data[i:i + filesize]
        if name == "bin/x":
            assert body == b"hello"
        i += filesize + (-filesize % 4)
        if name == "TRAILER!!!":
            break
    assert names == ["bin", "bin/x", "init", "TRAILER!!!"]


def test_bad_settings_name_the_option():
    with pytest.raises(VmemsimError, match="--swap"):
        K.Settings(swap="nvme").check()
    with pytest.raises(VmemsimError, match="--mem"):
        K.Settings(mem_mib=8).check()
    with pytest.raises(VmemsimError, match="--mem"):
        C.parse_mem("lots")
    assert C.parse_mem("160M") == 160 and C.parse_mem("1G") == 1024 and C.parse_mem("512MiB") == 512
    with pytest.raises(VmemsimError, match="--sysctl swappiness: set it with --swappiness"):
        K.Settings(sysctl={"swappiness": "10"}).check()
    with pytest.raises(VmemsimError, match="expected a whole number"):
        K.Settings(sysctl={"watermark_boost_factor": "off"}).check()
    with pytest.raises(VmemsimError, match="not a /proc/sys/vm setting name"):
        K.Settings(sysctl={"../x": "1"}).check()


def test_sysctls_are_set_before_the_swap_and_left_out_of_old_cache_keys(tmp_path):
    s = K.Settings(sysctl={"watermark_boost_factor": "0"})
    s.check()
    assert K.sysctl_lines(s) == (
        "echo 0 > /proc/sys/vm/watermark_boost_factor || echo '@@error sysctl "
        "watermark_boost_factor'\n"
        'echo "@@sysctl watermark_boost_factor=$(cat /proc/sys/vm/watermark_boost_factor)"\n')
    assert K.INIT.index("{sysctls}") < K.INIT.index("{swap_setup}")
    # Runs cached before the setting existed keep their key; a sysctl makes a new one.
    class Kern:
        def describe(self):
            return "k"

    class W:
        key = "w"

    plain = C._cache_file(tmp_path, Kern(), W(), K.Settings())
    assert plain.name == hashlib.sha256(json.dumps(
        dict(kernel="k", workload="w", settings=dict(
            mem_mib=160, swap="disk", lru="classic", page_cluster=3, swappiness=60,
            swap_mib=0)), sort_keys=True).encode()).hexdigest()[:24] + ".json"
    assert C._cache_file(tmp_path, Kern(), W(), s) != plain


def _can_boot():
    return K.cannot_boot()


@pytest.mark.skipif(_can_boot() is not None, reason=str(_can_boot()))
def test_a_real_kernel_run_end_to_end(tmp_path):
    """Boot Debian's kernel under QEMU (TCG unless KVM works), run 30,000 accesses in a 96 MiB
    guest with disk swap, parse the counters and compare with vmemsim. About 10-30 s."""
    # Results in a fresh cache (so this boots), the kernel package shared with other runs.
    kernels = W.cache_dir() / "kernels"
    kernels.mkdir(parents=True, exist_ok=True)
    (tmp_path / "kernels").symlink_to(kernels)
    out = subprocess.run(
        [sys.executable, "-m", "vmemsim", "validate", LOG_SPEC, "--cache", str(tmp_path), "--mem", "96M", "--swap", "disk", "--lru", "classic",
         "--page-cluster", "0", "--repeats", "1", "--seed", "3", "--json"],
        capture_output=True, text=True, timeout=900,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (case,) = json.loads(out.stdout)
    run = case["kernel_runs"][0]
    assert run["accesses"] == 30000
    assert run["release"] and "amd64" in run["release"]
    assert run["vmstat_before"]["nr_free_pages"] < 12000  # the workload does not fit
    rows = {r["counter"]: r for r in case["rows"]}
    k = rows["pgmajfault"]["kernel_mean"]
    assert k > 500  # it swapped
    # classic LRU's major faults within 25% of the kernel's (measured: -7.6% on 6.1)
    assert abs(rows["pgmajfault"]["error"]) < 0.25
    assert case["vmemsim_version"] == vmemsim._native.version()
    assert case["kernel"].startswith("linux-image-")


def test_replay_swap_zram_skips_the_swap_cache(tmp_path):
    """`replay --swap zram` (SWP_SYNCHRONOUS_IO, `do_swap_page` 6.1/6.8): a swap-in reads only
    the faulting page (no readahead) and frees its slot, so a page read back and reclaimed
    again is written again. Disk keeps the slot after a read fault (`should_try_to_free_swap`
    is false), so the second reclaim of a clean page writes nothing.

    3 pages in 2 frames, LRU replacement, page-cluster 0: W1 W2 W3 (3 evicts 1: write 1),
    R1 (evicts 2: write 2; read 1), R3 (hit), R2 (evicts 1, read 2: disk kept 1's slot at the
    read fault, so the clean page goes without a write; zram freed it, so it is written
    again). Disk: 2 writes, zram: 3; 2 reads each. zram's pool is left out of the 2 frames
    (``--cgroup``): this is about the swap-in path, not memory."""
    import subprocess
    import sys

    trace = tmp_path / "t.txt"
    trace.write_text("1 W\n2 W\n3 W\n1 R\n3 R\n2 R\n")
    out = {}
    for swap in ("disk", "zram"):
        r = vmemsim.replay(str(trace), policy="lru", frames=2, page_cluster=0, swap=swap,
                           charge_device_ram=False)
        out[swap] = (r.stats["pswpout"], r.stats["pswpin"], r.swap)
    assert out["disk"] == (2, 2, "disk")
    assert out["zram"] == (3, 2, "zram")
    cli = subprocess.run(
        [sys.executable, "-m", "vmemsim", "replay", "--trace", str(trace), "--policy", "lru",
         "--frames", "2", "--page-cluster", "0", "--swap", "zram", "--cgroup", "--json"],
        capture_output=True, text=True, check=True,
    )
    j = json.loads(cli.stdout)
    assert j["swap"] == "zram" and j["stats"]["pswpout"] == 3


def test_missing_tools_are_named_with_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setattr(K.shutil, "which", lambda name: None)
    with pytest.raises(K.KernelUnavailable, match="qemu-system-x86_64 is not installed.*apt-get install qemu-system-x86"):
        K.find_qemu()
    monkeypatch.setattr(K, "BUSYBOX_PATHS", (str(tmp_path / "no-busybox"),))
    with pytest.raises(K.KernelUnavailable, match="static busybox"):
        K.find_busybox()
    # The CLI turns it into one line on stderr, status 2, naming what is missing.
    import subprocess
    import sys
    env = dict(__import__("os").environ, PATH=str(tmp_path))
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "validate", "gen:uniform:pages=10,n=10",
         "--kernel-dir", str(tmp_path), "--cache", str(tmp_path / "c"), "--accel", "tcg"],
        capture_output=True, text=True, env=env,
    )
    assert r.returncode == 2
    assert r.stderr.startswith("vmemsim: error: validate:") and "Traceback" not in r.stderr


def test_a_kernel_unpacked_before_is_not_downloaded_again(monkeypatch, tmp_path):
    # apt-cache names the image the meta-package depends on; its unpacked copy is complete,
    # so no `apt-get download` runs.
    shows = {
        "linux-image-amd64": "Package: linux-image-amd64\nVersion: 6.1.192-2\n"
                             "Depends: linux-image-6.1.0-56-amd64 (= 6.1.192-2)\n",
        "linux-image-6.1.0-56-amd64": "Package: linux-image-6.1.0-56-amd64\nVersion: 6.1.192-2\n"
                                      "Depends: kmod, linux-base (>= 4.3~)\n",
    }

    def fake_run(cmd, cwd=None):
        if cmd[:2] == ["apt-cache", "show"]:
            return shows[cmd[-1]]
        raise AssertionError(f"ran {cmd}")

    monkeypatch.setattr(K, "_run", fake_run)
    root = tmp_path / "kernels" / "linux-image-6.1.0-56-amd64_6.1.192-2"
    (root / "boot").mkdir(parents=True)
    (root / "boot" / "vmlinuz-6.1.0-56-amd64").write_bytes(b"")
    (root / ".complete").write_text("{}")
    k = K.fetch_kernel(cache=tmp_path)
    assert (k.package, k.version, k.release) == (
        "linux-image-6.1.0-56-amd64", "6.1.192-2", "6.1.0-56-amd64")


def test_a_replay_on_zones_takes_the_highest_zone_first_and_errors_name_the_zone():
    # 1,000 frames as ZONE_DMA 100 + ZONE_DMA32 900, watermarks derived
    # (__setup_per_zone_wmarks): min_free_kbytes = int_sqrt(4,000 KiB × 16) = 252 → 63 pages;
    # DMA32 min 63 × 900 / 1,000 = 56, delta max(14, 0) → low 70. DMA32 gives its first
    # 900 − 70 = 830 pages, so 500 first touches all come from it.
    r = vmemsim.replay(list(range(500)), policy="clock-lru", frames=1000,
                       zones=[{"name": "DMA", "frames": 100}, {"name": "DMA32", "frames": 900}])
    assert r.stats["pgalloc_zone"] == [0, 500]
    with pytest.raises(VmemsimError, match="unknown field `frame`"):
        vmemsim.replay(list(range(10)), policy="mglru", frames=30, zones=[{"frame": 10}])
    with pytest.raises(VmemsimError, match=r"zones\[1\]: the highest zone keeps no lowmem_reserve"):
        vmemsim.replay(list(range(10)), policy="mglru", frames=300,
                       zones=[{"frames": 100}, {"frames": 200, "lowmem_reserve": 3}])
    with pytest.raises(VmemsimError, match="the zones' frames sum to 250, the machine has 300"):
        vmemsim.replay(list(range(10)), policy="mglru", frames=300,
                       zones=[{"frames": 100}, {"frames": 150}])
    with pytest.raises(VmemsimError, match="zones: expected a list"):
        vmemsim.replay(list(range(10)), policy="mglru", frames=300, zones="DMA")


def test_kernel_zones_take_the_reserve_against_movable_allocations():
    # A guest above 4 GiB has ZONE_NORMAL too. The workload's pages are GFP_HIGHUSER_MOVABLE
    # (highest_zoneidx ZONE_MOVABLE = 3), so each lower zone keeps protection[3]; the boost
    # is taken off the watermarks; the highest zone keeps none.
    d = K.parse_log(LOG.read_text())
    zones = {
        "DMA": {"free": 3800, "boost": 0, "min": 5, "low": 6, "high": 7,
                "managed": 3840, "lowmem_reserve": [0, 900, 4000, 4001, 4001]},
        "DMA32": {"free": 200000, "boost": 10, "min": 110, "low": 140, "high": 170,
                  "managed": 400000, "lowmem_reserve": [0, 0, 3000, 3002, 3002]},
        "Normal": {"free": 500000, "boost": 0, "min": 300, "low": 370, "high": 440,
                   "managed": 600000, "lowmem_reserve": [0, 0, 0, 0, 0]},
    }
    run = K.KernelRun(kernel="k", release="r", accel="tcg", settings={}, workload="w", **{
        **{k: d[k] for k in ("vmstat", "vmstat_before", "meminfo_before", "mm_stat",
                             "accesses", "checksum")}, "zones": zones})
    assert C.kernel_zones([run]) == [
        dict(name="DMA", frames=3800, watermarks=[5, 6, 7], lowmem_reserve=4001),
        dict(name="DMA32", frames=200000, watermarks=[100, 130, 160], lowmem_reserve=3002),
        dict(name="Normal", frames=500000, watermarks=[300, 370, 440], lowmem_reserve=0),
    ]
    assert C.machine_args(C.simulator_inputs([run]))["frames"] == 703800
    assert "watermarks" in C.machine_args(C.simulator_inputs([run]), zones=False)


def test_parse_log_reads_the_swap_disks_stat_over_the_phase():
    # vmwl prints /sys/block/vda/stat before and after the phase (17 fields on 6.1); the
    # run's entry is after minus before, in_flight as it was after. The zram log has none.
    assert K.parse_log(LOG.read_text())["diskstat"] == {}
    before = "     120        0      960       15        3        0       24        1        0       16       16        0        0        0        0        0        0"
    after = "   10120        0    80960     1086      616        0   126232      464        1     1308     1551        0        0        0        0        2        0"
    text = LOG.read_text().replace("@@end\n", f"@@end\n@@diskstat-before {before}\n@@diskstat-after {after}\n", 1)
    d = K.parse_log(text)["diskstat"]
    assert (d["read_ios"], d["read_sectors"], d["read_ticks"]) == (10000, 80000, 1071)
    assert (d["write_ios"], d["write_sectors"], d["write_ticks"]) == (613, 126208, 463)
    assert (d["in_flight"], d["io_ticks"], d["time_in_queue"], d["flush_ios"]) == (1, 1292, 1535, 2)
    with pytest.raises(VmemsimError, match="diskstat-after"):
        K.parse_diskstat(before, "12 x 3")


def test_the_disks_time_is_fitted_per_request_and_per_page():
    # 1,000 one-page requests and 100 of 32 pages, at 60 µs a request and 40 µs a page:
    # 100 ms and 134 ms in flight; the fit gives the two back.
    runs = [
        dict(read_ios=1000, read_sectors=8000, write_ios=0, write_sectors=0, io_ticks=100),
        dict(read_ios=40, read_sectors=40 * 256, write_ios=60, write_sectors=60 * 256,
             io_ticks=134),
    ]
    a, b = C.fit_disk_time(runs)
    assert a == pytest.approx(60.0) and b == pytest.approx(40.0)
    with pytest.raises(VmemsimError, match="not proportional"):
        C.fit_disk_time(runs[:1])
    # The timed validation's disk takes both, in the cost table's time (divided by tcg).
    t = C.Timing(tcg=10, disk_us=40, disk_request_us=60)
    s = K.Settings(mem_mib=160, swap="disk", lru="classic", page_cluster=0)
    assert t.device(s, []).endswith("bw_mbps=1024,overhead_us=6,cache=0,max_pages=254")
    with pytest.raises(VmemsimError, match="disk_request_us"):
        C.Timing(disk_request_us=-1)

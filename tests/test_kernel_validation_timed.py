"""The kernel-validation comparison on the timed machine (``vmemsim validate --timed``,
``matrix.py findings --timed``; experiments/kernel-validation/TIMED.md): the device settings
it derives from the emulated hardware, and one configuration against the committed kernel
runs, where the timed machine's kswapd falls behind on the one CPU and the program reclaims
directly, as the kernel's did, and the untimed replay cannot."""

import importlib.util
import json
from pathlib import Path

import pytest

from vmemsim import VmemsimError
from vmemsim.validate.compare import Timing, compare
from vmemsim.validate.kernel import KernelRun, Settings
from vmemsim.validate.workload import make_workload

EXP = Path(__file__).resolve().parent.parent / "experiments" / "kernel-validation"
RAW = json.loads((EXP / "data" / "kernel-runs.json").read_text())["cases"]


def _case(name, label, lru):
    return next(c for c in RAW if (c["name"], c["swap_label"], c["settings"]["lru"])
                == (name, label, lru))


def _matrix():
    spec = importlib.util.spec_from_file_location("kv_matrix_timed", EXP / "matrix.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_timed_devices_are_the_emulated_hardwares():
    # By hand: TCG 10x slower than the cost table's CPU, 50 µs of wall time per 4 KiB to the
    # disk image: 5 µs per page in the table's time, 4,096 bytes / 5 µs = 819.2 MB/s; EEVDF's
    # 0.75 ms slice on one CPU is 75 µs of the table's time.
    t = Timing()
    assert (t.tcg, t.disk_us, t.slice_ns()) == (10.0, 50.0, 75_000)
    c = _case("zipf-0.9", "disk-pc0", "classic")
    runs = [KernelRun.from_dict(r) for r in c["kernel_runs"]]
    total = int(runs[0].meminfo_before["SwapTotal"])  # KiB of usable slots
    s = Settings(**c["settings"])
    # virtio-blk's requests hold up to 254 pages (QEMU's seg_max: 256 - 2); a file on the
    # host has no drive's buffer.
    assert t.device(s, runs) == (f"hdd:size={total + 4}KiB,rpm=0,seek_us=0,min_seek_us=0,"
                                 "bw_mbps=819.2,overhead_us=0,cache=0,max_pages=254")
    ssd = Settings(**_case("zipf-0.9", "ssd-pc3", "classic")["settings"])
    assert t.device(ssd, runs) == "ssd:latency_us=0,bw_mbps=819.2,qd=1,max_pages=254"
    zram = Settings(**_case("zipf-0.9", "zram", "classic")["settings"])
    assert t.device(zram, runs) == "zram"
    # A real disk's parameters keep the swap's size.
    assert Timing(disk="hdd:rpm=5400").device(s, runs) == f"hdd:size={total + 4}KiB,rpm=5400"
    assert Timing(tcg=1, disk_us=5).device(s, runs).endswith("bw_mbps=819.2,overhead_us=0,cache=0,max_pages=254")
    with pytest.raises(VmemsimError, match="tcg"):
        Timing(tcg=0)


def _zipf_0_9_disk_pc0_classic():
    c = _case("zipf-0.9", "disk-pc0", "classic")
    w = make_workload(_matrix().resolve(c["spec"]), mode=c["mode"], seed=c["seed"])
    # (as the matrix loads them: the runs' free lists by migratetype from data/pagetypes.json)
    runs = _matrix().fill_pagetypes([KernelRun.from_dict(r) for r in c["kernel_runs"]])
    s = Settings(**c["settings"])
    return (compare(w, s, runs, seed=c["seed"], timing=Timing()),
            compare(w, s, runs, seed=c["seed"]))


def test_timed_zipf_0_9_disk_pc0_classic_reclaims_directly_as_the_kernel_did():
    """zipf-0.9 with swap on the virtio disk, page-cluster 0, classic LRU (0.1 s): direct
    reclaim scans (the kernel's two runs: 14,636 and 27,050 pages), where the untimed
    replay's kswapd does all of it."""
    timed, untimed = _zipf_0_9_disk_pc0_classic()
    d = timed.row("pgscan_direct")
    assert d.vmemsim > 0.5 * min(d.kernel), (d.vmemsim, d.kernel)
    assert untimed.row("pgscan_direct").vmemsim == 0
    # The untimed comparison's rows are unchanged: no allocstall row there.
    assert "allocstall" not in [r.counter for r in untimed.rows]
    assert timed.sim["config"]["cpus"] == 1 and timed.sim["config"]["kernel"] == "6.8"


def test_timed_zipf_0_9_disk_pc0_classic_within_tolerance_and_the_kernels_direct_scans():
    """The tolerance counters as the issue's (±5% for faults and swap traffic, ±15% for
    scans, or the kernel's spread), and direct reclaim's scans between the kernel's two
    runs (14,636 and 27,050). (Out from fixes 16-17 until a written page's reclaim work was
    charged at its write and writes completing during a pass were rotated within it,
    docs/models.md "Swap writes in time": pswpout +5.2%, direct scans 37,775.)"""
    timed, _ = _zipf_0_9_disk_pc0_classic()
    for k, t in _matrix().TOLERANCE.items():
        r = timed.row(k)
        assert abs(r.error) <= max(t, r.spread), (k, r.vmemsim, r.kernel)
    d = timed.row("pgscan_direct")
    assert min(d.kernel) <= d.vmemsim <= max(d.kernel), (d.vmemsim, d.kernel)


@pytest.mark.parametrize("name,label", [("loop", "disk-pc0"), ("zipf-1.2", "disk-pc3")])
def test_timed_classic_disk_rows_write_what_the_kernel_wrote(name, label):
    """Swap writes against the kernel's (±5%, or its spread) on two more classic LRU disk
    rows (about 1 s each): the loop, where every page is written once a pass, and Zipf 1.2
    with page-cluster 3. Both wrote 5-6% too much on the timed machine while a written page's
    reclaim work went to the later visit that frees it and writes completing during a pass
    waited for the next one: a priority-1 kswapd pass then wrote half the inactive list
    before the device completed a write (docs/models.md "Swap writes in time")."""
    c = _case(name, label, "classic")
    w = make_workload(_matrix().resolve(c["spec"]), mode=c["mode"], seed=c["seed"])
    runs = _matrix().fill_pagetypes([KernelRun.from_dict(r) for r in c["kernel_runs"]])
    timed = compare(w, Settings(**c["settings"]), runs, seed=c["seed"], timing=Timing())
    for k in ("pgmajfault", "pswpout", "pgsteal"):
        r = timed.row(k)
        assert abs(r.error) <= max(0.05, r.spread), (k, r.vmemsim, r.kernel)
    # Pages written and not freed by the phase's end, as the kernel's pswpout - pgsteal.
    out, steal = timed.row("pswpout"), timed.row("pgsteal")
    assert out.vmemsim - steal.vmemsim <= 2 * max(o - s for o, s in zip(out.kernel, steal.kernel)) + 1000


def test_a_timed_run_takes_the_kernels_reclaim_rules():
    # RunConfig.kernel, as a replay's: 6.1's MG-LRU rules change this small run's reclaim
    # (kswapd's separate aging pass, 6.1's get_nr_to_scan and should_abort_scan).
    import vmemsim

    spec = "ycsb-c:footprint=8MiB,requests=20000"
    r68 = vmemsim.run(spec, policy="mglru", frames="50%", cpus=1, kernel="6.8")
    r61 = vmemsim.run(spec, policy="mglru", frames="50%", cpus=1, kernel="6.1")
    assert (r68.config["kernel"], r61.config["kernel"]) == ("6.8", "6.1")
    assert r68.stats != r61.stats
    with pytest.raises(VmemsimError, match="kernel: unknown kernel version '5.0'"):
        vmemsim.run(spec, kernel="5.0")

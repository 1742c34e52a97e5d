"""File I/O on the timed machine and in VMs: the page cache in time, the file disk, QEMU's
cache modes and double caching, from the Python API, the CLI and a sweep."""

import json
import subprocess
import sys

import pytest

import vmemsim
from vmemsim import VmemsimError

#: One channel, 100 µs a request plus 1 µs a page, no submission time.
DISK = "ssd:latency_us=100,qd=1,bw_mbps=4096,submit_us=0"


def test_a_native_file_read_waits_for_its_disk():
    # read_ahead_kb=0: each 4 KiB read of a page not cached is one request of one page,
    # 101 µs on an idle disk, waited for: 16 reads of a 64 KiB file.
    r = vmemsim.run("dd-like:bytes=64KiB,bs=4KiB", frames=1024, cpus=1,
                    file_device=DISK, read_ahead_kb=0)
    d = r.file_device_stats
    assert (d["read_requests"], d["pages_read"], d["write_requests"]) == (16, 16, 0)
    assert r.time["file_wait_ns"] == 16 * 101_000
    assert r.stats["nr_file_pages"] == 16 and r.stats["pgpgin"] == 64
    assert r.config["file_device"] == DISK


def test_cache_modes_decide_double_caching():
    # A guest reading a 256 KiB file: under writeback every page it caches is in the host's
    # cache too; under none (O_DIRECT) the host caches nothing of the image.
    kw = dict(guest_frames=512, host_frames=4096, file_device=DISK, read_ahead_kb=0)
    wb = vmemsim.run_vm("dd-like:bytes=256KiB,bs=4KiB", **kw)
    assert wb.stats["nr_file_pages"] == 64
    assert wb.double_cached_pages == 64 and wb.host_image_pages == 64
    none = vmemsim.run_vm("dd-like:bytes=256KiB,bs=4KiB", cache_mode="none", **kw)
    assert none.stats["nr_file_pages"] == 64
    assert (none.double_cached_pages, none.host_image_pages) == (0, 0)
    assert none.host_file_device_stats["pages_read"] == 64
    with pytest.raises(VmemsimError, match="cache_mode"):
        vmemsim.run_vm("dd-like:bytes=256KiB", cache_mode="unsafe")


def test_two_vms_cache_series():
    # Two VMs reading files, sampled every ms: each sample has both VMs' caches.
    r = vmemsim.run_vm(["dd-like:bytes=512KiB,bs=64KiB", "fileio:bytes=256KiB,bs=4KiB,"
                        "pattern=rand,ops=200"], guest_frames=1024, host_frames=8192,
                       file_device=DISK, sample_every_ns=1_000_000)
    assert len(r.per_vm) == 2
    caches = [s["caches"] for s in r.series]
    assert caches and all(len(c) == 2 for c in caches)
    last = caches[-1]
    assert last[0]["guest_file_pages"] == 128
    assert all(c["double_cached"] <= c["guest_file_pages"] for c in last)
    assert r.double_cached_pages == sum(v["double_cached_pages"] for v in r.per_vm)


def test_cli_shows_the_page_caches():
    out = subprocess.run(
        [sys.executable, "-m", "vmemsim", "vm", "dd-like:bytes=256KiB,bs=16KiB",
         "--guest-frames", "512", "--host-frames", "4096", "--cache-mode", "none",
         "--file-device", DISK], capture_output=True, text=True, check=True).stdout
    assert "page caches (double caching)" in out and "virtual disk" in out
    out = subprocess.run(
        [sys.executable, "-m", "vmemsim", "run", "dd-like:bytes=256KiB,bs=16KiB",
         "--frames", "512", "--file-device", DISK, "--json"],
        capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    assert d["file_device_stats"]["pages_read"] == 64


def test_sweep_keys_of_files():
    from vmemsim.sweep import runner
    from vmemsim.sweep.spec import SCHEMA

    assert SCHEMA["vm.cache_mode"].default == "writeback"
    assert SCHEMA["machine.file_device"].default is None
    cfg = {"workload.guest": "dd-like:bytes=64KiB", "vm.cache_mode": "none",
           "machine.file_device": DISK, "machine.read_ahead_kb": 0}
    kw = runner.vm_kwargs({**{k: v.default for k, v in SCHEMA.items()}, **cfg}, 1)
    assert (kw["cache_mode"], kw["file_device"], kw["read_ahead_kb"]) == ("none", DISK, 0)


def test_cacol_keeps_nothing_a_guest_reads_once():
    # One pass of dd: every request of the image is a page's first, which Cacol serves from
    # the disk without keeping (seed 003 §4.2): no double caching; writeback keeps them all.
    kw = dict(guest_frames=512, host_frames=4096, file_device=DISK, read_ahead_kb=0)
    r = vmemsim.run_vm("dd-like:bytes=256KiB,bs=4KiB", cache_mode="cacol", **kw)
    assert r.cacol["bypassed"] == 64 and r.cacol["inserted"] == 0
    assert (r.host_image_pages, r.double_cached_pages) == (0, 0)
    wb = vmemsim.run_vm("dd-like:bytes=256KiB,bs=4KiB", **kw)
    assert wb.cacol == {} and wb.double_cached_pages == 64


def test_an_msr_import_runs_on_the_timed_machine(tmp_path):
    # Four 4 KiB reads of one disk at 0, 4096, 8192, then 0 again. The file's size is the
    # furthest byte read (12 KiB, 3 pages). The first read's window (`get_init_ra_size(1,
    # 32)` = 4 pages, clipped to the file's 3) is one request of 3 pages; the other reads
    # hit the cache.
    csv = tmp_path / "msr.csv"
    rows = [(0, 4096), (4096, 4096), (8192, 4096), (0, 4096)]
    csv.write_text("".join(
        f"{128166372003061629 + k},hm,0,Read,{off},{size},100\n"
        for k, (off, size) in enumerate(rows)))
    vmt = tmp_path / "msr.vmt"
    vmemsim.import_trace(str(csv), str(vmt), "msr")
    r = vmemsim.run(f"trace:path={vmt}", frames=256, cpus=1, file_device=DISK)
    d = r.file_device_stats
    assert (d["read_requests"], d["pages_read"]) == (1, 3)
    assert r.stats["file_io"] == 4 and r.stats["nr_file_pages"] == 3
    # The same in a VM: the guest's one request reaches the host's disk through its cache.
    v = vmemsim.run_vm(f"trace:path={vmt}", guest_frames=256, host_frames=1024,
                       file_device=DISK)
    assert v.file_device_stats["read_requests"] == 1
    assert v.double_cached_pages == 3


def test_bad_file_settings_are_named():
    # Large guest pages with files, zram as a file disk, Cacol beside a demand policy, an
    # unknown device: each refused before the run, naming the setting.
    with pytest.raises(VmemsimError, match="vm.guest_page: the page cache is modelled with 4 KiB"):
        vmemsim.run_vm("dd-like:bytes=64KiB,bs=4KiB", guest_page="2m", host_page="2m")
    with pytest.raises(VmemsimError, match="file_device: zram is a swap device"):
        vmemsim.run("dd-like:bytes=64KiB,bs=4KiB", frames=256, file_device="zram")
    with pytest.raises(VmemsimError, match="cache_mode: cacol runs beside the host's kernel"):
        vmemsim.run_vm("dd-like:bytes=64KiB,bs=4KiB", cache_mode="cacol", host_policy="lru")
    with pytest.raises(VmemsimError, match="file_device"):
        vmemsim.run("dd-like:bytes=64KiB,bs=4KiB", frames=256, file_device="floppy")
    with pytest.raises(VmemsimError, match="dd-like.bs"):
        vmemsim.run("dd-like:bs=0", frames=256)
    with pytest.raises(VmemsimError, match="dd-like.bytes: 65536 bytes is less than one block"):
        vmemsim.run("dd-like:bytes=64KiB", frames=256)

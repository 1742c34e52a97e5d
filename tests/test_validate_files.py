"""`vmemsim validate`'s file workloads (``fileread:``, ``filerand:``, ``filewrite:``): the spec,
the guest program's calls (compiled and run natively against a regular file) equal to the
recorded trace vmemsim replays, the replay of that trace through the page cache, and the
parsing of a stored serial log of a kernel run."""

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import vmemsim
from vmemsim import _native
from vmemsim.api import VmemsimError
from vmemsim.validate import compare as C
from vmemsim.validate import kernel as K
from vmemsim.validate import workload as W

DATA = Path(__file__).parent / "data" / "validate"
LOG = DATA / "serial-fileread-classic.log"
#: The stored log's workload (a 128 MiB guest, Linux 6.1.0-48, classic LRU, no swap).
LOG_SPEC = "fileread:bytes=96M,bs=64K,passes=2"
#: Read off the log by hand: pgpgin and workingset_refault_file over the phase, free pages
#: before it (31 pages of the second pass were still cached).
LOG_PGPGIN, LOG_REFAULTS, LOG_FREE = 196484, 24543, 12589

OPS = {W.OP_READ: "read", W.OP_WRITE: "write", W.OP_PREAD: "pread64", W.OP_PWRITE: "pwrite64",
       W.OP_FSYNC: "fsync"}

SPECS = [
    "fileread:bytes=2M,bs=64K,passes=2",
    "fileread:bytes=1M,bs=4K,passes=1,disk=3M",
    "filerand:bytes=2M,bs=4K,n=300,seed=7",
    "filerand:bytes=2M,bs=16K,n=100",
    "filewrite:bytes=1M,bs=64K,passes=2",
    "filewrite:bytes=1M,bs=8K,fsync=0",
    "filewrand:bytes=2M,bs=4K,n=300,seed=7",
    "filewrand:bytes=1M,bs=8K,n=50,fsync=1",
]


def test_file_specs_parse_to_canonical_names_with_defaults():
    w = W.make_workload("fileread:bytes=192M", seed=3)
    assert w.kind == "file"
    assert w.name == "fileread:bytes=201326592,bs=65536,passes=2,disk=201326592"
    assert w.key == "file:" + w.name
    assert w.program_args("/dev/vda") == ["file", "/dev/vda", "read", "201326592", "65536", "2"]
    r = W.make_workload("filerand:bytes=1MiB,bs=4k", seed=5)
    # n defaults to bytes / bs, seed to --seed
    assert r.name == "filerand:bytes=1048576,bs=4096,n=256,seed=5,disk=1048576"
    assert r.program_args("/dev/vdb")[2:] == ["rand", "1048576", "4096", "256", "5"]
    wr = W.make_workload("filewrite:bytes=1M,disk=4M")
    assert wr.name == "filewrite:bytes=1048576,bs=65536,passes=1,fsync=1,disk=4194304"
    assert wr.disk_bytes() == 4 << 20
    assert wr.program_args("/dev/vda")[2:] == ["write", "1048576", "65536", "1", "1"]
    rw = W.make_workload("filewrand:bytes=1M", seed=4)
    # n defaults to bytes / bs, seed to --seed, fsync to 0
    assert rw.name == "filewrand:bytes=1048576,bs=4096,n=256,seed=4,fsync=0,disk=1048576"
    assert rw.program_args("/dev/vda")[2:] == ["randw", "1048576", "4096", "256", "4", "0"]


@pytest.mark.parametrize("spec, match", [
    ("fileread:bs=4K", "bytes= is required"),
    ("fileread:bytes=1M,bs=1000", "multiple of 4096"),
    ("fileread:bytes=100K,bs=64K", "multiple of bs"),
    ("fileread:bytes=1M,passes=0", "at least 1"),
    ("fileread:bytes=1M,n=5", "unknown or malformed"),
    ("filewrite:bytes=1M,fsync=2", "fsync must be 0 or 1"),
    ("filewrand:bytes=1M,fsync=3", "fsync must be 0 or 1"),
    ("filewrand:bytes=1M,passes=2", "unknown or malformed"),
    ("filerand:bytes=1M,disk=512K", "disk must be at least bytes"),
    ("fileread:bytes=lots", "expected a number"),
    ("mmapread:bytes=1M,bs=8K", "bs must be 4096"),
])
def test_bad_file_specs_name_the_key(spec, match):
    with pytest.raises(VmemsimError, match=match):
        W.make_workload(spec)


def test_sequences_by_hand():
    op, off, ln = W.make_workload("fileread:bytes=256K,bs=64K,passes=2").io_records()
    assert op.tolist() == [W.OP_READ] * 8
    assert off.tolist() == [0, 65536, 131072, 196608] * 2
    assert ln.tolist() == [65536] * 8
    op, off, ln = W.make_workload("filewrite:bytes=128K,bs=64K").io_records()
    assert op.tolist() == [W.OP_WRITE, W.OP_WRITE, W.OP_FSYNC]
    assert off.tolist() == [0, 65536, 0] and ln.tolist() == [65536, 65536, 0]
    op, off, ln = W.make_workload("filerand:bytes=1M,bs=16K,n=1000,seed=2").io_records()
    assert (op == W.OP_PREAD).all() and (ln == 16384).all()
    assert (off % 16384 == 0).all() and off.max() < 1 << 20
    # spread over the blocks (64 of them)
    assert len(np.unique(off)) == 64
    # filewrand: pwrite64 at the blocks filerand reads, then fsync when asked
    wop, woff, wln = W.make_workload("filewrand:bytes=1M,bs=16K,n=1000,seed=2,fsync=1").io_records()
    assert (wop[:-1] == W.OP_PWRITE).all() and wop[-1] == W.OP_FSYNC
    assert np.array_equal(woff[:-1], off) and (wln[:-1] == 16384).all()


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    return W.build_program(tmp_path_factory.mktemp("vmwl"))


def _run_natively(exe, w, tmp_path):
    """vmwl run natively with ``--dump`` on a regular file of the device's size: its calls as
    dumped, and its stdout."""
    dev = tmp_path / "dev.img"
    with open(dev, "wb") as f:
        f.truncate(w.disk_bytes())
    dump = tmp_path / "dump.bin"
    out = subprocess.run([str(exe), "--dump", str(dump), *w.program_args(str(dev))],
                         check=True, capture_output=True, text=True).stdout
    return np.fromfile(dump, dtype=np.dtype([("op", "u1"), ("off", "<u8"), ("len", "<u8")])), out


@pytest.mark.parametrize("spec", SPECS)
def test_program_makes_the_calls_the_simulator_replays(exe, tmp_path, spec):
    """vmwl run natively on a regular file of the device's size: its calls (dumped as it makes
    them, with the bytes each transferred), the recorded trace's file I/O records, and the
    harness's sequence are the same, and so is the checksum."""
    w = W.make_workload(spec, seed=11)
    raw, out = _run_natively(exe, w, tmp_path)
    op, off, ln = w.io_records()
    assert np.array_equal(raw["op"], op)
    assert np.array_equal(raw["off"], off)
    assert np.array_equal(raw["len"], ln)
    m = re.search(r"@@vmwl accesses=(\d+) checksum=([0-9a-f]+)", out)
    assert int(m.group(1)) == op.size
    assert m.group(2) == W.checksum(*w.sequence())
    # The trace vmemsim replays: the size record, then exactly these calls.
    trace = W.write_file_trace(w, tmp_path / "t.vmt")
    ev = _native.read_recorded(str(trace))["events"]
    assert (ev[0]["op"], ev[0]["offset"], ev[0]["len"]) == ("read", w.disk_bytes(), 0)
    assert [e["op"] for e in ev[1:]] == [OPS[int(x)] for x in op]
    assert [e["offset"] for e in ev[1:]] == off.tolist()
    assert [e["len"] for e in ev[1:]] == ln.tolist()
    assert len({e["file"] for e in ev}) == 1


MMAP_SPECS = ["mmapread:bytes=2M,passes=2", "mmaprand:bytes=2M,n=300,seed=7"]


@pytest.mark.parametrize("spec", MMAP_SPECS)
def test_program_makes_the_loads_the_simulator_replays(exe, tmp_path, spec):
    """The mapping workloads: vmwl maps the device and loads one byte a page; its dump
    (op 12, a load) is the harness's sequence, and the trace vmemsim replays is the size
    record, one shared read-only `mmap` of the range, then one read of each loaded page."""
    w = W.make_workload(spec, seed=11)
    raw, out = _run_natively(exe, w, tmp_path)
    op, off, ln = w.io_records()
    assert (raw["op"] == W.OP_LOAD).all() and np.array_equal(raw["off"], off)
    assert (raw["len"] == 4096).all() and np.array_equal(raw["len"], ln)
    m = re.search(r"@@vmwl accesses=(\d+) checksum=([0-9a-f]+)", out)
    assert int(m.group(1)) == op.size
    assert m.group(2) == W.checksum(*w.sequence())
    rec = _native.read_recorded(str(W.write_file_trace(w, tmp_path / "t.vmt")))
    ev = rec["events"]
    assert [(e["op"], e["offset"], e["len"]) for e in ev] == [
        ("read", w.disk_bytes(), 0), ("mmap", 0, 2 << 20)]
    assert ev[1]["addr"] == (W.MMAP_BASE_PAGE << 12) | W.MMAP_KNOWN | W.MMAP_SHARED
    assert np.array_equal(rec["page"], W.MMAP_BASE_PAGE + (off >> np.uint64(12)))
    assert not rec["write"].any()


def test_mapping_faults_by_hand(tmp_path):
    # 512 pages loaded in order, twice, ra_pages 32, room for all. Pass 1: page 0 is major
    # (read-around [0, 32), page 24 marked), retried, the retry's fault-around maps [0, 16);
    # 16 is minor (maps [16, 32) but the marked 24); 24 starts async readahead ([32, 64),
    # 32 marked) and is retried (fault-around maps it). From then on each 32-page window
    # takes two faults: its marked first page (async readahead of the next window, retried)
    # and its page 16 (minor): 15 windows, the last one's readahead past the end. 3 + 30 =
    # 33 faults, 2 + 15 = 17 of them retried; pass 2 finds all 512 mapped. Linux 6.8 counts
    # PGFAULT once a fault (33), 6.1 once an attempt (50).
    w = W.make_workload("mmapread:bytes=2M,passes=2")
    t = str(W.write_file_trace(w, tmp_path / "m.vmt"))
    for kernel, pgfault in (("6.8", 33), ("6.1", 50)):
        st = vmemsim.replay(t, policy="clock-lru", frames=2000, read_ahead_kb=128,
                            kernel=kernel).stats
        assert (st["pgfault"], st["major_faults"]) == (pgfault, 1)
        assert st["pgpgin"] == 2048 and st["nr_mapped"] == 512 and st["file_mmaps"] == 1


def test_replay_of_a_file_workload_by_hand(tmp_path):
    # Two passes over 2 MiB (512 pages): with room for all, the second pass hits the cache.
    w = W.make_workload("fileread:bytes=2M,bs=64K,passes=2")
    t = str(W.write_file_trace(w, tmp_path / "r.vmt"))
    big = vmemsim.replay(t, policy="clock-lru", frames=2000, read_ahead_kb=128).stats
    assert big["pgpgin"] == 2048 and big["workingset_refault_file"] == 0
    assert big["nr_file_pages"] == 512
    # With 300 frames every page of the second pass is read again, as a refault.
    small = vmemsim.replay(t, policy="clock-lru", frames=300, read_ahead_kb=128).stats
    assert small["pgpgin"] == 4096 and small["workingset_refault_file"] == 512
    # The size record: a device larger than the range read is not read past the range's
    # readahead (the sync window at 0 is 32 pages here; async windows stay inside 2 MiB).
    wd = W.make_workload("fileread:bytes=2M,bs=64K,passes=1,disk=64M")
    td = str(W.write_file_trace(wd, tmp_path / "d.vmt"))
    st = vmemsim.replay(td, policy="clock-lru", frames=20000, read_ahead_kb=128).stats
    assert 2048 <= st["pgpgin"] <= 2048 + 128 * 2
    # Writes: dirty in the cache; fsync writes them all.
    ww = W.make_workload("filewrite:bytes=1M,bs=64K")
    tw = str(W.write_file_trace(ww, tmp_path / "w.vmt"))
    st = vmemsim.replay(tw, policy="clock-lru", frames=2000).stats
    assert st["pgpgout"] == 1024 and st["nr_dirty"] == 0 and st["pgpgin"] == 0


def test_parse_log_of_a_file_run():
    text = LOG.read_text()
    d = K.parse_log(text)
    # Values read off the log by hand.
    assert d["blockdev"]["read_ahead_kb"] == 128
    assert d["blockdev"]["size"] == (96 << 20) // 512
    assert d["vmstat"]["pgpgin"] == LOG_PGPGIN
    assert d["vmstat"]["workingset_refault_file"] == LOG_REFAULTS
    assert d["vmstat_before"]["nr_free_pages"] == LOG_FREE
    assert d["release"] == "6.1.0-48-amd64" and d["lru_gen"] == "0x0000"
    # What the cache held after the phase (mincore): the tail of the second pass and a few
    # pages before it; per zone, the file LRUs' sizes then.
    assert d["resident"][0] == [6608, 6615] and d["resident"][-1] == [13232, 24576]
    assert len(d["resident"]) == 6
    assert d["zones_after"]["DMA"] == {"free": 139, "managed": 3840, "inactive_file": 3648,
                                       "active_file": 0}
    assert d["zones_after"]["DMA32"]["inactive_file"] == 8530
    w = W.make_workload(LOG_SPEC)
    assert d["accesses"] == w.io_records()[0].size
    assert d["checksum"] == W.checksum(*w.sequence())


def test_a_file_run_compares_the_page_cache_rows():
    d = K.parse_log(LOG.read_text())
    d.pop("release")
    d.pop("lru_gen")
    run = K.KernelRun(kernel="linux-image-test 1", release="6.1.0-48-amd64", accel="tcg",
                      settings={}, workload="w", lru_gen="0x0000", **d)
    w = W.make_workload(LOG_SPEC)
    s = K.Settings(mem_mib=128, swap="none", lru="classic")
    case = C.compare(w, s, [run], kernel="6.1")
    assert [r.counter for r in case.rows] == [k for k, _, _ in C.FILE_COUNTERS]
    assert case.row("pgpgin").kernel == [LOG_PGPGIN]
    # The replay ran on the kernel's free pages with the device's read_ahead_kb.
    assert case.sim["frames"] == LOG_FREE
    assert case.row("pgpgin").vmemsim == 2 * (96 << 10)
    # pgscan_file less the pages skipped for their zone
    v = run.vmstat
    assert case.row("pgscan_file-pgskip").kernel == [
        v["pgscan_file"] - sum(n for k, n in v.items() if k.startswith("pgskip_"))]


def test_file_workloads_boot_with_the_block_device_and_its_queue(tmp_path):
    kdir = tmp_path / "k"
    (kdir / "boot").mkdir(parents=True)
    (kdir / "boot" / "vmlinuz-6.1.0-48-amd64").write_bytes(b"")
    mods = kdir / "lib" / "modules" / "6.1.0-48-amd64"
    mods.mkdir(parents=True)
    (mods / "modules.builtin").write_text(
        "kernel/drivers/virtio/virtio_pci.ko\nkernel/drivers/block/virtio_blk.ko\n")
    kernel = K.kernel_from_dir(kdir)
    w = W.make_workload("fileread:bytes=1M")
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    try:
        K.find_busybox()
    except K.KernelUnavailable:
        pytest.skip("needs busybox-static")
    out = tmp_path / "i.cpio"
    K.build_initramfs(kernel, w, K.Settings(mem_mib=128, swap="none"), out)
    data = out.read_bytes()
    init = data[data.index(b"#!/bin/busybox sh"):].split(b"poweroff")[0].decode()
    assert "/sys/block/vda/queue/read_ahead_kb" in init
    assert "/vmwl --snap --mode rw file /dev/vda read 1048576 65536 2" in init
    assert "swapon" not in init
    # with a swap disk the device is the second one
    K.build_initramfs(kernel, w, K.Settings(mem_mib=128, swap="disk"), out)
    assert b"file /dev/vdb read" in out.read_bytes()
    cmd = K.qemu_command(kernel, out, K.Settings(), "tcg", None, tmp_path / "log",
                         tmp_path / "d.img", writable=True)
    assert f"file={tmp_path / 'd.img'},if=virtio,format=raw,cache=unsafe" in cmd


def test_swap_none_is_refused_for_anonymous_workloads():
    with pytest.raises(VmemsimError, match="--swap none is for file workloads"):
        C.validate("gen:uniform:pages=100,n=10", swap="none")


def test_timed_file_workloads_run_on_the_timed_machine_with_the_virtio_disk():
    """`--timed` with a file workload: the calls on the timed machine, the device the virtio
    disk of the workload's size (as the timed swap disk is made: 50 µs a page at TCG 10 is
    5 µs, 4096 B / 5 µs = 819.2 MB/s). A sequential write of 1 MiB then `fsync` writes each
    of its 256 pages once: pgpgout 1,024 KiB, nothing read, nothing left dirty."""
    w = W.make_workload("filewrite:bytes=1M,bs=64K")
    t = C.Timing()
    assert t.file_device(w) == ("hdd:size=1024KiB,rpm=0,seek_us=0,min_seek_us=0,"
                                "bw_mbps=819.2,overhead_us=0,cache=0,max_pages=254")
    run = _stored_run()
    c = C.compare(w, K.Settings(swap="none"), [run], timing=t)
    assert (c.row("pgpgout").vmemsim, c.row("pgpgin").vmemsim) == (1024, 0)
    assert c.row("nr_dirty").vmemsim == 0
    assert c.sim["file_device_stats"]["pages_written"] == 256


def _stored_run():
    d = K.parse_log(LOG.read_text())
    d.pop("release")
    d.pop("lru_gen")
    return K.KernelRun(kernel="linux-image-test 1", release="6.1.0-48-amd64", accel="tcg",
                       settings={}, workload="file:" + W.make_workload(LOG_SPEC).name,
                       lru_gen="0x0000", **d)


def test_a_cached_file_case_boots_nothing_and_replays_the_simulator(tmp_path, monkeypatch):
    kdir = tmp_path / "kernel"
    (kdir / "boot").mkdir(parents=True)
    (kdir / "boot" / "vmlinuz-6.1.0-48-amd64").write_bytes(b"")
    (kdir / ".complete").write_text('{"package": "linux-image-test", "version": "1"}')
    kernel = K.kernel_from_dir(kdir)
    w = W.make_workload(LOG_SPEC)
    s = K.Settings(mem_mib=128, swap="none", lru="classic")
    C.save_runs(C._cache_file(tmp_path, kernel, w, s), [_stored_run(), _stored_run()])

    def boom(*a, **k):
        raise AssertionError("booted a kernel for a cached case")

    monkeypatch.setattr(C, "run_kernel", boom)
    (case,) = C.validate(LOG_SPEC, mem="128M", swap="none", lrus=("classic",), repeats=2,
                         cache=tmp_path, kernel_dir=kdir, model_kernel="6.1")
    assert case.workload == w.name
    assert case.row("pgpgin").kernel == [LOG_PGPGIN, LOG_PGPGIN]
    assert case.row("workingset_refault_file").kernel == [LOG_REFAULTS] * 2
    assert case.sim["frames"] == LOG_FREE
    assert "read_ahead_kb 128" in C.format_case(case)


def _can_boot():
    return K.cannot_boot()


@pytest.mark.skipif(_can_boot() is not None, reason=str(_can_boot()))
def test_a_real_kernel_file_run_end_to_end(tmp_path):
    """Boot Debian's kernel under QEMU, read a 64 MiB block device twice in a 96 MiB guest
    without swap, and compare the page cache's counters with vmemsim. About 10-20 s."""
    import json
    import sys

    kernels = W.cache_dir() / "kernels"
    kernels.mkdir(parents=True, exist_ok=True)
    (tmp_path / "kernels").symlink_to(kernels)
    out = subprocess.run(
        [sys.executable, "-m", "vmemsim", "validate", "fileread:bytes=64M,bs=64K,passes=2",
         "--cache", str(tmp_path), "--mem", "96M", "--swap", "none", "--lru", "classic",
         "--repeats", "1", "--model-kernel", "6.1", "--json"],
        capture_output=True, text=True, timeout=900,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (case,) = json.loads(out.stdout)
    run = case["kernel_runs"][0]
    assert run["blockdev"]["read_ahead_kb"] == 128
    assert run["blockdev"]["size"] * 512 == 64 << 20
    assert run["vmstat_before"]["nr_free_pages"] < 16384  # the device does not fit
    rows = {r["counter"]: r for r in case["rows"]}
    # Both passes read from the device (pgpgin in KiB), most second-pass pages refaults, and
    # vmemsim close to the kernel. On a quiet machine the kernel reads both passes whole
    # (131,072 KiB; vmemsim +0.0% on pgpgin, refaults and pgsteal_file); on a loaded one
    # (a CI run beside a build) the TCG guest's reclaim timing changed and it kept more of
    # the first pass (122,676 KiB: vmemsim +6.8%), one run without a spread to compare with:
    # hence 10%, and the matrix's committed runs (tests/test_kernel_validation_files.py)
    # hold the 5% target.
    assert rows["pgpgin"]["kernel_mean"] > 1.8 * (64 << 10)
    assert abs(rows["pgpgin"]["error"]) < 0.10
    assert abs(rows["workingset_refault_file"]["error"]) < 0.10
    assert abs(rows["pgsteal_file"]["error"]) < 0.10

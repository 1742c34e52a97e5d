"""The guest workload program (python/vmemsim/validate/vmwl.c), compiled and run natively, makes
exactly the access sequence the simulator replays: same pages, same write flags, same order,
and the checksum it prints equals the harness's."""

import re
import shutil
import subprocess

import numpy as np
import pytest

import vmemsim
from vmemsim.validate import workload as wl

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

SPECS = [
    "zipf:pages=5000,alpha=0.99,n=200000",
    "zipf:pages=5000000,alpha=1.2,n=50000",  # Feistel permutation (above 2^22 pages)
    "zipf:pages=3000,alpha=1,n=20000",  # alpha = 1 (the series' limit case)
    "zipf:pages=3000,alpha=0,shuffle=false,n=5000",
    "uniform:pages=777,n=10000,write=0.3",
    "hotcold:pages=10000,hot_pages=0.1,hot_accesses=0.9,n=30000,write=0.5",
    "mix:(zipf:pages=1e4,alpha=0.9)*0.7+(scan:pages=1000,start=20000)*0.3,n=1e5",
    "seq:(hotcold:pages=1e4,n=5e4,write=0.3)+(loop:pages=10,n=7)+(zipf:pages=100,n=9,seed=5)",
]


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return wl.build_program(tmp_path_factory.mktemp("vmwl"))


def run_dump(exe, tmp_path, w):
    dump = tmp_path / "dump.bin"
    extra = []
    if w.kind == "trace":
        w.write_sequence_file(tmp_path / "t.seq")
        extra = ["trace", str(tmp_path / "t.seq")]
    out = subprocess.run(
        [str(exe), "--mode", w.mode, "--dump", str(dump), *(extra or w.program_args())],
        check=True, capture_output=True, text=True,
    ).stdout
    raw = np.fromfile(dump, dtype=np.dtype([("p", "<u8"), ("w", "u1")]))
    m = re.search(r"@@vmwl accesses=(\d+) checksum=([0-9a-f]+)", out)
    return raw["p"], raw["w"].astype(bool), int(m.group(1)), m.group(2)


@pytest.mark.parametrize("mode", ["rw", "r"])
@pytest.mark.parametrize("spec", SPECS)
def test_program_draws_the_generators_sequence(exe, tmp_path, spec, mode):
    w = wl.make_workload("gen:" + spec, mode=mode, seed=7)
    pages, writes, n, chk = run_dump(exe, tmp_path, w)
    # Independent of the harness: the simulator's own generator, transformed by the mode.
    gp, gw = vmemsim.generate(spec, seed=7).to_arrays()
    if mode == "rw":
        exp_p, exp_w = gp, np.ones(gp.size, dtype=bool)
    else:
        # the write pass covers every page of every part's range, ascending
        exp_p, exp_w = w.sequence()
        assert np.array_equal(exp_p[len(exp_p) - gp.size:], gp)
        assert np.array_equal(exp_w[len(exp_w) - gp.size:], gw)
        prefix = exp_p[: len(exp_p) - gp.size]
        assert np.all(np.diff(prefix.astype(np.int64)) > 0)
        assert exp_w[: prefix.size].all()
    assert n == len(exp_p) == len(pages)
    assert np.array_equal(pages, exp_p)
    assert np.array_equal(writes, exp_w)
    assert chk == wl.checksum(exp_p, exp_w)


def test_write_pass_of_a_mix_covers_the_union_of_its_ranges(exe, tmp_path):
    # zipf over [0, 100) and a scan over [50, 150): the pass writes 0..149 once each.
    w = wl.make_workload(
        "gen:mix:(zipf:pages=100)*1+(scan:pages=100,start=50)*1,n=10", mode="r", seed=1
    )
    pages, writes, n, _ = run_dump(exe, tmp_path, w)
    assert list(pages[:150]) == list(range(150))
    assert n == 160


def test_program_replays_a_trace_file(exe, tmp_path):
    path = tmp_path / "t.txt"
    # Pages in three 2 MiB regions: 0.., 512*7.., 512*1000..; regions are packed in order.
    path.write_text("3 W\n3590 R\n512000 W\n1 R\n3584 R\n")
    w = wl.make_workload(str(path), mode="r")
    assert list(w.trace_pages) == [3, 512 + 6, 1024, 1, 512]
    pages, writes, n, chk = run_dump(exe, tmp_path, w)
    assert list(pages) == [1, 3, 512, 518, 1024, 3, 518, 1024, 1, 512]
    assert list(writes) == [True] * 5 + [True, False, True, False, False]
    assert chk == wl.checksum(pages, writes)
    # --mode rw: every access writes, no write pass
    w = wl.make_workload(str(path), mode="rw")
    pages, writes, n, chk = run_dump(exe, tmp_path, w)
    assert list(pages) == [3, 518, 1024, 1, 512] and writes.all()


def test_a_long_trace_streams_in_chunks(exe, tmp_path):
    # 600,000 records cross the program's 1 MiB (262,144-record) chunks; the last is partial.
    rng = np.random.default_rng(5)
    pages = rng.integers(0, 3000, 600_000).astype(np.uint64)
    writes = rng.random(600_000) < 0.3
    w = wl.Workload(spec="x", mode="r", seed=0, kind="trace", name="x",
                    trace_pages=pages, trace_writes=writes)
    got_p, got_w, n, chk = run_dump(exe, tmp_path, w)
    exp_p, exp_w = w.sequence()
    assert n == exp_p.size == 600_000 + np.unique(pages).size
    assert np.array_equal(got_p, exp_p) and np.array_equal(got_w, exp_w)
    assert chk == wl.checksum(exp_p, exp_w)


def test_checksum_by_hand():
    # one access: page 0, read: mix64(0 ^ mix64(0))
    def mix64(z):
        m = (1 << 64) - 1
        z = (z + 0x9E3779B97F4A7C15) & m
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        return z ^ (z >> 31)

    exp = (mix64(0 ^ mix64(0)) + mix64(((5 << 1) | 1) ^ mix64(1))) % (1 << 64)
    got = wl.checksum(np.array([0, 5], dtype=np.uint64), np.array([False, True]))
    assert got == f"{exp:016x}"


def test_cpu_accesses_split_each_write_into_a_load_and_a_store(tmp_path):
    # vmwl's touch() loads the page's counter and stores it back only for a write, so the
    # simulator replays each write as a read then a write of the same page (a read fault,
    # which keeps a swapped-in page's slot, then a write hit), and each read as it is.
    path = tmp_path / "t.txt"
    path.write_text("3 W\n1 R\n3 W\n")
    w = wl.make_workload(str(path), mode="r")
    # sequence: the write pass over pages 1 and 3, then the trace (pages as packed: 3, 1, 3)
    assert list(w.sequence()[0]) == [1, 3, 3, 1, 3]
    pages, writes, gup = w.cpu_accesses()
    # Before record 0 the program fills its trace buffer (5 records of 4 bytes: one page,
    # written by the device after get_user_pages pins it) and reads that page; the buffer
    # lies a PMD beyond the span of 4 pages: 1024.
    assert list(pages) == [1024, 1024, 1, 1, 3, 3, 3, 3, 1, 3, 3]
    assert list(writes) == [True, False, False, True, False, True, False, True, False, False,
                            True]
    assert list(gup) == [True] + [False] * 10
    w = wl.make_workload(str(path), mode="rw")
    pages, writes, gup = w.cpu_accesses()
    assert list(pages) == [1024, 1024, 3, 3, 1, 1, 3, 3]
    assert list(writes) == [True, False] + [False, True] * 3
    assert list(gup) == [True] + [False] * 7


def _vmwl_trace_loop(n, base, chunk_recs, recs_per_page):
    """vmwl.c's trace loop, access by access (CHUNK_RECS, fill_chunk, the memcpy out of the
    buffer), with a record shown as ("rec", k): an independent statement of the rule."""
    out = []
    rec_bytes = 4096 // recs_per_page  # 4 in vmwl.c
    for k in range(n):
        if k % chunk_recs == 0:
            left = n - k
            nbytes = (chunk_recs * rec_bytes if left >= chunk_recs
                      else (left * rec_bytes + 4095) // 4096 * 4096)
            out += [(base + j, True) for j in range(nbytes // 4096)]
        if k % recs_per_page == 0:  # the first record copied out of a buffer page
            out.append((base + (k % chunk_recs) // recs_per_page, False))
        out.append(("rec", k))
    return out


@pytest.mark.parametrize("n", [1, 5, 8, 9, 16, 17, 40])
def test_trace_buffer_accesses_follow_vmwl_c(n):
    # Chunks of 8 records with 2 records per buffer page (4 pages a chunk) stand for vmwl.c's
    # 262,144 records and 1,024 per page; the last chunk's fill rounds its bytes up to pages.
    chunk_recs, per_page = 8, 2
    extra, pages, writes, rec = wl.trace_buffer_accesses(n, 100, chunk_recs, per_page)
    got = []
    for k in range(n):
        got += [(int(p), bool(w)) for p, w, r in zip(pages, writes, rec) if r == k]
        got.append(("rec", k))
        assert extra[k] == sum(1 for r in rec if r <= k)
    assert got == _vmwl_trace_loop(n, 100, chunk_recs, per_page)


def test_trace_buffer_constants_are_vmwl_cs():
    src = wl.SOURCE.read_text()
    assert "#define CHUNK_BYTES (1024 * 1024)" in src
    assert "#define CHUNK_RECS (CHUNK_BYTES / 4)" in src
    assert wl.TRACE_CHUNK_RECS == 1024 * 1024 // 4 and wl.TRACE_RECS_PER_PAGE == 1024

"""``vmemsim workloads record``: driver smoke tests at tiny scale, and the generators the
drivers feed their programs.

A smoke test records its workload and checks the trace (it exists, has accesses, its distinct
pages are the sidecar's footprint) and the sidecar's fields. Each skips, naming what to
install, only when the recorder or the workload's program is missing (``make deps-debian``
installs the recorder's packages, ``make deps-drivers`` the programs). The pagerank recording
(igraph's import alone is ~1 G accesses, ~40 s recorded) runs only with
VMEMSIM_SLOW_TESTS=1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import vmemsim
from vmemsim.drivers import driver_names, missing_programs, record_workload
from vmemsim.drivers.pyengines import make_tpch_db, rmat_edges
from vmemsim.drivers.ycsb import fnv1a64, zeta, zipf_ranks
from vmemsim.recorder import available, read_recorded

_REC = available()

SIDECAR = {"workload", "trace", "scale", "seed", "options", "command", "client_commands",
           "programs", "duration_seconds", "accesses", "memory_references", "footprint_pages",
           "returncode", "complete", "trace_bytes", "page_size"}


def _smoke_prereq(name):
    if _REC is not None:
        pytest.skip(f"recorder unavailable: {_REC}")
    miss = missing_programs(name)
    if miss:
        pytest.skip(f"{name} needs: {'; '.join(miss)}")


def _smoke(tmp_path, name, scale, full=True, **opts):
    """``full=False``: no read of every record (read_recorded holds ~30 bytes per record in
    memory: cc1's and Python's start-up alone are tens of millions of records, igraph's
    import ~0.7 G)."""
    _smoke_prereq(name)
    side = record_workload(name, scale=scale, out_dir=str(tmp_path), seed=3, options=opts)
    trace = tmp_path / f"{name}.vmt"
    on_disk = json.loads((tmp_path / f"{name}.json").read_text())
    assert on_disk == json.loads(json.dumps(side))
    assert SIDECAR <= set(side), SIDECAR - set(side)
    assert side["seed"] == 3 and side["scale"] == scale
    assert side["complete"] and side["returncode"] == 0
    assert side["memory_references"] >= side["accesses"] > 0
    assert side["trace_bytes"] == trace.stat().st_size > 0
    assert all(v and v != "unknown" for v in side["programs"].values())
    assert not (tmp_path / f".{name}-work").exists()
    if not full:
        info = vmemsim.trace_info(str(trace), reuse=False)
        assert info.accesses == side["accesses"]
        return side, None
    rec = read_recorded(str(trace))
    assert len(rec["page"]) == side["accesses"]
    assert int(rec["count"].sum()) == side["memory_references"]
    assert np.unique(rec["page"]).size == side["footprint_pages"]
    return side, rec


def test_list_names_every_driver():
    out = subprocess.run([sys.executable, "-m", "vmemsim", "workloads", "list", "--json"],
                         capture_output=True, text=True, check=True).stdout
    names = [json.loads(line)["name"] for line in out.splitlines()]
    assert names == sorted(["redis", "memcached", "gzip", "pbzip2", "dd", "kernbench",
                            "sqlite-tpch", "pagerank", "stress-ng"])
    assert names == driver_names()


def test_unknown_workload_and_option_are_usage_errors(tmp_path):
    r = subprocess.run([sys.executable, "-m", "vmemsim", "workloads", "record", "nope"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "unknown workload 'nope'" in r.stderr
    with pytest.raises(ValueError, match="no option 'x'"):
        record_workload("gzip", out_dir=str(tmp_path), options={"x": "1"})


def test_gzip_reads_its_whole_input(tmp_path):
    side, rec = _smoke(tmp_path, "gzip", 0.01)
    # gzip reads the generated file through read(): the file I/O records cover it.
    n = side["params"]["input_bytes"]
    reads = [e for e in rec["events"] if e["op"] == "read" and e["path"].endswith("input.txt")]
    assert sum(e["len"] for e in reads) == n


def test_dd_copies_in_bs_sized_reads_and_writes(tmp_path):
    side, rec = _smoke(tmp_path, "dd", 1 / 512, bs="16K")
    n = side["params"]["input_bytes"]  # 128 KiB
    assert n == 131072
    for op, suffix in (("read", "input.bin"), ("write", "output.bin")):
        ev = [e for e in rec["events"] if e["op"] == op and e["path"].endswith(suffix)]
        assert [(e["offset"], e["len"]) for e in ev] == [(i * 16384, 16384) for i in range(8)]


def test_kernbench_records_cc1(tmp_path):
    side, _ = _smoke(tmp_path, "kernbench", 0.0125, full=False)
    assert os.path.basename(side["command"][0]) == "cc1"
    assert side["params"]["functions"] == 5


def test_pbzip2(tmp_path):
    side, rec = _smoke(tmp_path, "pbzip2", 0.01, threads="2")
    # The main thread and at least the two compressor threads.
    assert side["threads"] >= 3 and np.unique(rec["tid"]).size == side["threads"]


def _contiguous_runs(pages):
    u = np.unique(pages)
    return np.split(u, np.flatnonzero(np.diff(u) != 1) + 1)


def test_stress_ng_vm_records_its_forked_workers(tmp_path):
    # 2 workers, 1 MiB (scale 1/256 is below the 1 MiB floor), which stress-ng 0.15 divides
    # between them (older versions give each the whole), write64: every 64-bit word of the
    # buffer is written on each pass.
    side, rec = _smoke(tmp_path, "stress-ng", 1 / 256, method="write64")
    assert side["params"]["vm_bytes"] == 1 << 20 and side["params"]["vm_ops"] == 31
    # stress-ng's parent, and per worker the worker and (0.15) the child it forks to do the
    # work: all recorded, each process its own tids (pid * 1000 + 1 for a child's thread).
    assert side["processes"] >= 1 + 2
    tids = np.unique(rec["tid"]).tolist()
    assert tids[0] == 1 and len(tids) == side["threads"] == side["processes"]
    assert all(t > 1000 and t % 1000 == 1 for t in tids[1:])
    # Two processes each write every page of a range of at least 128 pages (a worker's
    # buffer), pages that stress-ng's parent never touches.
    sweepers = 0
    for t in tids[1:]:
        m = (rec["tid"] == t) & rec["write"]
        for run in _contiguous_runs(rec["page"][m]):
            if len(run) >= 128:
                sweepers += 1
                assert not np.isin(rec["page"][rec["tid"] == 1], run).any()
    assert sweepers == 2


def test_redis(tmp_path):
    side, _ = _smoke(tmp_path, "redis", 0.005)
    assert side["client_commands"][0][0] == "redis-benchmark"
    assert set(side["client"]["requests_per_second"]) == {"SET", "GET"}


@pytest.mark.parametrize("wl,reads", [("a", 0.5), ("c", 1.0)])
def test_memcached_ycsb(tmp_path, wl, reads):
    side, _ = _smoke(tmp_path, "memcached", 0.01, workload=wl)
    c = side["client"]
    assert c["reads"] + c["updates"] == 1000
    if reads == 1.0:
        assert c["updates"] == 0
    else:
        assert 400 < c["reads"] < 600  # binomial(1000, 0.5): 6 sigma
    assert c["read_hits"] == c["reads"]  # every key was loaded first


def test_sqlite_tpch(tmp_path):
    side, _ = _smoke(tmp_path, "sqlite-tpch", 0.02, full=False, queries="q1,q6")
    assert side["params"]["orders"] == 300 and side["params"]["customers"] == 30
    # SQLite reads its database with pread64: file I/O records.
    assert side["io_records"] > 0 and side["files"] >= 1


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "vmemsim", "workloads", "record", *args],
                          capture_output=True, text=True)


def test_cli_record_native_gives_the_slowdown(tmp_path):
    _smoke_prereq("dd")
    r = _cli("dd", "--scale", str(1 / 512), "--out", str(tmp_path), "--native", "--json")
    assert r.returncode == 0, r.stderr
    side = json.loads(r.stdout)
    assert side == json.loads((tmp_path / "dd.json").read_text())
    assert side["slowdown_of"] == "seconds" and side["native"]["returncode"] == 0
    assert side["slowdown"] == pytest.approx(side["duration_seconds"] / side["native"]["seconds"])
    assert side["trace"] == "dd.vmt" and (tmp_path / "dd.vmt").stat().st_size > 0


def test_cli_failing_program_exits_nonzero_and_says_so(tmp_path):
    _smoke_prereq("kernbench")
    r = _cli("kernbench", "--scale", "0.01", "--out", str(tmp_path), "-o", "opt=notanumber")
    assert r.returncode == 1
    assert "warning: the recorded program exited with status 1" in r.stderr
    assert json.loads((tmp_path / "kernbench.json").read_text())["returncode"] == 1


@pytest.mark.skipif(not os.environ.get("VMEMSIM_SLOW_TESTS"),
                    reason="slow (~40 s): set VMEMSIM_SLOW_TESTS=1")
def test_pagerank(tmp_path):
    side, _ = _smoke(tmp_path, "pagerank", 1 / 256, full=False)
    assert side["params"]["log2_vertices"] == 7


# ---------------------------------------------------------------- generators


def test_fnv1a64_reference_values():
    # FNV-1a 64 of the 8 zero bytes, computed from the algorithm by hand-rolled loop in
    # the FNV reference (offset basis, then xor 0 and multiply by the prime, 8 times).
    h = 0xCBF29CE484222325
    for _ in range(8):
        h = (h * 0x100000001B3) % 2**64
    assert fnv1a64(0) == h
    # One non-zero byte first: xor then multiply.
    h = ((0xCBF29CE484222325 ^ 0x61) * 0x100000001B3) % 2**64
    for _ in range(7):
        h = (h * 0x100000001B3) % 2**64
    assert fnv1a64(0x61) == h


def test_zipf_head_probabilities_are_exact():
    # Gray et al.'s method gives rank 0 probability 1/zeta(n) and rank 1 0.5^theta/zeta(n)
    # exactly; zeta(3, 1) = 1 + 1/2 + 1/3.
    assert zeta(3, 1.0) == pytest.approx(11 / 6)
    n, draws = 1000, 400_000
    r = zipf_ranks(n, draws, 0.99, np.random.default_rng(5))
    z = sum(1 / i**0.99 for i in range(1, n + 1))
    p0, p1 = 1 / z, 0.5**0.99 / z
    for rank, p in ((0, p0), (1, p1)):
        sd = (p * (1 - p) / draws) ** 0.5
        assert abs(np.mean(r == rank) - p) < 6 * sd
    assert r.min() >= 0 and r.max() < n


def test_rmat_quadrant_frequencies():
    # Before the permutation, the top bit of (src, dst) falls in quadrant a/b/c/d with
    # probabilities 0.57/0.19/0.19/0.05: check through log2_n = 1 (no other bits; the
    # permutation of 2 vertices is either identity or swap, so use the unpermuted counts
    # of equal/unequal pairs: a + d = 0.62 equal, b + c = 0.38 unequal).
    e = rmat_edges(1, 200_000, 7)
    eq = np.mean(e[:, 0] == e[:, 1])
    assert abs(eq - 0.62) < 6 * (0.62 * 0.38 / 200_000) ** 0.5


def test_tpch_tables_follow_the_spec_ranges(tmp_path):
    import sqlite3

    sizes = make_tpch_db(str(tmp_path / "t.db"), 0.0005, 1)
    assert sizes["customers"] == 75 and sizes["orders"] == 750
    db = sqlite3.connect(str(tmp_path / "t.db"))
    n, lo_q, hi_q, lo_d, hi_d = db.execute(
        "SELECT count(*), min(l_quantity), max(l_quantity), min(l_discount), "
        "max(l_discount) FROM lineitem").fetchone()
    assert n == sizes["lineitems"] and 750 <= n <= 7 * 750
    assert 1 <= lo_q and hi_q <= 50 and 0 <= lo_d and hi_d <= 0.10
    # Every order has 1..7 line items, numbered from 1.
    per = db.execute("SELECT count(*), min(l_linenumber), max(l_linenumber) FROM lineitem "
                     "GROUP BY l_orderkey").fetchall()
    assert len(per) == 750 and all(1 <= c <= 7 and lo == 1 and hi == c for c, lo, hi in per)
    # Order dates within 1992-01-01 .. 1998-08-02 less 151 days.
    lo, hi = db.execute("SELECT min(o_orderdate), max(o_orderdate) FROM orders").fetchone()
    assert "1992-01-01" <= lo and hi <= "1998-08-02"


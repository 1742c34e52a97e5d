"""The Python API for trace sources: generators as traces, writing and loading trace files,
trace summaries, reader options, and progress/cancellation of the new long operations."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest

import vmemsim
from vmemsim import VmemsimError
from conftest import BELADY, write_trace


def test_generated_object() -> None:
    g = vmemsim.generate("gen:zipf:pages=300,alpha=0.7,n=2500,write=0.5", seed=3)
    assert isinstance(g, vmemsim.Generated) and len(g) == g.accesses == 2500
    assert g.spec == "zipf:pages=300,alpha=0.7,n=2500,write=0.5" and g.seed == 3
    assert g.name.startswith("gen:zipf:") and "seed=3" in g.name
    pages, writes = g.to_arrays()
    assert pages.dtype == np.uint64 and writes.dtype == np.bool_ and len(pages) == 2500
    assert pages.max() < 300 and 0.4 < writes.mean() < 0.6
    assert np.array_equal(g.to_numpy(), pages)
    # Deterministic per seed; another seed gives another trace.
    assert np.array_equal(vmemsim.generate(g.spec, seed=3).to_numpy(), pages)
    assert not np.array_equal(vmemsim.generate(g.spec, seed=4).to_numpy(), pages)
    # Its name is a spec for the same accesses; a gen: string takes the replay's seed.
    assert np.array_equal(vmemsim.load_trace(g.name)[0], pages)
    assert np.array_equal(vmemsim.load_trace("gen:" + g.spec, seed=3)[0], pages)


def test_generated_as_replay_trace() -> None:
    g = vmemsim.generate("hotcold:pages=200,n=3000,write=0.3", seed=1)
    pages, writes = g.to_arrays()
    by_gen = vmemsim.replay(g, policy="arc", frames=40)
    by_str = vmemsim.replay("gen:hotcold:pages=200,n=3000,write=0.3", seed=1, policy="arc",
                            frames=40)
    by_arr = vmemsim.replay(pages, writes=writes, policy="arc", frames=40, seed=1)
    assert by_gen.trace == g.name
    assert dataclasses.replace(by_gen, seed=1) == by_str
    assert dataclasses.replace(by_arr, trace=g.name) == by_str
    assert by_gen.stats["writes"] == int(writes.sum())


@pytest.mark.parametrize("fmt", ["text", "csv", "oracle-general", "native"])
def test_write_and_load_every_format(tmp_path: Path, fmt: str) -> None:
    pages = np.array([5, 2**33, 0, 5, 17], dtype=np.uint64)
    writes = np.array([False, True, False, True, False])
    path = tmp_path / "t.data"
    assert vmemsim.write_trace(pages, path, format=fmt, writes=writes) == 5
    opts = {"csv": "op=2"} if fmt == "csv" else {}
    got_p, got_w = vmemsim.load_trace(path, format=fmt, **opts)
    assert np.array_equal(got_p, pages)
    assert np.array_equal(got_w, writes if fmt != "oracle-general" else np.zeros(5, bool))


def test_output_format_by_extension() -> None:
    assert vmemsim.output_format("a/b.vmt") == "native"
    assert vmemsim.output_format("x.oracleGeneral") == "oracle-general"
    assert vmemsim.output_format("x.oracleGeneral.bin") == "oracle-general"
    assert vmemsim.output_format("X.CSV") == "csv"
    assert vmemsim.output_format("x.trace") == "text"
    assert vmemsim.output_format("x.trace", default="native") == "native"


def test_write_trace_extension_and_convert(tmp_path: Path) -> None:
    g = vmemsim.generate("scan:pages=100")
    assert vmemsim.write_trace(g, tmp_path / "s.vmt") == 100
    assert vmemsim.trace_info(tmp_path / "s.vmt").distinct_pages == 100
    assert vmemsim.convert(tmp_path / "s.vmt", tmp_path / "s.csv") == 100
    assert (tmp_path / "s.csv").read_text().splitlines()[:3] == ["page,op", "0,R", "1,R"]
    with pytest.raises(VmemsimError, match="convert"):
        vmemsim.write_trace(str(tmp_path / "s.vmt"), tmp_path / "t.vmt")


def test_trace_info_api(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "b.txt", BELADY, [False, True] + [False] * 10)
    i = vmemsim.trace_info(path)
    assert isinstance(i, vmemsim.TraceInfo)
    assert (i.accesses, i.distinct_pages, i.reads, i.writes) == (12, 5, 11, 1)
    assert (i.min_page, i.max_page, i.footprint_bytes) == (1, 5, 5 * 4096)
    # Belady's string 1 2 3 4 1 2 5 1 2 3 4 5: the seven re-references are at LRU stack
    # distances 4 4 3 3 5 5 5 (e.g. the second 3 follows 4 1 2 5 1 2: {4, 1, 2, 5} and
    # itself). Sorted 3 3 4 4 5 5 5: nearest-rank p50 = 4th = 4, p90 = p99 = 7th = 5.
    assert i.reuse_distance == vmemsim.ReuseDistance(p50=4, p90=5, p99=5, max=5,
                                                     mean=pytest.approx(29 / 7))
    assert vmemsim.trace_info(path, reuse=False).reuse_distance is None
    assert dataclasses.replace(vmemsim.trace_info(BELADY), trace=i.trace, writes=1,
                               reads=11, write_fraction=i.write_fraction) == i
    assert i.to_dict()["reuse_distance"]["p50"] == 4


def test_reader_options_only_for_files(tmp_path: Path) -> None:
    for kw in ({"format": "text"}, {"page_size": 8192}, {"addresses": True}, {"csv": "op=2"}):
        with pytest.raises(VmemsimError, match="only for trace files"):
            vmemsim.trace_info(BELADY, **kw)
        with pytest.raises(VmemsimError, match="only for trace files"):
            vmemsim.replay("gen:scan:pages=5", frames=2, **kw)
    with pytest.raises(VmemsimError, match="writes"):
        vmemsim.replay(vmemsim.generate("scan:pages=5"), frames=2, writes=[True] * 5)
    with pytest.raises(VmemsimError, match="zipf.alpha"):
        vmemsim.generate("zipf:pages=10,n=5,alpha=-1")
    with pytest.raises(VmemsimError, match="page_size"):
        vmemsim.trace_info(tmp_path / "x.txt", page_size=3)


def test_csv_mapping_as_dict(tmp_path: Path) -> None:
    t = tmp_path / "m.csv"
    t.write_text("addr;kind\n0x3000;store\n0x3008;load\n")
    opts = {"column": "addr", "op": "kind", "delimiter": "semicolon"}
    i = vmemsim.trace_info(t, csv=opts, addresses=True)
    assert (i.accesses, i.distinct_pages, i.writes, i.min_page) == (2, 1, 1, 3)


def test_read_trace_api() -> None:
    r = vmemsim.read_trace("gen:loop:pages=10,n=1000")
    assert isinstance(r, vmemsim.ReadStats) and r.accesses == 1000
    assert r.seconds >= 0 and r.accesses_per_second > 0


class Enough(Exception):
    pass


def test_mrc_progress_then_cancel() -> None:
    # Far too long to finish (2 x 50M accesses): the callback sees a few ticks, then stops it.
    g = vmemsim.generate("uniform:pages=100000,n=50000000", seed=1)
    calls: list = []

    def tick(done, total):
        calls.append((done, total))
        if len(calls) == 3:
            raise Enough()

    t0 = time.perf_counter()
    with pytest.raises(Enough):
        vmemsim.mrc(g, policy="fifo", sizes=[1000, 5000], workers=2, progress=tick)
    assert time.perf_counter() - t0 < 10
    assert all(t == 100_000_000 for _, t in calls)  # both replays' accesses
    dones = [d for d, _ in calls]
    assert dones == sorted(dones) and dones[-1] < 100_000_000


@pytest.mark.parametrize("what", ["read", "info", "convert", "load"])
def test_progress_error_stops_trace_work(tmp_path: Path, what: str) -> None:
    g = vmemsim.generate("uniform:pages=1000000,n=200000000")
    out = tmp_path / "big.vmt"

    def boom(done, total):
        assert total == 200_000_000
        raise Enough()

    run = {
        "read": lambda: vmemsim.read_trace(g, progress=boom),
        "info": lambda: vmemsim.trace_info(g, reuse=False, progress=boom),
        "convert": lambda: vmemsim.convert(g, out, progress=boom),
        "load": lambda: vmemsim.load_trace(g, progress=boom),
    }[what]
    t0 = time.perf_counter()
    with pytest.raises(Enough):
        run()
    assert time.perf_counter() - t0 < 5  # stopped at the first tick, not after 200M accesses
    assert not out.exists()  # a stopped convert removes its partial file


def test_csv_written_by_convert_keeps_its_writes_without_a_mapping(tmp_path: Path) -> None:
    # `trace convert` to CSV writes a `page,op` header; reading it back without --csv used to
    # take every access as a read (writes 49,834 -> 0 and most swap-outs gone, exit 0).
    g = vmemsim.generate("uniform:pages=300,n=2000,write=0.5", seed=3)
    out = tmp_path / "t.csv"
    vmemsim.convert(g, out)
    assert out.read_text().splitlines()[0] == "page,op"
    a = vmemsim.replay(g, policy="lru", frames=100)
    b = vmemsim.replay(str(out), policy="lru", frames=100)
    assert b.stats["writes"] == a.stats["writes"] > 900
    assert b.stats["pswpout"] == a.stats["pswpout"] > 0

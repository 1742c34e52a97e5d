"""The trace commands (`trace info`, `trace convert`, `trace read`, `generate`) and trace
sources everywhere (reader options, `gen:` specs): counts computed by hand, round trips
through every format, determinism per seed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import vmemsim
from conftest import BELADY, run_cli, run_json, write_trace

# Pages 10 20 30 20 10 10 40 20, writes at positions 1 and 6 (0-based).
HAND_PAGES = [10, 20, 30, 20, 10, 10, 40, 20]
HAND_WRITES = [i in (1, 6) for i in range(8)]


@pytest.fixture
def hand_trace(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "hand.txt", HAND_PAGES, HAND_WRITES)


def test_trace_info_by_hand(hand_trace: Path) -> None:
    i = run_json("trace", "info", str(hand_trace))
    assert (i["accesses"], i["reads"], i["writes"]) == (8, 6, 2)
    assert i["distinct_pages"] == 4
    assert i["footprint_bytes"] == 4 * 4096
    assert (i["min_page"], i["max_page"]) == (10, 40)
    assert i["cold_fraction"] == 0.5
    # Re-references and their LRU stack distances (distinct pages since the previous access
    # to the page, itself included): 20 after {30, 20} = 2; 10 after {20, 30, 10} = 3;
    # 10 again = 1; 20 after {10, 40, 20} = 3. Sorted 1 2 3 3: nearest-rank p50 = 2,
    # p90 = p99 = max = 3, mean 9/4.
    assert i["reuse_distance"] == {"p50": 2, "p90": 3, "p99": 3, "max": 3, "mean": 2.25}
    # Without reuse distances: the same counts, no percentiles.
    n = run_json("trace", "info", str(hand_trace), "--no-reuse")
    assert n["reuse_distance"] is None
    assert {k: v for k, v in n.items() if k != "reuse_distance"} == {
        k: v for k, v in i.items() if k != "reuse_distance"
    }


def test_trace_info_table(hand_trace: Path) -> None:
    p = run_cli("trace", "info", str(hand_trace))
    assert p.returncode == 0 and p.stderr == ""
    rows = {ln[:15].strip(): ln[15:].strip() for ln in p.stdout.splitlines()}
    assert rows["accesses"] == "8" and rows["distinct pages"] == "4"
    assert rows["writes"].startswith("2 (25.0%)")
    assert rows["reuse distance"].startswith("p50 2, p90 3, p99 3, max 3, mean 2.2")


def test_addresses_and_page_size(tmp_path: Path) -> None:
    # Byte addresses 0x1000, 0x1fff (page 1 of 4 KiB), 0x2000 (page 2), 0x0 (page 0).
    t = tmp_path / "addr.txt"
    t.write_text("0x1000\n0x1fff W\n0x2000\n0x0\n")
    i = run_json("trace", "info", str(t), "--addresses")
    assert (i["accesses"], i["distinct_pages"], i["writes"]) == (4, 3, 1)
    assert (i["min_page"], i["max_page"]) == (0, 2)
    # 8 KiB pages: 0x1000 and 0x1fff and 0x0 are page 0, 0x2000 is page 1.
    i = run_json("trace", "info", str(t), "--addresses", "--page-size", "8192")
    assert (i["distinct_pages"], i["max_page"], i["footprint_bytes"]) == (2, 1, 2 * 8192)
    # Replay sees the same pages: 3 distinct, LRU with 3 frames faults only cold.
    r = run_json(
        "replay", "--trace", str(t), "--addresses", "--policy", "lru", "--frames", "3"
    )
    assert r["faults"] == 3


def test_csv_column_mapping(tmp_path: Path) -> None:
    t = tmp_path / "t.csv"
    t.write_text("ts,addr,type\n1,0x5000,read\n2,0x6000,write\n3,0x5010,read\n")
    i = run_json("trace", "info", str(t), "--csv", "column=addr,op=type", "--addresses")
    assert (i["accesses"], i["distinct_pages"], i["reads"], i["writes"]) == (3, 2, 2, 1)
    assert (i["min_page"], i["max_page"]) == (5, 6)
    # By 1-based index, same answer.
    j = run_json("trace", "info", str(t), "--csv", "column=2,op=3", "--addresses")
    assert j == i


def test_convert_round_trip_preserves_accesses(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    pages = rng.integers(0, 3000, size=5000).tolist() + [2**40 + 7, 0]
    writes = (rng.random(len(pages)) < 0.3).tolist()
    src = write_trace(tmp_path / "a.txt", pages, writes)
    vmt, og, back = tmp_path / "a.vmt", tmp_path / "a.oracleGeneral", tmp_path / "b.txt"
    for a, b in ((src, vmt), (vmt, og), (og, back)):
        p = run_cli("trace", "convert", str(a), str(b))
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith(f"wrote {len(pages):,} accesses to {b}")
    assert vmemsim.trace_info(vmt).trace == str(vmt)  # detected as native by its magic
    got_p, got_w = vmemsim.load_trace(vmt)
    assert got_p.tolist() == pages and got_w.tolist() == writes
    # oracleGeneral has no operation field: the pages survive, writes become reads.
    got_p, got_w = vmemsim.load_trace(back)
    assert got_p.tolist() == pages and not got_w.any()
    # Text to native to text keeps the write bits.
    back2 = tmp_path / "c.txt"
    assert run_cli("trace", "convert", str(vmt), str(back2)).returncode == 0
    got_p, got_w = vmemsim.load_trace(back2)
    assert got_p.tolist() == pages and got_w.tolist() == writes


def test_convert_to_and_from_formats(tmp_path: Path) -> None:
    src = write_trace(tmp_path / "a.trace", BELADY, [True] + [False] * 11)
    out = tmp_path / "x.data"
    p = run_cli("trace", "convert", str(src), str(out), "--to", "csv")
    assert p.returncode == 0, p.stderr
    assert "(csv)" in p.stdout
    # The CSV writer's operation is column 2; the input must be named as CSV (no .csv).
    i = run_json("trace", "info", str(out), "--format", "csv", "--csv", "op=2")
    assert (i["accesses"], i["writes"], i["distinct_pages"]) == (12, 1, 5)
    back = tmp_path / "y.vmt"
    p = run_cli("trace", "convert", str(out), str(back), "--from", "csv", "--csv", "op=2")
    assert p.returncode == 0, p.stderr
    assert vmemsim.load_trace(back)[0].tolist() == BELADY


def test_trace_read(tmp_path: Path, hand_trace: Path) -> None:
    p = run_cli("trace", "read", str(hand_trace))
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.startswith("8 accesses in ") and "M accesses/s" in p.stdout
    r = run_json("trace", "read", "gen:scan:pages=1000", "--seed", "1")
    assert r["accesses"] == 1000 and r["maccesses_per_second"] > 0


def test_generate_is_deterministic_per_seed(tmp_path: Path) -> None:
    spec = "zipf:pages=500,alpha=0.8,n=3000,write=0.2"
    outs = []
    for name, seed in (("a", "4"), ("b", "4"), ("c", "5")):
        out = tmp_path / f"{name}.vmt"
        p = run_cli("generate", spec, "--out", str(out), "--seed", seed)
        assert p.returncode == 0, p.stderr
        assert f"seed={seed}" in p.stdout
        outs.append(vmemsim.load_trace(out))
    (pa, wa), (pb, wb), (pc, wc) = outs
    assert len(pa) == 3000 and pa.max() < 500
    assert np.array_equal(pa, pb) and np.array_equal(wa, wb)
    assert not np.array_equal(pa, pc)
    # The file holds what the generator yields when used directly.
    gp, gw = vmemsim.generate(spec, seed=4).to_arrays()
    assert np.array_equal(gp, pa) and np.array_equal(gw, wa)


def test_generate_formats_by_extension(tmp_path: Path) -> None:
    for name, fmt in (("g.txt", "text"), ("g.oracleGeneral", "oracle-general"),
                      ("g.csv", "csv"), ("g.out", "native")):
        p = run_cli("generate", "gen:scan:pages=50", "--out", str(tmp_path / name))
        assert p.returncode == 0, p.stderr
        assert f"({fmt})" in p.stdout
    assert (tmp_path / "g.txt").read_text().splitlines()[1:4] == ["0", "1", "2"]
    assert vmemsim.load_trace(tmp_path / "g.out", format="native")[0].tolist() == list(range(50))


def test_generator_as_replay_trace(tmp_path: Path) -> None:
    spec = "hotcold:pages=400,n=4000,write=0.3"
    out = tmp_path / "h.vmt"
    assert run_cli("generate", spec, "--out", str(out), "--seed", "9").returncode == 0
    by_file = run_json("replay", "--trace", str(out), "--policy", "clock", "--frames", "50")
    by_gen = run_json(
        "replay", "--trace", f"gen:{spec}", "--seed", "9", "--policy", "clock", "--frames", "50"
    )
    assert by_gen["trace"].startswith("gen:hotcold:") and "seed=9" in by_gen["trace"]
    assert {k: v for k, v in by_gen.items() if k not in ("trace", "seed")} == {
        k: v for k, v in by_file.items() if k not in ("trace", "seed")
    }
    # The result's trace name is itself a spec that gives the same run.
    again = run_json("replay", "--trace", by_gen["trace"], "--seed", "9", "--policy", "clock",
                     "--frames", "50")
    assert again == by_gen


def test_generate_help_documents_grammar() -> None:
    p = run_cli("generate", "--help")
    assert p.returncode == 0
    for word in ("mix:", "seq:", "zipf", "scan", "hotcold", "gen:SPEC"):
        assert word in p.stdout
    assert "gen:SPEC" in run_cli("replay", "--help").stdout


def test_progress_flag_keeps_stdout_clean(tmp_path: Path) -> None:
    out = tmp_path / "p.vmt"
    p = run_cli("generate", "scan:pages=100", "--out", str(out), "--progress")
    assert p.returncode == 0 and "Traceback" not in p.stderr
    p = run_cli("trace", "info", str(out), "--json", "--progress")
    assert p.returncode == 0
    assert json.loads(p.stdout)["accesses"] == 100


@pytest.mark.parametrize("command", ["convert", "mrc"])
def test_ctrl_c_stops_and_cleans_up(tmp_path: Path, command: str) -> None:
    # A run far too long to finish; SIGINT once it has started ends it within a moment with
    # status 130 and, for convert, no half-written file.
    out = tmp_path / "big.vmt"
    spec = "gen:uniform:pages=1000000,n=1000000000"
    argv = {
        "convert": ["trace", "convert", spec, str(out)],
        "mrc": ["mrc", "--trace", spec, "--policy", "fifo", "--sizes", "1000",
                "--csv-out", str(out)],
    }[command]
    p = subprocess.Popen([sys.executable, "-m", "vmemsim", *argv, "--progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        # Started: convert has created its output; mrc has printed a progress line.
        while time.monotonic() < deadline and p.poll() is None:
            if command == "convert" and out.exists():
                break
            if command == "mrc":
                line = p.stderr.readline()
                if "accesses" in line:
                    break
            time.sleep(0.02)
        assert p.poll() is None, p.communicate()
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert time.monotonic() - t0 < 5
    assert p.returncode == 130, stderr
    assert "Traceback" not in stderr and stderr.rstrip().endswith("vmemsim: interrupted")
    assert stdout == ""
    assert not out.exists()

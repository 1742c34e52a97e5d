"""Imports of public formats (`vmemsim trace convert --from msr|lackey`, `vmemsim.import_trace`):
hand-written inputs, records expected by hand, errors naming the file and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import vmemsim
from vmemsim.recorder import read_recorded
from conftest import run_cli

MSR = """\
128166372003061629,hm,1,Read,3154325504,4096,30399
128166372003062629,hm,1,Write,8192,8192,12
128166372003061729,web,0,Read,0,512,5
"""

LACKEY = """\
==77== Lackey, an example Valgrind tool
I  00401000,3
 L 7ff000010,8
 S 7ff000ff8,8
I  00401003,4
 M 00602010,4
 L 7ff000010,8
I  00402000,2
==77== ERROR SUMMARY: 0 errors
"""


def test_msr_import_by_hand(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_text(MSR)
    out = tmp_path / "t.vmt"
    p = run_cli("trace", "convert", str(src), str(out), "--from", "msr")
    assert p.returncode == 0, p.stderr
    assert "wrote 0 accesses" in p.stdout and "3 file I/O records (2 files)" in p.stdout
    r = read_recorded(str(out))
    assert r["version"] == 2 and len(r["page"]) == 0
    assert r["files"] == {0: "hm/1", 1: "web/0"}
    got = [(e["op"], e["file"], e["offset"], e["len"], e["stamp"], e["tid"]) for e in r["events"]]
    # Stamps: (ts - first ts) * 100 ns: 1000 ticks = 100000 ns, 100 ticks = 10000 ns (the
    # third row is earlier than the second: kept, in file order).
    assert got == [
        ("pread64", 0, 3154325504, 4096, 0, 0),
        ("pwrite64", 0, 8192, 8192, 100_000, 0),
        ("pread64", 1, 0, 512, 10_000, 0),
    ]


def test_msr_gzip_and_api(tmp_path: Path) -> None:
    src = tmp_path / "t.csv.gz"
    src.write_bytes(gzip.compress(MSR.encode()))
    st = vmemsim.import_trace(src, tmp_path / "g.vmt", "snia")
    assert (st["io_records"], st["files"], st["out_of_order"]) == (3, 2, 1)
    assert st["io_bytes"] == 4096 + 8192 + 512
    # convert() hands the import formats to import_trace and counts records.
    assert vmemsim.convert(src, tmp_path / "c.vmt", from_format="msr") == 3


def test_msr_malformed_row_names_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "bad.csv"
    src.write_text(MSR + "128166372003070000,hm,1,Read,4096\n")
    out = tmp_path / "bad.vmt"
    p = run_cli("trace", "convert", str(src), str(out), "--from", "msr")
    assert p.returncode == 2
    assert p.stderr.startswith(f"vmemsim: error: {src}: line 4: 5 fields, expected 7")
    assert not out.exists()
    src.write_text(MSR.replace("Write", "Flush"))
    p = run_cli("trace", "convert", str(src), str(out), "--from", "msr")
    assert p.returncode == 2
    assert p.stderr.strip() == (
        f"vmemsim: error: {src}: line 2: Type: 'Flush' is neither Read nor Write"
    )


def test_lackey_import_by_hand(tmp_path: Path) -> None:
    src = tmp_path / "l.out"
    src.write_text(LACKEY)
    out = tmp_path / "l.vmt"
    p = run_cli("trace", "convert", str(src), str(out), "--from", "lackey")
    assert p.returncode == 0, p.stderr
    r = read_recorded(str(out))
    # 4 KiB pages: 0x7ff000010 and 0x7ff000ff8 are page 0x7ff000, 0x602010 page 0x602.
    # Runs: page 0x7ff000 (L, S: 2 accesses, a write, after 1 instruction), page 0x602
    # (M: 2 accesses, after 2), page 0x7ff000 (L, after 2).
    rows = list(
        zip(
            r["page"].tolist(), r["write"].tolist(), r["count"].tolist(),
            r["stamp"].tolist(), r["tid"].tolist(), r["ifetch"].tolist(),
        )
    )
    assert rows == [
        (0x7FF000, True, 2, 1, 1, False),
        (0x602, True, 2, 2, 1, False),
        (0x7FF000, False, 1, 2, 1, False),
    ]
    # As a plain trace: one access per record.
    info = vmemsim.trace_info(str(out))
    assert (info.accesses, info.writes, info.distinct_pages) == (3, 2, 2)

    # With --ifetch: fetch runs 0x401 (2 instructions, stamp 0) and 0x402 (stamp 2), each
    # written when the next fetch leaves its page or at the end.
    p = run_cli("trace", "convert", str(src), str(out), "--from", "lackey", "--ifetch")
    assert p.returncode == 0, p.stderr
    r = read_recorded(str(out))
    fetches = [
        (pg, c, s)
        for pg, c, s, f in zip(r["page"].tolist(), r["count"].tolist(),
                               r["stamp"].tolist(), r["ifetch"].tolist())
        if f
    ]
    assert fetches == [(0x401, 2, 0), (0x402, 1, 2)]
    assert len(r["page"]) == 5


def test_lackey_bad_line_and_options(tmp_path: Path) -> None:
    src = tmp_path / "l.out"
    src.write_text(LACKEY.replace(" M 00602010,4", " M 00602010"))
    p = run_cli("trace", "convert", str(src), str(tmp_path / "o.vmt"), "--from", "lackey")
    assert p.returncode == 2
    assert p.stderr.strip() == (
        f"vmemsim: error: {src}: line 6: expected ADDR,SIZE: 'M 00602010'"
    )
    src.write_text(LACKEY)
    for extra, msg in (
        (["--to", "csv"], "--to: an import from lackey writes a recorded trace (native)"),
        (["--addresses"], "--addresses: not an option of an import from lackey"),
    ):
        p = run_cli("trace", "convert", str(src), str(tmp_path / "o.vmt"), "--from",
                    "lackey", *extra)
        assert p.returncode == 2 and msg in p.stderr, p.stderr
    p = run_cli("trace", "convert", str(src), str(tmp_path / "o.vmt"), "--ifetch")
    assert p.returncode == 2 and "--ifetch: only with --from lackey" in p.stderr
    with pytest.raises(vmemsim.VmemsimError, match="ifetch: instruction fetches are only"):
        vmemsim.import_trace(src, tmp_path / "m.vmt", "msr", ifetch=True)


def test_replay_of_an_import_goes_through_the_page_cache(tmp_path: Path) -> None:
    # An MSR import is file I/O only (2 file records + 2 I/O records here), replayed through
    # the page cache. Disk hm/1 (its size 8 KiB: the furthest byte read) is read at page 1:
    # not index 0, not the expected index of an empty readahead state, no previous read, no
    # cached page before it (`try_context_readahead` finds none): a small random read of just
    # that page (pgpgin 4 KiB). Disk hm/2 gets two whole pages written: no read, dirty. In 4
    # frames the dirty limits are 0 (`domain_dirty_limits`: at most 2 free + 3 file pages + 1
    # dirtyable, 819 × 6 / 4096 = 1 and 409 × 6 / 4096 = 0 pages), so `balance_dirty_pages`
    # sends each dirtied page to background writeback at once: pgpgout 8 KiB, none dirty at
    # the end; in 64 frames (MG-LRU below) the 2 dirty pages stay under the threshold.
    # An empty text trace says it is empty.
    src = tmp_path / "m.csv"
    src.write_text("128166372003061629,hm,1,Read,4096,4096,30\n"
                   "128166372003061630,hm,2,Write,0,8192,30\n")
    out = tmp_path / "m.vmt"
    assert run_cli("trace", "convert", str(src), str(out), "--from", "msr").returncode == 0
    p = run_cli("replay", "--trace", str(out), "--policy", "lru", "--frames", "4", "--json")
    assert p.returncode == 0, p.stderr
    stats = json.loads(p.stdout)["stats"]
    assert {k: stats[k] for k in ("accesses", "file_io", "file_reads", "pgpgin", "pgpgout",
                                  "nr_file_pages", "nr_dirty")} == {
        "accesses": 0, "file_io": 2, "file_reads": 1, "pgpgin": 4, "pgpgout": 8,
        "nr_file_pages": 3, "nr_dirty": 0}
    assert stats["wb_background"] == 2
    # MG-LRU models file pages too: 64 frames hold the 3 pages, nothing is reclaimed, so the
    # same reads and writes as above.
    p = run_cli("replay", "--trace", str(out), "--policy", "mglru", "--frames", "64", "--json")
    assert p.returncode == 0, p.stderr
    stats = json.loads(p.stdout)["stats"]
    assert {k: stats[k] for k in ("accesses", "file_io", "file_reads", "pgpgin", "pgpgout",
                                  "nr_file_pages", "nr_dirty")} == {
        "accesses": 0, "file_io": 2, "file_reads": 1, "pgpgin": 4, "pgpgout": 0,
        "nr_file_pages": 3, "nr_dirty": 2}
    # opt does not (its future covers page accesses only): an error naming it.
    p = run_cli("replay", "--trace", str(out), "--policy", "opt", "--frames", "64")
    assert p.returncode == 2 and "opt does not model the page cache" in p.stderr
    empty = tmp_path / "e.txt"
    empty.write_text("# nothing\n")
    p = run_cli("replay", "--trace", str(empty), "--policy", "lru", "--frames", "4")
    assert p.returncode == 2 and "the trace is empty" in p.stderr


def test_msr_import_larger_than_memory_replays_under_mglru(tmp_path: Path) -> None:
    # Two sequential passes of 4 KiB reads over a 300-page disk through 64 frames, under
    # MG-LRU (file pages: their own generations and tiers, shadows at reclaim) and under
    # classic LRU. Whatever the policy: each of the 300 pages is read in the first pass; at
    # most 64 are cached when the second pass starts, and those are the last read (pages
    # >= 236: a pass reads in order), so pages 0..235 are read again, each a refault of a
    # file page whose shadow the first pass left. No anonymous memory: every page scanned
    # and reclaimed is a file page, every reclaim is one eviction, and clean pages are
    # dropped without I/O (pgpgout 0).
    rows = [f"{128166372003061629 + i},hm,1,Read,{(i % 300) * 4096},4096,30" for i in range(600)]
    src = tmp_path / "s.csv"
    src.write_text("\n".join(rows) + "\n")
    out = tmp_path / "s.vmt"
    assert run_cli("trace", "convert", str(src), str(out), "--from", "msr").returncode == 0
    for policy in ("mglru", "clock-lru"):
        p = run_cli("replay", "--trace", str(out), "--policy", policy, "--frames", "64",
                    "--json")
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        stats, pc = doc["stats"], doc["policy_counters"]
        assert stats["file_io"] == 600 and stats["accesses"] == 0
        assert stats["pgpgin"] == 4 * stats["file_reads"]
        assert stats["file_reads"] >= 300 + 236
        assert stats["workingset_refault_file"] >= 236
        assert stats["nr_file_pages"] <= 64 and stats["nr_dirty"] == 0
        assert stats["pgpgout"] == 0 and stats["workingset_refault_anon"] == 0
        reclaimed = stats["pgsteal_kswapd"] + stats["pgsteal_direct"]
        assert pc["pgsteal_file"] == stats["evictions"] == reclaimed
        assert pc["pgscan_file"] >= pc["pgsteal_file"] and pc["pgscan_anon"] == 0
        assert pc["workingset_activate_file"] <= stats["workingset_refault_file"]
        # Every page read in is either still cached or was evicted.
        assert stats["file_reads"] == stats["nr_file_pages"] + stats["evictions"]
        again = run_cli("replay", "--trace", str(out), "--policy", policy, "--frames", "64",
                        "--json")
        assert json.loads(again.stdout) == doc

"""`vmemsim run 'trace:path=FILE'`: a trace file as a workload of the timed machine.

The expected counts are worked out from the trace written here (its length, its distinct
pages, its writes), and checked against the untimed `vmemsim replay` of the same file where
the two machines must agree."""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import pytest

from conftest import run_cli, run_json, write_trace

#: Distinct pages of the trace below: 150 just under the top of a 48-bit user address space
#: (0x7fff_f000_0000 bytes = page 0x7_ffff_0000), spread out, and 150 object ids far beyond a
#: 48-bit space (which the machine maps to dense page numbers).
PAGES = [0x7_FFFF_0000 + 7 * i for i in range(150)] + [
    0xDEAD_BEEF_0000_0000 + (i << 24) for i in range(150)
]
K = len(PAGES)


def trace() -> Tuple[List[int], List[bool]]:
    """1,500 accesses: step 37 (coprime with 300) through PAGES, so every page is touched
    5 times; every 4th access a write."""
    n = 1500
    pages = [PAGES[(i * 37) % K] for i in range(n)]
    writes = [i % 4 == 0 for i in range(n)]
    return pages, writes


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    pages, writes = trace()
    return write_trace(tmp_path / "t.txt", pages, writes)


def run_trace(spec: str, *args: str) -> dict:
    return run_json("run", spec, "--policy", "clock-lru", "--cpus", "2", *args)


def test_trace_that_fits_faults_each_page_once_as_replay_does(trace_file):
    pages, writes = trace()
    assert len(set(pages)) == K
    frames = str(4 * K)
    r = run_trace(f"trace:path={trace_file}", "--frames", frames)
    assert r["workload"] == (
        f"trace:path={trace_file},format=text,page_size=4096,addresses=0,compute_ns=0,"
        "class=numeric,threads=1,seed=0"
    )
    assert r["footprint_pages"] == K
    assert r["frames"] == 4 * K
    s = r["stats"]
    assert s["accesses"] == len(pages)
    assert s["writes"] == sum(writes)
    assert s["first_touch"] == K
    assert s["minor_faults"] == K and s["faults"] == K
    assert s["major_faults"] == 0 and s["pswpout"] == 0 and s["evictions"] == 0
    assert r["vmstat"]["pgfault"] == K and r["vmstat"]["pgmajfault"] == 0
    assert r["threads"][0]["accesses"] == len(pages)

    # The untimed replay of the same file in the same memory: the same counts.
    p = run_json("replay", "--trace", str(trace_file), "--policy", "clock-lru",
                 "--frames", frames)
    for k in ("accesses", "writes", "faults", "minor_faults", "major_faults", "first_touch"):
        assert p["stats"][k] == s[k], k


def test_frames_percentage_is_of_the_exact_footprint_and_pressure_swaps(trace_file):
    pages, _ = trace()
    r = run_trace(f"trace:path={trace_file}", "--frames", "50%")
    assert r["footprint_pages"] == K
    assert abs(r["frames"] - K / 2) <= 1
    s = r["stats"]
    # Every page is touched 5 times in a cycle through all 300: with half of them in memory
    # the later rounds must swap back in; first touches are still one per page.
    assert s["accesses"] == len(pages)
    assert s["first_touch"] == K
    assert s["major_faults"] > 0 and s["pswpout"] > 0
    assert r["vmstat"]["pgmajfault"] == s["major_faults"]
    p = run_json("replay", "--trace", str(trace_file), "--policy", "clock-lru",
                 "--frames", str(r["frames"]))
    assert p["stats"]["first_touch"] == s["first_touch"]
    assert p["stats"]["accesses"] == s["accesses"]


def test_compute_ns_adds_exactly_its_time_per_access(trace_file):
    pages, _ = trace()
    frames = str(4 * K)
    base = run_trace(f"trace:path={trace_file}", "--frames", frames)
    slow = run_trace(f"trace:path={trace_file},compute_ns=250", "--frames", frames)
    assert ",compute_ns=250," in slow["workload"]
    # Nothing is reclaimed in either run, so the only difference in the application's CPU
    # time is 250 ns after each access.
    assert slow["stats"]["major_faults"] == base["stats"]["major_faults"] == 0
    assert slow["cpu"]["app_ns"] - base["cpu"]["app_ns"] == 250 * len(pages)


def test_threads_share_the_trace(trace_file):
    pages, writes = trace()
    r = run_trace(f"trace:path={trace_file},threads=3", "--frames", str(4 * K))
    assert len(r["threads"]) == 3
    # Blocks of 4096 accesses go round-robin: 1,500 accesses are one block, thread 0's.
    assert [t["accesses"] for t in r["threads"]] == [len(pages), 0, 0]
    assert r["stats"]["accesses"] == len(pages) and r["stats"]["first_touch"] == K

    # 10,000 accesses: blocks of 4096, 4096 and 1808 to threads 0, 1, 2.
    big = write_trace(trace_file.parent / "big.txt", [i % 500 for i in range(10_000)])
    r = run_trace(f"trace:path={big},threads=3", "--frames", "2000")
    assert [t["accesses"] for t in r["threads"]] == [4096, 4096, 10_000 - 2 * 4096]
    assert r["stats"]["first_touch"] == 500 and r["footprint_pages"] == 500


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("trace", "trace.path: missing"),
        ("trace:path={missing}", "trace.path: {missing}: "),
        ("trace:path={good},format=parquet", "trace.format: unknown trace format 'parquet'"),
        ("trace:path={good},threads=0", "trace.threads: 0 is outside"),
        ("trace:path={good},colour=red", "trace.colour: unknown key for trace"),
        ("trace:path={bad}", "trace.path: {bad}: line 2"),
    ],
)
def test_bad_specs_are_one_line_errors_naming_the_key(tmp_path, trace_file, spec, needle):
    bad = tmp_path / "bad.txt"
    bad.write_text("12\nnot-a-page\n")
    names = dict(good=trace_file, bad=bad, missing=tmp_path / "missing.txt")
    p = run_cli("run", spec.format(**names), "--policy", "clock-lru")
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("vmemsim: error: " + needle.format(**names)), p.stderr
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1

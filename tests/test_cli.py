"""The command-line contract: JSON keys, textbook fault counts, frames as a percentage, and
one-line errors with status 2 for every kind of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import vmemsim
from conftest import run_cli, run_json, write_trace

TOP_KEYS = {"accesses", "faults", "major_faults", "policy", "frames", "seed", "version"}


def test_json_has_contract_keys(belady_trace: Path) -> None:
    r = run_json("replay", "--trace", str(belady_trace), "--policy", "fifo", "--frames", "3")
    assert TOP_KEYS <= r.keys()
    assert r["accesses"] == 12
    assert r["policy"] == "fifo"
    assert r["frames"] == 3
    assert r["seed"] == 0
    assert r["version"] == vmemsim.__version__
    assert isinstance(r["stats"], dict) and r["stats"]["faults"] == r["faults"]
    assert {"min", "low", "high"} == set(r["watermarks"])


@pytest.mark.parametrize(
    "policy,frames,faults",
    [
        # Belady's anomaly: FIFO faults more with more memory (hand-checked).
        ("fifo", 3, 9),
        ("fifo", 4, 10),
        # LRU is a stack algorithm: 10 then 8 (hand-checked).
        ("lru", 3, 10),
        ("lru", 4, 8),
    ],
)
def test_belady_string(belady_trace: Path, policy: str, frames: int, faults: int) -> None:
    r = run_json(
        "replay", "--trace", str(belady_trace), "--policy", policy, "--frames", str(frames)
    )
    assert r["faults"] == faults
    # 5 distinct pages: 5 cold misses, every other fault reads back from swap.
    assert r["stats"]["first_touch"] == 5
    assert r["major_faults"] == faults - 5


def test_seed_and_options_are_echoed(belady_trace: Path) -> None:
    r = run_json(
        "replay", "--trace", str(belady_trace), "--policy", "lru", "--frames", "3", "--seed", "42"
    )
    assert r["seed"] == 42


def test_frames_percentage(tmp_path: Path) -> None:
    # 8 distinct pages; 25% of them is 2 frames.
    t = write_trace(tmp_path / "eight.txt", [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 0, 1])
    r = run_json("replay", "--trace", str(t), "--policy", "lru", "--frames", "25%")
    assert r["frames"] == 2
    # LRU with 2 frames: 8 cold misses, then 0 and 1 miss once more (7 and 6 were resident),
    # then 0, 1 hit.
    assert r["faults"] == 10


def test_write_column_counts_writes(tmp_path: Path) -> None:
    t = write_trace(tmp_path / "rw.txt", [1, 2, 1, 3], writes=[False, True, True, False])
    r = run_json("replay", "--trace", str(t), "--policy", "fifo", "--frames", "2")
    assert (r["stats"]["reads"], r["stats"]["writes"]) == (2, 2)


def test_table_output(belady_trace: Path) -> None:
    p = run_cli("replay", "--trace", str(belady_trace), "--policy", "lru", "--frames", "4")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    faults = [ln for ln in p.stdout.splitlines() if ln.split()[:1] == ["faults"]]
    assert len(faults) == 1 and faults[0].split()[1] == "8"


def test_policies_lists_registry() -> None:
    p = run_cli("policies")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    expected = vmemsim.policies()
    assert len(lines) == len(expected)
    for line, info in zip(lines, expected):
        assert line.split()[:2] == [info.name, info.family]
        assert line.rstrip().endswith(info.description)
    assert {"fifo", "lru"} <= {i.name for i in expected}


def test_version() -> None:
    p = run_cli("--version")
    assert p.returncode == 0
    assert p.stdout.strip() == f"vmemsim {vmemsim.__version__}"


def test_demo_compares_every_policy() -> None:
    p = run_cli("demo", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    names = {i.name for i in vmemsim.policies()}
    sizes = sorted({r["frames"] for r in rows})
    assert len(sizes) == 3
    for size in sizes:
        assert {r["policy"] for r in rows if r["frames"] == size} == names
    for r in rows:
        assert r["accesses"] == 200_000
        assert r["faults"] >= r["stats"]["first_touch"] > 0
    # The table form prints one row per (size, policy).
    t = run_cli("demo")
    assert t.returncode == 0, t.stderr
    assert "miss ratio" in t.stdout


# ------------------------------------------------------------------ errors


def assert_one_line_error(p, *needles: str) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("vmemsim: error: "), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert p.stdout == ""
    return lines[0]


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    t = tmp_path / "bad.txt"
    t.write_text("1\n2\n# comment\nnot-a-page\n3\n")
    p = run_cli("replay", "--trace", str(t), "--policy", "lru", "--frames", "2", "--json")
    assert_one_line_error(p, str(t), "line 4", "not-a-page")


@pytest.mark.parametrize("frames", ["0", "-1", "99999999999", "abc", "0%", "1.5"])
def test_bad_frames(belady_trace: Path, frames: str) -> None:
    p = run_cli("replay", "--trace", str(belady_trace), "--policy", "lru", "--frames", frames)
    assert_one_line_error(p, "frames")


def test_unknown_policy_lists_valid_ones(belady_trace: Path) -> None:
    p = run_cli("replay", "--trace", str(belady_trace), "--policy", "nosuch", "--frames", "3")
    line = assert_one_line_error(p, "nosuch")
    for name in vmemsim.policy_names():
        assert name in line


def test_unknown_option_key(belady_trace: Path) -> None:
    p = run_cli(
        "replay", "--trace", str(belady_trace), "--policy", "lru", "--frames", "3",
        "--opt", "no_such_knob=1",
    )
    assert_one_line_error(p, "no_such_knob")


def test_malformed_option(belady_trace: Path) -> None:
    p = run_cli(
        "replay", "--trace", str(belady_trace), "--policy", "lru", "--frames", "3", "--opt", "x"
    )
    assert_one_line_error(p, "KEY=VALUE")


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    for frames in ("3", "25%"):
        p = run_cli("replay", "--trace", str(missing), "--policy", "lru", "--frames", frames)
        assert_one_line_error(p, str(missing))


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--format", "nosuch"], "format"),
        (["--seed", "-1"], "--seed"),
        (["--seed", "x"], "--seed"),
        (["--swappiness", "201"], "swappiness"),
        (["--page-cluster", "11"], "page_cluster"),
        (["--page-cluster", "-1"], "page_cluster"),
        (["--watermarks", "1,2"], "--watermarks"),
        (["--no-such-flag"], "--no-such-flag"),
    ],
)
def test_other_bad_input(belady_trace: Path, extra: list, needle: str) -> None:
    p = run_cli("replay", "--trace", str(belady_trace), "--policy", "lru", "--frames", "3", *extra)
    assert_one_line_error(p, needle)


def test_missing_required_argument() -> None:
    p = run_cli("replay", "--policy", "lru", "--frames", "3")
    assert_one_line_error(p, "--trace")


def test_empty_trace_with_percentage(tmp_path: Path) -> None:
    t = tmp_path / "empty.txt"
    t.write_text("# nothing\n")
    p = run_cli("replay", "--trace", str(t), "--policy", "lru", "--frames", "25%")
    assert_one_line_error(p, "frames")
    # With a count it is an error too: there is nothing to replay (all-zero counters would
    # read as a perfect run).
    p = run_cli("replay", "--trace", str(t), "--policy", "lru", "--frames", "4")
    assert_one_line_error(p, "no page access to replay: the trace is empty")


def test_progress_goes_to_stderr_only(tmp_path: Path, belady_trace: Path) -> None:
    p = run_cli(
        "replay", "--trace", str(belady_trace), "--policy", "lru", "--frames", "3",
        "--json", "--progress",
    )
    assert p.returncode == 0
    assert json.loads(p.stdout)["faults"] == 10
    assert "Traceback" not in p.stderr


def test_messages_name_the_culprit() -> None:
    # A misspelt option is reported as such (argparse used to say the required --policy was
    # missing), with the nearest known option; a misspelt policy gets the same hint.
    p = run_cli("replay", "--trace", "gen:zipf:pages=100,n=500", "--polcy", "lru",
                "--frames", "50")
    assert_one_line_error(p, "unrecognized option --polcy (did you mean '--policy'?)")
    p = run_cli("replay", "--trace", "gen:zipf:pages=100,n=500", "--policy", "lur",
                "--frames", "50")
    assert_one_line_error(p, "unknown policy 'lur' (did you mean 'lru'?)")
    # Watermarks out of order are refused for every policy, in words (not a Rust struct).
    for pol in ("lru", "clock-lru"):
        p = run_cli("replay", "--trace", "gen:zipf:pages=100,n=500", "--policy", pol,
                    "--frames", "50", "--watermarks", "50,10,20")
        assert_one_line_error(p, "watermarks: must satisfy min <= low <= high, got min 50, "
                              "low 10, high 20")
    # VM costs: the key is named; a zero clock rate (a division by zero) is refused.
    p = run_cli("vm", "redis-like", "--cost", "exit_ns=-5")
    assert_one_line_error(p, "costs.exit_ns: expected a whole number of at least 0, got -5")
    p = run_cli("vm", "redis-like", "--cost", "cpu_ghz=0")
    assert_one_line_error(p, "costs.cpu_ghz: 0.0 is not a clock rate in GHz")
    p = run_cli("vm", "redis-like", "--cost", "exit_ns=abc")
    assert_one_line_error(p, "--cost exit_ns: 'abc' is not a whole number of ns")


def test_native_paging_shows_no_host() -> None:
    # Native paging has no host: its lines used to read "host_page None" and an empty policy.
    p = run_cli("vm", "lmbench-like", "--paging", "native")
    assert p.returncode == 0, p.stderr
    assert "host_page" not in p.stdout and "host_policy" not in p.stdout
    assert "None" not in p.stdout


def test_runs_that_need_more_memory_than_available_are_refused(tmp_path: Path) -> None:
    # Each used to allocate until the host ran out (16 GB in 60 s for stress-vm:bytes=1TiB).
    # The estimate (util.rs: 64 B per frame, 16 B per page, 64 B per access OPT holds) is
    # compared with MemAvailable, lowered here to 1 GiB by VMEMSIM_MEMORY_LIMIT.
    env = dict(os.environ, VMEMSIM_MEMORY_LIMIT=str(1 << 30))
    cases = [
        (("vm", "stress-vm:bytes=1TiB"), "workload: 1 VM(s) of 268435480 pages"),
        (("vm", "redis-like", "--vms", "100000"), "vms: 100000 VM(s)"),
        (("run", "pagerank:scale=30"), "pagerank.scale: a graph of 2^30 vertices"),
        (("replay", "--trace", "gen:zipf:pages=1000,n=1e9", "--policy", "opt", "--frames",
          "100"), "policy: opt (the whole trace held: 1000000000 accesses) needs about 59.6 GiB"),
        (("replay", "--trace", "gen:zipf:pages=1000,n=100", "--policy", "lru", "--frames",
          "100000000"), "frames: 100000000 frames needs about 6.0 GiB"),
    ]
    for args, needle in cases:
        p = subprocess.run([sys.executable, "-m", "vmemsim", *args], capture_output=True,
                           text=True, env=env, timeout=120)
        assert_one_line_error(p, needle, "1.0 GiB available", "VMEMSIM_FORCE=1")
    # Within the limit, the same kind of run goes ahead.
    p = subprocess.run([sys.executable, "-m", "vmemsim", "replay", "--trace",
                        "gen:zipf:pages=1000,n=100", "--policy", "lru", "--frames", "1000"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr


def test_demo_explains_why_gen14_equals_mglru() -> None:
    from types import SimpleNamespace

    from vmemsim.demo import DemoRow, same_as_mglru_note

    def row(policy, faults):
        return DemoRow("kernel", SimpleNamespace(policy=policy, frames=10, faults=faults,
                                                 major_faults=faults // 2))

    note = same_as_mglru_note([row("mglru", 7), row("mglru-gen14", 7)])
    assert len(note) == 1 and "should_run_aging" in note[0]
    assert same_as_mglru_note([row("mglru", 7), row("mglru-gen14", 8)]) == []
    p = run_cli("demo")
    assert p.returncode == 0 and "mglru-gen14 = mglru on this workload" in p.stdout


def test_mmu_pages_only_with_shadow_paging() -> None:
    # --mmu-pages sizes KVM's shadow-page pool; under TDP it was accepted and ignored.
    p = run_cli("vm", "lmbench-like", "--paging", "tdp", "--mmu-pages", "1")
    assert_one_line_error(p, "mmu_pages: only with shadow paging")
    p = run_cli("vm", "lmbench-like", "--paging", "shadow", "--mmu-pages", "64")
    assert p.returncode == 0, p.stderr


def test_frames_over_100_percent_is_said_not_silent():
    import subprocess
    import sys

    base = [sys.executable, "-m", "vmemsim", "replay", "--trace",
            "gen:zipf:pages=1000,n=10000", "--policy", "lru"]
    r = subprocess.run(base + ["--frames", "150%"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "--frames 150% is more memory than the trace's distinct pages" in r.stderr
    # and indeed nothing is evicted: every fault is a first touch
    r = subprocess.run(base + ["--frames", "150%", "--json"], capture_output=True, text=True,
                       timeout=60)
    import json
    d = json.loads(r.stdout)
    assert d["stats"]["major_faults"] == 0 and d["stats"].get("evictions", 0) == 0
    r = subprocess.run(base + ["--frames", "50%"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "note" not in r.stderr


def test_zones_flag_splits_the_machine(tmp_path: Path) -> None:
    # 1,000 frames as DMA 100 (watermarks 4/5/6, reserve 10) + DMA32 900 (20/30/40): 600 first
    # touches come from DMA32 while its free pages exceed low (900 − 30 = 870 ≥ 600), so the
    # allocator never falls back (get_page_from_freelist, highest zone first).
    t = write_trace(tmp_path / "t.txt", list(range(600)))
    d = run_json("replay", "--trace", str(t), "--policy", "clock-lru", "--frames", "1000",
                 "--zones", "DMA:100:4/5/6:10,DMA32:900:20/30/40")
    assert d["stats"]["pgalloc_zone"] == [0, 600]
    p = run_cli("replay", "--trace", str(t), "--policy", "clock-lru", "--frames", "1000",
                "--zones", "DMA:100:4/5")
    assert_one_line_error(p, "--zones", "DMA:100:4/5")
    p = run_cli("replay", "--trace", str(t), "--policy", "clock-lru", "--frames", "1000",
                "--zones", "DMA:100,DMA32:800")
    assert_one_line_error(p, "zones", "sum to 900")

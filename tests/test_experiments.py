"""The example experiments: they parse, plan the documented number of runs, and the MG-LRU
characterization's findings script runs on a quick sweep."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from vmemsim.sweep import load_experiment

ROOT = Path(__file__).resolve().parent.parent
EXP = ROOT / "experiments"


def quick_sweep(f: Path, seeds: int, out: Path) -> subprocess.CompletedProcess:
    """`vmemsim sweep run F --seeds N` into `out`, checked to succeed."""
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "sweep", "run", str(f), "--seeds", str(seeds), "--out",
         str(out), "--workers", "2", "-q"],
        capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return r


def test_policies_mixtures_plans_2520_runs():
    e = load_experiment(EXP / "policies-mixtures" / "experiment.toml")
    assert e.total == 14 * 6 * 3 * 10


def test_mglru_characterization_quick_run_and_findings(tmp_path):
    f = EXP / "mglru-characterization" / "experiment.toml"
    e = load_experiment(f)
    # 6 configurations x 3 capacities x 2 swap devices x 5 workloads x 25 seeds
    assert e.total == 6 * 3 * 2 * 5 * 25
    out = tmp_path / "res"
    r = quick_sweep(f, 2, out)
    assert "360/360 runs done" in r.stdout
    r = subprocess.run(
        [sys.executable, str(f.parent / "findings.py"), str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    table = [line for line in r.stdout.splitlines() if line.startswith("| §")]
    assert len(table) == 7
    assert "360 runs, 2 seeds per configuration" in r.stdout
    # The paper's §V-D/§VI-A tail finding (MG-LRU's p99.99 2-5x Clock's on YCSB with zram):
    # its direction, MG-LRU's tail the longer on A, B and C. Since direct reclaim runs
    # `do_try_to_free_pages`' cascade (each stall reclaims at least 32 pages, Clock's too) the
    # two policies' stalls are of a size: this quick run gives 1.01-1.05x, the full run's 25
    # seeds 1.04-1.05x, and FINDINGS.md reports the size outside [2, 5] (does not reproduce;
    # it did, 2.31-2.46x, while the engine stopped a stall above the min watermark).
    tail = next(line for line in table if line.startswith("| §V-D, §VI-A"))
    for wl in ("ycsb-a", "ycsb-b", "ycsb-c"):
        ratio = float(tail.split(f"{wl} ")[1].split("×")[0])
        assert ratio > 1.0, tail
    # Faults rise with zram on the two workloads with locality (§V-D): every TPC-H and
    # PageRank ratio in the row is above 1.
    zram = next(line for line in r.stdout.splitlines()
                if "Per workload the zram/SSD fault ratio is" in line)
    for wl in ("tpch", "pagerank"):
        lo = float(zram.split(f"{wl} ")[1].split("–")[0])
        assert lo > 1.0, zram
    # scale_table.py reads any results of this shape: one row per (workload, swap) at 50%,
    # MG-LRU's runtime / faults relative to Clock's.
    r = subprocess.run(
        [sys.executable, str(f.parent / "scale_table.py"), str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and "|---" not in line]
    assert len(rows) == 1 + 5 * 2  # header + 5 workloads x 2 devices


def test_mglru_scale_plans_240_runs():
    e = load_experiment(EXP / "mglru-characterization" / "scale.toml")
    # 4 policies x 2 swap devices x 6 (workload, scale) x 5 seeds
    assert e.total == 4 * 2 * 6 * 5


def test_kvm_shadow_eviction_quick_run_and_findings(tmp_path):
    f = EXP / "kvm-shadow-eviction" / "experiment.toml"
    e = load_experiment(f)
    # 3 workloads x (4 evictions x 4 pool sizes + tdp) x 5 seeds
    assert e.total == 3 * 17 * 5
    out = tmp_path / "res"
    r = quick_sweep(f, 1, out)
    assert "51/51 runs done" in r.stdout
    r = subprocess.run([sys.executable, str(f.parent / "findings.py"), str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("| stress-vm |")]
    assert len(rows) == 4 + 1  # 4 pool sizes, and the TDP row
    # With KVM's default pool (2% of guest pages) no workload here fills it, so
    # kvm_mmu_zap_oldest_mmu_pages never runs and the eviction policy is never asked: fifo,
    # clock, clock-leaf and clock-parent must count the same shadow page faults.
    for ln in r.stdout.splitlines():
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if len(cells) == 10 and cells[1] == "default":
            assert len(set(cells[2:6])) == 1, ln


def test_nested_paging_plans_216_runs():
    e = load_experiment(EXP / "nested-paging" / "experiment.toml")
    # 3 pagings x walk caches off/on x 4 (guest, host) page sizes x 3 workloads x 3 seeds
    assert e.total == 3 * 2 * 4 * 3 * 3


def test_nested_paging_quick_run_reproduces_the_2d_walk_counts(tmp_path):
    # The talk's (seed 002) reference counts of a 2D walk follow from the table levels:
    # (g+1)(h+1)-1 = 24 for 4-level tables, 4 natively and under shadow paging, 19 with one
    # dimension on 2 MiB pages, 15 with both. The findings' rows for them must say "yes".
    f = EXP / "nested-paging" / "experiment.toml"
    out = tmp_path / "res"
    r = quick_sweep(f, 1, out)
    r = subprocess.run([sys.executable, str(f.parent / "findings.py"), str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    claims = ["takes 24 memory references", "take g = 4 references",
              "remove most of the 2D walk", "19 references for 4K guest pages on 2M",
              "19 references for 2M guest pages", "Large pages in both dimensions: 15"]
    for c in claims:
        row = next(line for line in r.stdout.splitlines() if c in line)
        assert row.rstrip().endswith("| yes |"), row


def test_kvm_latency_plans_60_runs():
    e = load_experiment(EXP / "kvm-shadow-eviction" / "latency.toml")
    # 5 request rates x (3 shadow evictions + tdp) x 3 seeds
    assert e.total == 5 * 4 * 3


"""The example experiments: they parse, plan the documented number of runs, and the MG-LRU
characterization's findings script runs on a quick sweep."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from vmemsim.sweep import load_experiment

ROOT = Path(__file__).resolve().parent.parent
EXP = ROOT / "experiments"


def test_policies_mixtures_plans_2520_runs():
    e = load_experiment(EXP / "policies-mixtures" / "experiment.toml")
    assert e.total == 14 * 6 * 3 * 10


def test_mglru_characterization_quick_run_and_findings(tmp_path):
    f = EXP / "mglru-characterization" / "experiment.toml"
    e = load_experiment(f)
    # 6 configurations x 3 capacities x 2 swap devices x 5 workloads x 25 seeds
    assert e.total == 6 * 3 * 2 * 5 * 25
    out = tmp_path / "res"
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "sweep", "run", str(f), "--seeds", "2", "--out",
         str(out), "--workers", "2", "-q"],
        capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "360/360 runs done" in r.stdout
    r = subprocess.run(
        [sys.executable, str(f.parent / "findings.py"), str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    table = [line for line in r.stdout.splitlines() if line.startswith("| §")]
    assert len(table) == 7
    assert "360 runs, 2 seeds per configuration" in r.stdout
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
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "sweep", "run", str(f), "--seeds", "1", "--out",
         str(out), "--workers", "2", "-q"],
        capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "51/51 runs done" in r.stdout
    r = subprocess.run([sys.executable, str(f.parent / "findings.py"), str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("| stress-vm |")]
    assert len(rows) == 4 + 1  # 4 pool sizes, and the TDP row


def test_nested_paging_plans_216_runs():
    e = load_experiment(EXP / "nested-paging" / "experiment.toml")
    # 3 pagings x walk caches off/on x 4 (guest, host) page sizes x 3 workloads x 3 seeds
    assert e.total == 3 * 2 * 4 * 3 * 3


def test_kvm_latency_plans_60_runs():
    e = load_experiment(EXP / "kvm-shadow-eviction" / "latency.toml")
    # 5 request rates x (3 shadow evictions + tdp) x 3 seeds
    assert e.total == 5 * 4 * 3


"""Time series of a replay (``sample_every``): cumulative counters worked out by hand on tiny
traces, the frame and CSV forms, and errors for bad periods."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import vmemsim
from vmemsim import VmemsimError
from conftest import BELADY, run_cli

from test_cli import assert_one_line_error


def cols(r: vmemsim.ReplayResult, *names: str) -> list:
    return [tuple(s[n] for n in names) for s in r.series]


def test_fifo_two_frames_by_hand() -> None:
    # FIFO with 2 frames on 1 2 3 1 2 3: each page is evicted before it comes back, so every
    # access faults. The first touches of 1, 2, 3 (accesses 1-3) are minor; the refaults at
    # accesses 4-6 read from swap (major). Evictions start at access 3.
    r = vmemsim.replay([1, 2, 3, 1, 2, 3], "fifo", frames=2, sample_every=2)
    assert cols(r, "accesses", "faults", "major_faults", "evictions") == [
        (2, 2, 0, 0),
        (4, 4, 1, 2),
        (6, 6, 3, 4),
    ]
    assert r.series[-1] == r.stats


def test_belady_fifo_with_a_last_partial_sample() -> None:
    # FIFO, 3 frames, Belady's string: hits at accesses 8, 9 and 12 only, so the cumulative
    # faults are 1 2 3 4 5 6 7 7 7 8 9 9. Samples at 5 and 10, and at 12 (the end).
    r = vmemsim.replay(BELADY, "fifo", frames=3, sample_every=5)
    assert cols(r, "accesses", "faults") == [(5, 5), (10, 8), (12, 9)]
    assert r.faults == 9 and r.series[-1] == r.stats


def test_belady_opt() -> None:
    # OPT (replayed with the whole trace known), 3 frames: faults 1 2 3 4 4 4 5 5 5 6 7 7.
    r = vmemsim.replay(BELADY, "opt", frames=3, sample_every=4)
    assert cols(r, "accesses", "faults") == [(4, 4), (8, 5), (12, 7)]


def test_no_sampling() -> None:
    for every in (None, 0):
        r = vmemsim.replay(BELADY, "lru", frames=3, sample_every=every)
        assert r.series == ()
        assert "series" not in r.to_dict()
        assert len(r.series_frame()) == 0


def test_sampling_changes_nothing_else() -> None:
    trace = vmemsim.generate("zipf:pages=3000,alpha=0.8,n=150000", seed=3)
    for policy in ("clock-lru", "s3fifo"):
        plain = vmemsim.replay(trace, policy, frames=600)
        sampled = vmemsim.replay(trace, policy, frames=600, sample_every=40_000)
        assert [s["accesses"] for s in sampled.series] == [40_000, 80_000, 120_000, 150_000]
        assert sampled.stats == plain.stats
        assert sampled.policy_counters == plain.policy_counters
        # Counters are cumulative: none goes down from one sample to the next.
        for a, b in zip(sampled.series, sampled.series[1:]):
            assert all(b[k] >= a[k] for k in a), policy


def test_to_dict_and_frame() -> None:
    r = vmemsim.replay(BELADY, "lru", frames=3, sample_every=6)
    d = r.to_dict()
    # LRU, 3 frames: hits at accesses 8 and 9; 6 faults by access 6, 10 by access 12.
    assert [s["faults"] for s in d["series"]] == [6, 10]
    json.dumps(d)
    df = r.series_frame()
    assert list(df.columns) == list(r.stats)
    assert df.columns[0] == "accesses"
    assert df["accesses"].tolist() == [6, 12]
    assert df["faults"].tolist() == [6, 10]


@pytest.mark.parametrize("bad", [-1, 2.5, "10", True, 2**64])
def test_bad_sample_every(bad: object) -> None:
    with pytest.raises(VmemsimError, match=r"^sample_every: expected a whole number"):
        vmemsim.replay(BELADY, "lru", frames=3, sample_every=bad)  # type: ignore[arg-type]


def test_too_many_samples() -> None:
    # A generator knows its length: refused before the run.
    with pytest.raises(VmemsimError, match=r"^sample_every: 1 gives more than 1000000 samples"):
        vmemsim.replay("gen:zipf:pages=100,alpha=0.9,n=1000001", "lru", frames=10, sample_every=1)


def test_cli_series_csv(tmp_path: Path, belady_trace: Path) -> None:
    out = tmp_path / "series.csv"
    p = run_cli(
        "replay", "--trace", str(belady_trace), "--policy", "fifo", "--frames", "3",
        "--sample-every", "5", "--series-out", str(out), "--json",
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[0] == "accesses"
    assert set(rows[0]) == set(r["stats"])
    assert [(int(x["accesses"]), int(x["faults"])) for x in rows] == [(5, 5), (10, 8), (12, 9)]
    assert [s["faults"] for s in r["series"]] == [5, 8, 9]


def test_cli_without_series_prints_no_series(belady_trace: Path) -> None:
    p = run_cli("replay", "--trace", str(belady_trace), "--policy", "fifo", "--frames", "3",
                "--json")
    assert p.returncode == 0, p.stderr
    assert "series" not in json.loads(p.stdout)


def test_cli_errors(tmp_path: Path, belady_trace: Path) -> None:
    base = ("replay", "--trace", str(belady_trace), "--policy", "fifo", "--frames", "3")
    p = run_cli(*base, "--series-out", str(tmp_path / "s.csv"))
    assert_one_line_error(p, "--series-out", "--sample-every")
    p = run_cli(*base, "--sample-every", "-5")
    assert_one_line_error(p, "sample_every")
    p = run_cli(*base, "--sample-every", "2", "--series-out", str(tmp_path / "no" / "s.csv"))
    assert_one_line_error(p, "s.csv")

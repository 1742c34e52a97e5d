"""The Python API: arrays and paths give the same results as the CLI, typed results,
errors as VmemsimError, progress callbacks, and the GIL released while the core runs."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import vmemsim
from vmemsim import ReplayResult, VmemsimError
from conftest import BELADY, run_json, write_trace


def test_error_class() -> None:
    assert issubclass(VmemsimError, ValueError)
    with pytest.raises(VmemsimError, match="unknown policy 'x'; valid: "):
        vmemsim.replay(BELADY, policy="x", frames=3)


@pytest.mark.parametrize(
    "trace",
    [
        BELADY,
        tuple(BELADY),
        np.array(BELADY, dtype=np.uint64),
        np.array(BELADY, dtype=np.int64),
        np.array(BELADY, dtype=np.int32),
        np.array(BELADY, dtype=np.uint8),
        # A strided view is copied, not misread.
        np.repeat(np.array(BELADY, dtype=np.uint64), 2)[::2],
    ],
    ids=["list", "tuple", "u64", "i64", "i32", "u8", "strided"],
)
def test_in_memory_traces(trace) -> None:
    assert vmemsim.replay(trace, policy="fifo", frames=3).faults == 9
    assert vmemsim.replay(trace, policy="fifo", frames=4).faults == 10
    assert vmemsim.replay(trace, policy="lru", frames=3).faults == 10
    assert vmemsim.replay(trace, policy="lru", frames="80%").faults == 8  # 4 of 5 pages


def test_path_and_array_equal_cli(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    pages = (rng.zipf(1.3, size=5000) % 700).astype(np.uint64)
    writes = rng.random(5000) < 0.3
    path = write_trace(tmp_path / "z.txt", pages.tolist(), writes.tolist())
    for i, policy in enumerate(vmemsim.policy_names()):
        for frames in ("50", "30%"):
            by_path = vmemsim.replay(path, policy=policy, frames=frames, seed=3)
            by_str = vmemsim.replay(str(path), policy=policy, frames=frames, seed=3)
            by_array = vmemsim.replay(pages, policy=policy, frames=frames, seed=3, writes=writes)
            assert by_path == by_str
            # The in-memory run differs only in the trace's name.
            assert dataclasses.replace(by_array, trace=by_path.trace) == by_path
            if frames == ("50", "30%")[i % 2]:  # one CLI run per policy keeps this quick
                cli = run_json(
                    "replay", "--trace", str(path), "--policy", policy, "--frames", frames,
                    "--seed", "3",
                )
                assert by_path.to_dict() == cli


def test_result_fields() -> None:
    r = vmemsim.replay(BELADY, policy="lru", frames=3, seed=5)
    assert isinstance(r, ReplayResult)
    assert (r.accesses, r.faults, r.policy, r.frames, r.seed) == (12, 10, "lru", 3, 5)
    assert r.faults == r.minor_faults + r.major_faults
    assert r.stats["faults"] == r.faults
    assert r.miss_ratio == pytest.approx(10 / 12)
    assert r.version == vmemsim.__version__
    assert len(r.watermarks) == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.faults = 0  # type: ignore[misc]
    d = r.to_dict()
    assert d["faults"] == 10 and d["stats"]["faults"] == 10
    assert ReplayResult.from_json(__import__("json").dumps({
        "version": d["version"], "policy": d["policy"], "frames": d["frames"], "seed": d["seed"],
        "trace": d["trace"], "page_cluster": d["page_cluster"], "watermarks": d["watermarks"],
        "options": d["options"], "stats": d["stats"], "policy_counters": d["policy_counters"],
    })) == r


def test_writes_reach_the_engine() -> None:
    pages = [1, 2, 1, 3]
    r = vmemsim.replay(pages, policy="fifo", frames=2, writes=[False, True, True, False])
    assert (r.stats["reads"], r.stats["writes"]) == (2, 2)


def test_gup_pins_reach_the_engine() -> None:
    # By hand, from internal_get_user_pages_fast and folio_mark_accessed (classic LRU,
    # memory to spare): a pin call over 0 1 2 finds nothing present, so all three are
    # faulted in and marked (PG_referenced); the CPU reads them; the same call again pins
    # them locklessly (present and written), marking nothing; after the read of 9, a call
    # over 2 3 faults 3 in (not present: the slow path from there) and marks it; 2 is pinned
    # untouched (before the page that stopped the walk). Nothing is activated: no page was
    # marked twice.
    pages = [0, 1, 2, 0, 1, 2, 0, 1, 2, 9, 2, 3]
    gup = [True] * 3 + [False] * 3 + [True] * 3 + [False] + [True] * 2
    r = vmemsim.replay(pages, policy="clock-lru", frames=64, writes=gup, gup=gup)
    assert (r.stats["gup_pages"], r.stats["gup_touched"]) == (8, 4)
    assert r.stats["faults"] == 5
    assert r.policy_counters["pgactivate"] == 0
    # A call whose first page is marked a second time activates it (2 was marked once).
    pages = [0, 1, 2, 2]
    gup = [True, True, True, True]  # one call: 2 twice, the second after the slow path
    r = vmemsim.replay(pages, policy="clock-lru", frames=64, writes=gup, gup=gup)
    assert (r.stats["gup_pages"], r.stats["gup_touched"]) == (4, 4)
    assert r.policy_counters["pgactivate"] == 1


def test_gup_is_for_in_memory_traces() -> None:
    with pytest.raises(VmemsimError, match="gup"):
        vmemsim.replay("gen:seq:n=10", policy="lru", frames=3, gup=[True] * 10)
    with pytest.raises(VmemsimError, match="gup.*has 1 entries"):
        vmemsim.replay([1, 2], policy="lru", frames=3, gup=[True])


def test_to_pandas() -> None:
    pd = pytest.importorskip("pandas")
    df = vmemsim.replay(BELADY, policy="lru", frames=3).to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 1
    assert int(df["faults"].iloc[0]) == 10 and df["policy"].iloc[0] == "lru"


def test_to_pandas_without_pandas(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # makes `import pandas` fail
    r = vmemsim.replay(BELADY, policy="lru", frames=3)
    with pytest.raises(ImportError, match=r"vmemsim\[pandas\]"):
        r.to_pandas()


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        (dict(frames=0), "frames"),
        (dict(frames=-1), "frames"),
        (dict(frames=99999999999), "frames"),
        (dict(frames="abc"), "frames"),
        (dict(frames=None), "frames"),
        (dict(frames=2.5), "frames"),
        (dict(frames=True), "frames"),
        (dict(frames=3, seed=-1), "seed"),
        (dict(frames=3, options={"no_such_knob": 1}), "no_such_knob"),
        (dict(frames=3, swappiness=-5), "swappiness"),
        (dict(frames=3, page_cluster=300), "page_cluster"),
        (dict(frames=3, watermarks=(1, 2)), "watermarks"),
        (dict(frames=3, format="text"), "format"),
        (dict(frames=3, writes=[True]), "writes"),
        (dict(frames=3, policy=7), "policy"),
    ],
)
def test_bad_arguments(kwargs, needle) -> None:
    kwargs.setdefault("policy", "lru")
    with pytest.raises(VmemsimError, match=needle):
        vmemsim.replay(BELADY, **kwargs)


@pytest.mark.parametrize(
    "trace,needle",
    [
        ([1, -2, 3], "negative page number -2 at index 1"),
        (np.array([1.5, 2.0]), "dtype float64"),
        (np.zeros((2, 2), dtype=np.uint64), "1-D"),
        (["a", "b"], "dtype"),
        ([1, 2**64], r"integers 0\.\.2\^64-1"),
    ],
)
def test_bad_in_memory_traces(trace, needle) -> None:
    with pytest.raises(VmemsimError, match=needle):
        vmemsim.replay(trace, policy="lru", frames=3)


def test_native_rejects_wrong_arrays() -> None:
    from vmemsim import _native

    # The settings are the JSON of the core's ReplayConfig (vmemsim.api.REPLAY_DEFAULTS).
    config = json.dumps({"policy": "lru", "frames": 3})
    with pytest.raises(VmemsimError, match="uint64 or int64"):
        _native.replay({"pages": np.array([1.0])}, config)
    with pytest.raises(VmemsimError, match="negative page number -1"):
        _native.replay({"pages": np.array([-1], dtype=np.int64)}, config)
    with pytest.raises(VmemsimError, match="^nope: unknown field `nope`"):
        _native.replay({"pages": np.array([1], dtype=np.uint64)},
                       json.dumps({"policy": "lru", "frames": 3, "nope": 1}))


def test_malformed_file(tmp_path: Path) -> None:
    t = tmp_path / "bad.txt"
    t.write_text("1\n2 X\n")
    with pytest.raises(VmemsimError, match=r"bad\.txt: line 2: 'X' is not R or W"):
        vmemsim.replay(t, policy="lru", frames=2)


FOOTPRINT = 1 << 16


@pytest.fixture(scope="module")
def slow_trace() -> np.ndarray:
    """A trace that takes about 0.6 s to replay under LRU with FOOTPRINT / 16 frames here
    (the footprint is fixed, so the time grows linearly with the length)."""
    rng = np.random.default_rng(1)
    n = 1 << 18
    while True:
        pages = rng.integers(0, FOOTPRINT, size=n, dtype=np.uint64)
        t0 = time.perf_counter()
        vmemsim.replay(pages, policy="lru", frames=FOOTPRINT // 16)
        dt = time.perf_counter() - t0
        if dt >= 0.6 or n >= 1 << 26:
            return pages
        n = min(1 << 26, int(n * min(16.0, max(1.5, 0.7 / max(dt, 1e-3)))))


def test_progress_callback_rate_and_errors(slow_trace: np.ndarray) -> None:
    calls = []
    t0 = time.perf_counter()
    r = vmemsim.replay(
        slow_trace, policy="lru", frames=FOOTPRINT // 16,
        progress=lambda done, total: calls.append((done, total)),
    )
    elapsed = time.perf_counter() - t0
    assert calls, "a run of over half a second reports progress"
    assert len(calls) <= elapsed / 0.2 + 1  # at most five times a second
    assert all(total == len(slow_trace) for _, total in calls)
    dones = [d for d, _ in calls]
    assert dones == sorted(dones) and dones[-1] <= r.accesses

    def boom(done, total):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        vmemsim.replay(slow_trace, policy="lru", frames=FOOTPRINT // 16, progress=boom)


def test_ctrl_c_stops_a_run(slow_trace: np.ndarray) -> None:
    # SIGINT during a replay raises KeyboardInterrupt from inside it, at the next progress
    # tick: no progress is reported after the signal (the run does not go on to its end).
    calls: list = []
    sent: list = []

    def interrupt() -> None:
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.25, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            vmemsim.replay(
                slow_trace, policy="lru", frames=FOOTPRINT // 16,
                progress=lambda d, t: calls.append(time.perf_counter()),
            )
    finally:
        timer.cancel()
    assert sent
    assert all(c < sent[0] for c in calls)


def test_gil_is_released(slow_trace: np.ndarray) -> None:
    done = threading.Event()

    def work() -> None:
        vmemsim.replay(slow_trace, policy="lru", frames=FOOTPRINT // 16)
        done.set()

    th = threading.Thread(target=work)
    spins = 0
    th.start()
    while not done.is_set():
        spins += 1
        time.sleep(0.001)
    th.join()
    # With the GIL held by the replay this thread could not run until it finished; released,
    # it wakes about every millisecond of a run of over half a second.
    assert spins > 50


def test_policies_api() -> None:
    ps = vmemsim.policies()
    assert [p.name for p in ps] == vmemsim.policy_names()
    assert len(set(vmemsim.policy_names())) == len(ps)
    for p in ps:
        assert p.family in {"demand", "kernel"} and p.description
    assert "text" in vmemsim.trace_formats()


def test_cgroup_is_one_name_in_the_cli_and_python() -> None:
    # `--cgroup` on the CLI is `cgroup=True` in Python (it used to be a TypeError there):
    # zram's pool is then not charged to the frames, as charge_device_ram=False did.
    tr = "gen:zipf:pages=3000,alpha=0.9,n=30000"
    a = vmemsim.replay(tr, policy="clock-lru", frames=1000, swap="zram", cgroup=True)
    b = vmemsim.replay(tr, policy="clock-lru", frames=1000, swap="zram", charge_device_ram=False)
    c = vmemsim.replay(tr, policy="clock-lru", frames=1000, swap="zram")
    assert a.stats == b.stats and a.stats != c.stats
    r = vmemsim.run("ycsb-a:records=2000,requests=4000", frames="50%", device="zram",
                    cgroup=True)
    assert r.stats["accesses"] > 0
    with pytest.raises(vmemsim.VmemsimError, match="disagree"):
        vmemsim.replay(tr, policy="lru", frames=100, cgroup=True, charge_device_ram=True + 0)

"""Results checked against numbers computed independently of vmemsim: textbook reference
implementations written here, and libCacheSim (a peer simulator) on the same traces. Plus
properties every registered policy must have, so new policies are covered as they register."""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vmemsim


def ref_fifo(trace: Sequence[int], frames: int) -> int:
    """Textbook FIFO: a queue in insertion order, hits change nothing."""
    resident: set = set()
    queue: deque = deque()
    faults = 0
    for p in trace:
        if p in resident:
            continue
        faults += 1
        if len(resident) == frames:
            resident.discard(queue.popleft())
        resident.add(p)
        queue.append(p)
    return faults


def ref_lru(trace: Sequence[int], frames: int) -> int:
    """Textbook LRU: every hit moves the page to the most-recent end."""
    od: OrderedDict = OrderedDict()
    faults = 0
    for p in trace:
        if p in od:
            od.move_to_end(p)
            continue
        faults += 1
        if len(od) == frames:
            od.popitem(last=False)
        od[p] = True
    return faults


REFERENCE = {"fifo": ref_fifo, "lru": ref_lru}

# At least one access: an empty trace is an error (nothing to replay), tested in test_cli.py.
traces = st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=300)


@settings(max_examples=60, deadline=None)
@given(trace=traces, frames=st.integers(min_value=1, max_value=45))
def test_demand_policies_match_reference(trace, frames) -> None:
    for name, ref in REFERENCE.items():
        r = vmemsim.replay(trace, policy=name, frames=frames)
        assert r.faults == ref(trace, frames), name
        assert r.accesses == len(trace)


@settings(max_examples=30, deadline=None)
@given(trace=st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=200))
def test_lru_stack_property(trace) -> None:
    # LRU is a stack algorithm (Mattson et al. 1970): more memory never faults more.
    faults = [vmemsim.replay(trace, policy="lru", frames=f).faults for f in range(1, 33)]
    assert faults == sorted(faults, reverse=True)


def _libcachesim_misses(cls, trace: Sequence[int], size: int) -> int:
    cache = cls(cache_size=size)
    hits = 0
    for p in trace:
        req = LCS.Request()
        req.obj_id = int(p)
        req.obj_size = 1
        hits += bool(cache.get(req))
    return len(trace) - hits


try:
    import libcachesim as LCS  # type: ignore[no-redef]
except Exception:  # pragma: no cover - the test extra installs it
    LCS = None


@pytest.mark.skipif(LCS is None, reason="libcachesim not installed")
@pytest.mark.parametrize("name,cls_name", [("fifo", "FIFO"), ("lru", "LRU")])
def test_against_libcachesim(name: str, cls_name: str) -> None:
    rng = np.random.default_rng(11)
    trace = (rng.zipf(1.2, size=20_000) % 3_000).astype(np.uint64)
    cls = getattr(LCS, cls_name)
    for size in (10, 100, 500, 2_000):
        ours = vmemsim.replay(trace, policy=name, frames=size).faults
        assert ours == _libcachesim_misses(cls, trace.tolist(), size), size


# ------------------------------------------------- properties of every registered policy


@pytest.fixture(scope="module")
def zipf_trace() -> np.ndarray:
    rng = np.random.default_rng(5)
    return (rng.zipf(1.1, size=30_000) % 2_000).astype(np.uint64)


@pytest.mark.parametrize("policy", vmemsim.policy_names())
def test_every_policy_counts_consistently(policy: str, zipf_trace: np.ndarray) -> None:
    distinct = int(np.unique(zipf_trace).size)
    for frames in (16, 200, 1000):
        r = vmemsim.replay(zipf_trace, policy=policy, frames=frames, seed=9)
        assert r.accesses == zipf_trace.size
        assert distinct <= r.faults <= r.accesses
        assert r.faults == r.minor_faults + r.major_faults
        assert r.stats["first_touch"] == distinct
        assert r.stats["peak_resident"] <= frames
        # Deterministic: a run is a function of (config, trace, seed).
        assert vmemsim.replay(zipf_trace, policy=policy, frames=frames, seed=9) == r


@pytest.mark.parametrize("policy", vmemsim.policy_names())
def test_every_policy_only_cold_misses_when_everything_fits(policy: str, zipf_trace) -> None:
    distinct = int(np.unique(zipf_trace).size)
    # Far more memory than pages (watermarks included): nothing is ever reclaimed.
    r = vmemsim.replay(zipf_trace, policy=policy, frames=4 * distinct + 4096)
    assert r.faults == distinct
    assert r.major_faults == 0 and r.stats["evictions"] == 0


@pytest.mark.parametrize("policy", vmemsim.policy_names())
def test_every_policy_survives_invariant_checks(policy: str) -> None:
    rng = np.random.default_rng(2)
    trace = rng.integers(0, 300, size=3_000, dtype=np.uint64)
    writes = rng.random(3_000) < 0.3
    r = vmemsim.replay(trace, policy=policy, frames=64, writes=writes, check_invariants=True)
    assert r.accesses == 3_000

"""Shared pieces of the libCacheSim differential tests: seeded page traces and miss counts
from the `libcachesim` Python package (libCacheSim's C code through its official binding).

Conventions that make libCacheSim count page faults: every object has size 1 and the cache
size is given in objects, so "bytes" are pages; each access is one `cache.get(Request)`, and
a miss is a `get` that returns False (cold misses included, as vmemsim's `faults`). Belady
needs the index of each access's next access (`next_access_vtime`, INT64_MAX for never).
"""

from __future__ import annotations

import numpy as np

INT64_MAX = 2**63 - 1

# vmemsim policy name -> (libcachesim class name, constructor keyword arguments).
POLICIES = {
    "fifo": ("FIFO", {}),
    "lru": ("LRU", {}),
    "clock": ("Clock", {"init_freq": 0, "n_bit_counter": 1}),
    "opt": ("Belady", {}),
    "arc": ("ARC", {}),
    "s3fifo": ("S3FIFO", {}),
    "lfu": ("LFU", {}),
    "sieve": ("Sieve", {}),
    "slru": ("SLRU", {}),
    "2q": ("TwoQ", {}),
    "mq": ("MQ", {}),
    "lru-k": ("LRUK", {"k": 2}),
    "w-tinylfu": ("WTinyLFU", {"main_cache": "SLRU", "window_size": 0.01}),
    # Not exact, with the reason checked by the tests (tests/libcachesim_models.py): LIRS.c
    # evicts on some hits (hit_RD_HIRinQ); ClockPro.c admits nothing once its cold pages reach
    # their target (ClockPro_can_insert). init_ratio_cold = 1 is ClockPro.c's own default (the
    # binding's is 0.5) and vmemsim's init_cold_ratio default.
    "lirs": ("LIRS", {}),
    "clock-pro": ("ClockPro", {"init_ratio_cold": 1.0}),
}

# Policies whose miss counts must equal libCacheSim's exactly (the brief's contract); the
# others are compared and any difference is explained where it is asserted.
EXACT = ("fifo", "lru", "clock", "opt", "sieve", "2q", "mq", "lru-k")

# Policies whose libCacheSim model frees pages where a demand pager cannot (on some hits, or
# several per miss): vmemsim counts the hits on such pages, which libCacheSim counts as
# misses, in this policy counter, and `faults + counter` must equal libCacheSim's misses
# exactly. slru: libCacheSim's SLRU_cool(.., 0) calls SLRU_evict from inside SLRU_find when
# segment 0 holds more than its floor(c/n) share (slru.rs). w-tinylfu: WTinyLFU_evict can
# free several objects per miss and an SLRU hit can evict one (w_tinylfu.rs).
HIT_IS_LIBCACHESIM_MISS = {"slru": "cooled_out_hits", "w-tinylfu": "zombie_hits"}


def comparable(policy: str, frames: int) -> bool:
    """Whether libCacheSim's miss count for `policy` at `frames` can be compared at all.

    S3-FIFO: libCacheSim admits nothing while its small queue holds at most one object
    (< 20 frames). W-TinyLFU: libCacheSim's window LRU gets floor(frames * 0.01) objects
    and it admits nothing while that is 0 (< 100 frames): every access misses. vmemsim
    always admits the faulting page."""
    if policy == "s3fifo":
        return frames >= 20
    if policy == "w-tinylfu":
        return int(frames * POLICIES[policy][1]["window_size"]) >= 1
    return True


def vmemsim_equivalent_misses(policy: str, faults: int, policy_counters) -> int:
    """vmemsim's count to hold against libCacheSim's misses: its faults, plus the hits that
    libCacheSim counts as misses (HIT_IS_LIBCACHESIM_MISS)."""
    counter = HIT_IS_LIBCACHESIM_MISS.get(policy)
    return faults + (int(policy_counters[counter]) if counter else 0)


def uniform_trace(seed: int, n: int, pages: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, pages, size=n, dtype=np.uint64) + np.uint64(1000)


def zipf_trace(seed: int, n: int, pages: int, alpha: float) -> np.ndarray:
    """Ranks drawn with P(k) ∝ k^-alpha, then scattered over page numbers by a random
    permutation so that popularity is not correlated with page-table locality."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, pages + 1, dtype=np.float64) ** alpha
    ranks = rng.choice(pages, size=n, p=w / w.sum())
    ids = rng.permutation(pages).astype(np.uint64) * np.uint64(7) + np.uint64(1)
    return ids[ranks]


def loop_zipf_trace(seed: int, n: int) -> np.ndarray:
    """Alternating phases: a cyclic scan of 120 pages (LRU's worst case) and a zipf(1.0)
    working set of 300 pages; exercises ARC's adaptation and S3-FIFO's ghost."""
    rng = np.random.default_rng(seed)
    out = []
    hot = zipf_trace(seed + 1000, n, 300, 1.0)
    h = 0
    while len(out) < n:
        scan = int(rng.integers(200, 500))
        start = int(rng.integers(0, 120))
        out.extend(100_000 + (start + i) % 120 for i in range(scan))
        k = int(rng.integers(200, 600))
        out.extend(int(x) for x in hot[h : h + k])
        h += k
    return np.array(out[:n], dtype=np.uint64)


def next_access(trace) -> list[int]:
    last: dict[int, int] = {}
    nxt = [INT64_MAX] * len(trace)
    for i in range(len(trace) - 1, -1, -1):
        p = int(trace[i])
        nxt[i] = last.get(p, INT64_MAX)
        last[p] = i
    return nxt


def libcachesim_misses(policy: str, trace, frames: int) -> int:
    import libcachesim as lcs

    cls_name, kw = POLICIES[policy]
    cache = getattr(lcs, cls_name)(cache_size=frames, hashpower=16, **kw)
    nxt = next_access(trace) if policy == "opt" else None
    misses = 0
    for i, p in enumerate(trace):
        req = lcs.Request(
            obj_size=1,
            obj_id=int(p),
            clock_time=i,
            next_access_vtime=nxt[i] if nxt is not None else -2,
        )
        if not cache.get(req):
            misses += 1
    return misses


def traces() -> dict[str, np.ndarray]:
    """The committed traces: small enough to store, varied enough to separate policies."""
    return {
        "uniform-200p": uniform_trace(1, 3000, 200),
        "zipf0.8-500p": zipf_trace(2, 3000, 500, 0.8),
        "zipf1.2-1000p": zipf_trace(3, 3000, 1000, 1.2),
        "loop120+zipf": loop_zipf_trace(4, 3000),
    }


# Memory sizes in frames. S3-FIFO is compared only from 20 frames (libCacheSim admits
# nothing while its small queue holds at most one object, see s3fifo.rs).
FRAMES = (20, 37, 64, 100, 150)


def synthetic_zipf(seed: int, n: int, objects: int, alpha: float) -> np.ndarray:
    """A trace from libCacheSim's own generator (SyntheticReader, seeded)."""
    import libcachesim as lcs

    reader = lcs.SyntheticReader(
        num_of_req=n, obj_size=1, dist="zipf", alpha=alpha, num_objects=objects, seed=seed
    )
    return np.asarray(reader.obj_ids, dtype=np.uint64) + np.uint64(1)


def big_traces() -> dict[str, np.ndarray]:
    """Larger traces for the Python differential test (not stored)."""
    return {
        "uniform-400p": uniform_trace(11, 20_000, 400),
        "zipf0.9-2000p": zipf_trace(12, 20_000, 2_000, 0.9),
        "zipf1.1-5000p": zipf_trace(13, 20_000, 5_000, 1.1),
        "loop120+zipf": loop_zipf_trace(14, 20_000),
        "lcs-synthetic-zipf1.0": synthetic_zipf(15, 20_000, 3_000, 1.0),
    }


BIG_FRAMES = (20, 50, 128, 333, 700)

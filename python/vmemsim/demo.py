"""``vmemsim demo``: a real, small simulation on an embedded workload.

The workload is generated here with numpy from a seed, so the demo needs no file: a hot set
whose popularity follows a bounded Zipf law (the shape of most page and object traces),
interrupted by sequential scans of cold pages (a backup, a table scan, a ``grep -r``), which
is the classic case where recency-only policies lose their hot set. It is replayed through
every policy the core registers at a few memory sizes.

Kept apart from the CLI so that it can switch to the core's own generators once they exist:
only :func:`demo_trace` would change.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np

from .api import ReplayResult, policies, replay

#: Distinct pages of the hot set and of the scanned region.
HOT_PAGES = 16_000
SCAN_PAGES = 4_000
#: Zipf exponent of the hot set (probability of rank r proportional to 1 / r**ALPHA).
ALPHA = 0.9
#: Accesses drawn from the hot set, and how many full scans interrupt them.
HOT_ACCESSES = 160_000
SCANS = 10
#: Share of hot-set accesses that are writes (they dirty pages: evictions cost swap writes).
WRITE_SHARE = 0.25
#: Memory sizes, as shares of the distinct pages.
SIZES = (0.10, 0.25, 0.50)


@dataclass(frozen=True)
class DemoTrace:
    pages: np.ndarray
    writes: np.ndarray
    description: str

    @property
    def distinct(self) -> int:
        return int(np.unique(self.pages).size)


def demo_trace(seed: int = 0) -> DemoTrace:
    """The demo workload: ``HOT_ACCESSES`` Zipf accesses over ``HOT_PAGES`` pages, cut into
    ``SCANS`` blocks, each followed by one sequential scan of the ``SCAN_PAGES`` cold pages."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, HOT_PAGES + 1, dtype=np.float64)
    p = ranks**-ALPHA
    p /= p.sum()
    # Popularity rank -> page: hot pages are scattered over the region, as in a real heap.
    rank_to_page = rng.permutation(HOT_PAGES).astype(np.uint64)
    hot = rank_to_page[rng.choice(HOT_PAGES, size=HOT_ACCESSES, p=p)]
    hot_writes = rng.random(HOT_ACCESSES) < WRITE_SHARE
    scan = np.arange(HOT_PAGES, HOT_PAGES + SCAN_PAGES, dtype=np.uint64)
    pages: List[np.ndarray] = []
    writes: List[np.ndarray] = []
    for block, wblock in zip(np.array_split(hot, SCANS), np.array_split(hot_writes, SCANS)):
        pages += [block, scan]
        writes += [wblock, np.zeros(SCAN_PAGES, dtype=np.bool_)]
    desc = (
        f"Zipf({ALPHA}) hot set of {HOT_PAGES:,} pages, {WRITE_SHARE:.0%} writes, "
        f"cut by {SCANS} sequential scans of {SCAN_PAGES:,} cold pages (seed {seed})"
    )
    return DemoTrace(np.concatenate(pages), np.concatenate(writes), desc)


@dataclass(frozen=True)
class DemoRow:
    family: str
    result: ReplayResult


def run_demo(seed: int = 0, sizes: Sequence[float] = SIZES) -> Tuple[DemoTrace, List[DemoRow], float]:
    """Replay the demo trace through every registered policy at every size.
    Returns the trace, one row per (size, policy), and the seconds it took."""
    t = demo_trace(seed)
    distinct = t.distinct
    rows: List[DemoRow] = []
    start = time.perf_counter()
    for share in sizes:
        frames = max(1, round(distinct * share))
        for p in policies():
            r = replay(t.pages, policy=p.name, frames=frames, seed=seed, writes=t.writes)
            rows.append(DemoRow(p.family, r))
    return t, rows, time.perf_counter() - start


def format_table(t: DemoTrace, rows: Sequence[DemoRow], seconds: float) -> str:
    """The comparison table printed by ``vmemsim demo``; the best policy of each size is
    marked with ``*``."""
    distinct = t.distinct
    lines = [
        f"vmemsim demo: {t.pages.size:,} accesses over {distinct:,} pages",
        f"  workload: {t.description}",
        "",
    ]
    name_w = max([len("policy")] + [len(r.result.policy) for r in rows])
    fam_w = max([len("family")] + [len(r.family) for r in rows])
    header = (
        f"{'frames':>8}  {'policy':<{name_w}}  {'family':<{fam_w}}  "
        f"{'faults':>9}  {'major':>9}  {'miss ratio':>10}"
    )
    lines.append(header)
    lines.append("-" * len(header))
    by_size: dict = {}
    for r in rows:
        by_size.setdefault(r.result.frames, []).append(r)
    for frames, group in by_size.items():
        best = min(r.result.faults for r in group)
        share = frames / distinct if distinct else 0.0
        for i, r in enumerate(group):
            res = r.result
            label = f"{frames:,}" if i == 0 else ""
            mark = " *" if res.faults == best else ""
            lines.append(
                f"{label:>8}  {res.policy:<{name_w}}  {r.family:<{fam_w}}  "
                f"{res.faults:>9,}  {res.major_faults:>9,}  {res.miss_ratio:>10.4f}{mark}"
            )
        lines.append(f"{'':>8}  ({share:.0%} of the distinct pages)")
        lines.append("")
    lines.append(
        f"{len(rows)} replays in {seconds:.2f} s. faults = every miss, cold included; "
        "major = read back from swap; * = fewest faults at that size."
    )
    return "\n".join(lines)

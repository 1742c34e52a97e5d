"""``vmemsim demo``: a real, small simulation on a generated workload.

The workload comes from the core's generators (``vmemsim.generate``), so the demo needs no
file: a hot set whose popularity follows a bounded Zipf law (the shape of most page and object
traces), mixed with sequential scans of cold pages (a backup, a table scan, a ``grep -r``),
which is the classic case where recency-only policies lose their hot set. It is replayed
through every policy the core registers at a few memory sizes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import List, Sequence, Tuple

from .api import Generated, ReplayResult, generate, policies, replay, trace_info

#: Distinct pages of the hot set and of the scanned region.
HOT_PAGES = 16_000
SCAN_PAGES = 4_000
#: Zipf exponent of the hot set (probability of rank r proportional to 1 / r**ALPHA).
ALPHA = 0.9
#: Accesses in all, and the share of them that belong to the scans (SCAN_SHARE * ACCESSES /
#: SCAN_PAGES = 10 full sweeps of the cold region).
ACCESSES = 200_000
SCAN_SHARE = 0.2
#: Share of hot-set accesses that are writes (they dirty pages: evictions cost swap writes).
WRITE_SHARE = 0.25
#: Memory sizes, as shares of the distinct pages.
SIZES = (0.10, 0.25, 0.50)


def demo_spec() -> str:
    """The demo workload as a generator spec: each access comes from the Zipf hot set with
    probability ``1 - SCAN_SHARE``, else it is the next page of a sequential sweep over the
    ``SCAN_PAGES`` cold pages placed after the hot set."""
    hot = f"zipf:pages={HOT_PAGES},alpha={ALPHA},write={WRITE_SHARE}"
    scan = f"scan:pages={SCAN_PAGES},start={HOT_PAGES}"
    return f"mix:({hot})*{1 - SCAN_SHARE:g}+({scan})*{SCAN_SHARE:g},n={ACCESSES}"


@dataclass(frozen=True)
class DemoTrace:
    trace: Generated
    distinct: int
    description: str

    @property
    def accesses(self) -> int:
        return self.trace.accesses


def demo_trace(seed: int = 0) -> DemoTrace:
    g = generate(demo_spec(), seed=seed)
    distinct = trace_info(g, reuse=False).distinct_pages
    desc = (
        f"Zipf({ALPHA}) hot set of {HOT_PAGES:,} pages, {WRITE_SHARE:.0%} writes, "
        f"mixed with sequential scans ({SCAN_SHARE:.0%} of the accesses) of {SCAN_PAGES:,} "
        f"cold pages (seed {seed}); {g.name}"
    )
    return DemoTrace(g, distinct, desc)


@dataclass(frozen=True)
class DemoRow:
    family: str
    result: ReplayResult


def run_demo(seed: int = 0, sizes: Sequence[float] = SIZES) -> Tuple[DemoTrace, List[DemoRow], float]:
    """Replay the demo trace through every registered policy at every size.
    Returns the trace, one row per (size, policy), and the seconds it took."""
    t = demo_trace(seed)
    rows: List[DemoRow] = []
    start = time.perf_counter()
    for share in sizes:
        frames = max(1, round(t.distinct * share))
        for p in policies():
            r = replay(t.trace, policy=p.name, frames=frames, seed=seed)
            rows.append(DemoRow(p.family, r))
    return t, rows, time.perf_counter() - start


def format_table(t: DemoTrace, rows: Sequence[DemoRow], seconds: float) -> str:
    """The comparison table printed by ``vmemsim demo``; the best policy of each size is
    marked with ``*``."""
    distinct = t.distinct
    lines = [
        f"vmemsim demo: {t.accesses:,} accesses over {distinct:,} pages",
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
            label = f"{frames:,}" if i == 0 else (f"({share:.0%})" if i == 1 else "")
            mark = " *" if res.faults == best else ""
            lines.append(
                f"{label:>8}  {res.policy:<{name_w}}  {r.family:<{fam_w}}  "
                f"{res.faults:>9,}  {res.major_faults:>9,}  {res.miss_ratio:>10.4f}{mark}"
            )
        lines.append("")
    lines.append(
        f"{len(rows)} replays in {seconds:.2f} s. faults = every miss, cold included; "
        "major = read back from swap; * = fewest faults at that size."
    )
    lines += same_as_mglru_note(rows)
    return "\n".join(lines)


def same_as_mglru_note(rows: Sequence[DemoRow]) -> List[str]:
    """Why ``mglru-gen14`` can equal ``mglru`` row for row: the preset only allows more
    generations (``max_gens`` 2^14), and Linux 6.8's aging (``should_run_aging``, which
    ``get_nr_to_scan`` consults) does not create a new generation while 4 or more exist,
    so on a workload that never needs more than 4 the two make the same choices."""
    by = {}
    for r in rows:
        by.setdefault(r.result.policy, []).append((r.result.frames, r.result.faults,
                                                   r.result.major_faults))
    if "mglru-gen14" in by and by.get("mglru-gen14") == by.get("mglru"):
        return ["mglru-gen14 = mglru on this workload: the preset only allows more generations "
                "(max_gens 2^14), and 6.8's should_run_aging creates none while 4 or more "
                "exist, which this workload never outgrows."]
    return []

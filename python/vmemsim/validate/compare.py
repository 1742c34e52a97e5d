"""The kernel and vmemsim on the same access sequence, counter by counter.

The simulator replays the sequence the guest program made, each write as the load and store
the program issues (:meth:`Workload.cpu_accesses`), on a machine with the kernel's zones as
they were just before the phase (each zone's free pages, watermarks and ``lowmem_reserve``:
:func:`kernel_zones`; one zone of ``nr_free_pages`` with the watermarks summed when told so),
and the same ``vm.page-cluster`` and ``vm.swappiness``; a zram run replays with a synchronous swap device.

With a :class:`Timing` (``vmemsim validate --timed``) the sequence runs on the timed machine
instead (:func:`simulate_timed`): one CPU that the program and kswapd share, as the guest's
one vCPU, and a swap device whose requests take time, so that kswapd can fall behind the
allocations and the program reclaim directly, as the kernel's did.

Kernel runs are cached by (kernel package and version, workload, settings): a second call
with the same arguments boots nothing and re-runs only the simulator.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .. import _native
from ..api import ReplayResult, RunResult, VmemsimError, replay, run, write_trace
from .kernel import (
    Kernel,
    KernelRun,
    Settings,
    fetch_kernel,
    kernel_from_dir,
    kvm_works,
    run_kernel,
)
from .workload import Workload, cache_dir, checksum, make_workload, write_file_trace

#: Content class of the guest program's pages (``vmwl.c``'s ``touch``: one 8-byte counter
#: per page, the rest zeros), which decides their compressed size in zram's pool.
CONTENT_CLASS = "sparse"

#: Simulator policy per kernel LRU setting.
POLICY = {"classic": "clock-lru", "mglru": "mglru"}

#: (row name, how to read it from a kernel vmstat delta, how to read it from vmemsim's stats).
COUNTERS: List[Tuple[str, Callable[[Dict[str, int]], int], Callable[[Dict[str, int]], int]]] = [
    ("pgmajfault", lambda v: v.get("pgmajfault", 0), lambda s: s["major_faults"]),
    ("pswpin", lambda v: v.get("pswpin", 0), lambda s: s["pswpin"]),
    ("pswpout", lambda v: v.get("pswpout", 0), lambda s: s["pswpout"]),
    (
        "pgscan",
        lambda v: v.get("pgscan_kswapd", 0) + v.get("pgscan_direct", 0),
        lambda s: s["pgscan_kswapd"] + s["pgscan_direct"],
    ),
    (
        "pgsteal",
        lambda v: v.get("pgsteal_kswapd", 0) + v.get("pgsteal_direct", 0),
        lambda s: s["pgsteal_kswapd"] + s["pgsteal_direct"],
    ),
    ("pgscan_kswapd", lambda v: v.get("pgscan_kswapd", 0), lambda s: s["pgscan_kswapd"]),
    ("pgscan_direct", lambda v: v.get("pgscan_direct", 0), lambda s: s["pgscan_direct"]),
    # Written folios moved to their list's tail when the write completed (a disk's; zram's
    # complete while the folio is isolated): each one scanned again. MG-LRU's evict_folios
    # frees the rest of the written ones without a second scan (FINDINGS.md).
    ("pgrotated", lambda v: v.get("pgrotated", 0), lambda s: s.get("pgrotated", 0)),
    (
        "workingset_refault_anon",
        lambda v: v.get("workingset_refault_anon", 0),
        lambda s: s["workingset_refault_anon"],
    ),
    ("pgfault", lambda v: v.get("pgfault", 0), lambda s: s.get("pgfault", s["faults"])),
    # The kernel's reclaimable slab's change over the phase; vmemsim's swap cache xarray
    # nodes' slab at the end (on the kernel's zones with migratetypes; 0 without them).
    ("nr_slab_reclaimable", lambda v: v.get("nr_slab_reclaimable", 0),
     lambda s: s.get("nr_slab_reclaimable", 0)),
]


#: The rows of a file workload (``fileread:``, ``filerand:``, ``filewrite:``): the page
#: cache's counters. ``pgpgin``/``pgpgout`` are KiB on both sides (``submit_bio`` counts
#: sectors, ``/proc/vmstat`` shows them halved); ``nr_file_pages`` and ``nr_dirty`` are the
#: gauges' change over the phase in the kernel and their value at the end in vmemsim (which
#: starts with an empty cache); ``pgscan_direct`` is zero in the untimed replay (as above).
FILE_COUNTERS: List[Tuple[str, Callable[[Dict[str, int]], int], Callable[[Dict[str, int]], int]]] = [
    ("pgpgin", lambda v: v.get("pgpgin", 0), lambda s: s["pgpgin"]),
    ("pgpgout", lambda v: v.get("pgpgout", 0), lambda s: s["pgpgout"]),
    ("workingset_refault_file", lambda v: v.get("workingset_refault_file", 0),
     lambda s: s["workingset_refault_file"]),
    ("workingset_activate_file", lambda v: v.get("workingset_activate_file", 0),
     lambda s: s["workingset_activate_file"]),
    ("pgscan_file", lambda v: v.get("pgscan_file", 0), lambda s: s["pgscan_file"]),
    # The kernel's pgscan counts the folios isolate_lru_folios skipped for being above the
    # reclaim's zone (kswapd balancing a boosted ZONE_DMA skips ZONE_DMA32's: pgskip_dma32);
    # vmemsim's does too, where it has the boost (the runs with the zones' migratetypes).
    # This row takes them off both sides.
    (
        "pgscan_file-pgskip",
        lambda v: v.get("pgscan_file", 0) - sum(n for k, n in v.items() if k.startswith("pgskip_")),
        lambda s: s["pgscan_file"] - sum(s.get("pgskip_zone") or []),
    ),
    ("pgsteal_file", lambda v: v.get("pgsteal_file", 0), lambda s: s["pgsteal_file"]),
    (
        "pgscan",
        lambda v: v.get("pgscan_kswapd", 0) + v.get("pgscan_direct", 0),
        lambda s: s["pgscan_kswapd"] + s["pgscan_direct"],
    ),
    ("pgscan_direct", lambda v: v.get("pgscan_direct", 0), lambda s: s["pgscan_direct"]),
    ("pswpout", lambda v: v.get("pswpout", 0), lambda s: s["pswpout"]),
    # Reclaim meeting dirty page-cache folios: classic LRU's `shrink_folio_list` marks them
    # `PG_reclaim` and activates them (`nr_vmscan_immediate_reclaim`, in `pgactivate`);
    # MG-LRU's `sort_folio` moves them on uncounted; the flusher's write of a marked one
    # moves it to its list's tail (`pgrotated`); kswapd writes one itself only under
    # `PGDAT_DIRTY` (`nr_vmscan_write`).
    ("nr_vmscan_immediate_reclaim", lambda v: v.get("nr_vmscan_immediate_reclaim", 0),
     lambda s: s.get("nr_vmscan_immediate_reclaim", 0)),
    ("nr_vmscan_write", lambda v: v.get("nr_vmscan_write", 0),
     lambda s: s.get("nr_vmscan_write", 0)),
    ("pgrotated", lambda v: v.get("pgrotated", 0), lambda s: s.get("pgrotated", 0)),
    ("pgactivate", lambda v: v.get("pgactivate", 0), lambda s: s.get("pgactivate", 0)),
    ("nr_file_pages", lambda v: v.get("nr_file_pages", 0), lambda s: s["nr_file_pages"]),
    # vmemsim's buffer heads and xarray nodes (on the kernel's zones with migratetypes), all
    # of the kernel's reclaimable slab's change.
    ("nr_slab_reclaimable", lambda v: v.get("nr_slab_reclaimable", 0),
     lambda s: s.get("nr_slab_reclaimable", 0)),
    ("nr_dirty", lambda v: v.get("nr_dirty", 0), lambda s: s["nr_dirty"]),
    # The mapping workloads (``mmapread:``, ``mmaprand:``): the faults that had to read the
    # page (``filemap_fault`` → ``VM_FAULT_MAJOR``), and every fault.
    ("pgmajfault", lambda v: v.get("pgmajfault", 0), lambda s: s["major_faults"]),
    ("pgfault", lambda v: v.get("pgfault", 0), lambda s: s.get("pgfault", s["faults"])),
]


@dataclass
class Row:
    counter: str
    kernel: List[int]
    vmemsim: int

    @property
    def mean(self) -> float:
        return statistics.fmean(self.kernel) if self.kernel else 0.0

    @property
    def spread(self) -> float:
        """Half the range of the kernel's repeats, relative to their mean."""
        if len(self.kernel) < 2 or self.mean == 0:
            return 0.0
        return (max(self.kernel) - min(self.kernel)) / 2 / self.mean

    @property
    def error(self) -> Optional[float]:
        """(vmemsim - kernel mean) / kernel mean; None when the kernel counted nothing."""
        if self.mean == 0:
            return None if self.vmemsim else 0.0
        return (self.vmemsim - self.mean) / self.mean

    def to_dict(self) -> Dict[str, object]:
        return dict(
            counter=self.counter, kernel=self.kernel, kernel_mean=self.mean,
            kernel_spread=self.spread, vmemsim=self.vmemsim, error=self.error,
        )


@dataclass
class Case:
    """One workload on one kernel setting: the kernel's repeats and vmemsim's prediction."""

    workload: str
    mode: str
    seed: int
    settings: Dict[str, object]
    kernel: str
    runs: List[KernelRun]
    sim: Dict[str, object]
    rows: List[Row] = field(default_factory=list)

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.counter == name)

    def to_dict(self) -> Dict[str, object]:
        return dict(
            workload=self.workload, mode=self.mode, seed=self.seed, settings=self.settings,
            kernel=self.kernel, vmemsim_version=_native.version(),
            vmemsim_kernel_rules=self.sim.get("kernel", "6.8"),
            rows=[r.to_dict() for r in self.rows],
            kernel_runs=[r.to_dict() for r in self.runs], vmemsim_result=self.sim,
        )


def parse_mem(text: str) -> int:
    """``160M``, ``1G``, ``512MiB`` or a plain number of MiB -> MiB."""
    t = str(text).strip().upper().replace("IB", "").replace("B", "")
    mult = 1
    if t.endswith("G"):
        mult, t = 1024, t[:-1]
    elif t.endswith("M"):
        t = t[:-1]
    try:
        v = int(float(t) * mult)
    except ValueError:
        raise VmemsimError(f"validate: --mem: '{text}' is not a size such as 160M or 1G") from None
    return v


def _cache_file(cache: Path, kernel: Kernel, w: Workload, s: Settings) -> Path:
    """Where the kernel runs of (kernel, workload, settings) are kept. The accelerator is not
    part of the key (it is resolved only when a boot is needed); each run records its own."""
    settings = asdict(s)
    if not settings.get("sysctl"):
        settings.pop("sysctl", None)  # the key of runs made before the setting existed
    key = json.dumps(
        dict(kernel=kernel.describe(), workload=w.key, settings=settings), sort_keys=True
    )
    return cache / "results" / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".json")


def load_runs(path: Path) -> List[KernelRun]:
    if not path.exists():
        return []
    return [KernelRun.from_dict(d) for d in json.loads(path.read_text())["runs"]]


def save_runs(path: Path, runs: List[KernelRun]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({"runs": [r.to_dict() for r in runs]}, indent=1))
    os.replace(tmp, path)


def simulator_inputs(runs: Sequence[KernelRun]) -> Dict[str, object]:
    """Frames and watermarks for the simulator from the kernel's state before the phase: the
    median free pages over the repeats, and the zones' watermarks summed, without watermark
    boost. The watermarks the kernel prints include ``zone->watermark_boost``
    (``min_wmark_pages``), which ``boost_watermark`` raises on a fragmenting fallback
    allocation and ``balance_pgdat`` takes back once kswapd has reclaimed for it: a passing
    state of one boot, not the zone's. So the boost is taken off where the run recorded it,
    and the smallest sum over the repeats is used (boost only ever raises them): one of
    memcached's boots had 512 pages of boost at the snapshot, 12% of its free memory."""
    frees = sorted(int(r.vmstat_before["nr_free_pages"]) for r in runs)

    def summed(r: KernelRun) -> Tuple[int, ...]:
        return tuple(
            sum(int(z[k]) - int(z.get("boost", 0)) for z in r.zones.values())
            for k in ("min", "low", "high")
        )

    sums = [summed(r) for r in runs]
    wm = tuple(min(s[i] for s in sums) for i in range(3)) if sums else (0, 0, 0)
    return dict(frames=frees[len(frees) // 2], watermarks=wm, zones=kernel_zones(runs),
                watermark_boost_factor=watermark_boost_factor(runs))


#: ``vm.watermark_boost_factor``'s default (mm/page_alloc.c, 6.1 and 6.8).
DEFAULT_WATERMARK_BOOST_FACTOR = 15000


def watermark_boost_factor(runs: Sequence[KernelRun]) -> int:
    """The ``vm.watermark_boost_factor`` the runs were booted with (``--sysctl``), else the
    kernel's default."""
    for r in runs:
        v = (r.settings.get("sysctl") or {}).get("watermark_boost_factor")
        if v is not None:
            return int(v)
    return DEFAULT_WATERMARK_BOOST_FACTOR


#: Zone indices (``enum zone_type`` on x86-64 with ZONE_DMA and ZONE_DMA32), which index
#: ``lowmem_reserve`` (/proc/zoneinfo's ``protection``).
ZONE_INDEX = {"DMA": 0, "DMA32": 1, "Normal": 2, "Movable": 3}


#: Each zone of :func:`kernel_zones` carries the median run's ``/proc/pagetypeinfo`` state
#: (``pagetypes``: its free lists by migratetype and order and its pageblocks per migratetype,
#: :attr:`KernelRun.pagetypes`) where that run recorded it, for the simulator's migratetype
#: fallback and watermark boost (``zones[i].pagetypes``). False replays without them: no
#: fallback, so no boost, as vmemsim did before it modelled them.
PAGETYPES = True


def kernel_zones(runs: Sequence[KernelRun]) -> List[Dict[str, object]]:
    """The kernel's zones for the simulator (its ``zones``), lowest first: the free pages of
    each zone in the repeat whose free memory is the median, each zone's watermarks less
    the boost (the smallest over the repeats, as :func:`simulator_inputs` sums them), and
    each zone's ``lowmem_reserve`` against the workload's allocations: every page it takes
    is ``GFP_HIGHUSER_MOVABLE``, whose ``highest_zoneidx`` is ``ZONE_MOVABLE``
    (``gfp_zone``), so ``protection[ZONE_MOVABLE]`` (the highest populated zone's index where
    the array is shorter); with :data:`PAGETYPES`, the same
    repeat's ``pagetypes`` of the zone where it has them. Empty when the runs recorded no
    zones."""
    if not runs or not runs[0].zones:
        return []
    order = sorted(runs, key=lambda r: int(r.vmstat_before["nr_free_pages"]))
    mid = order[len(order) // 2]
    names = sorted(mid.zones, key=lambda n: ZONE_INDEX.get(n, 99))
    top = max(ZONE_INDEX["Movable"], ZONE_INDEX.get(names[-1], len(names) - 1))
    out: List[Dict[str, object]] = []
    for n in names:
        z = mid.zones[n]
        marks = [
            min(int(r.zones[n][k]) - int(r.zones[n].get("boost", 0)) for r in runs if n in r.zones)
            for k in ("min", "low", "high")
        ]
        reserve = list(z.get("lowmem_reserve") or [])
        zone: Dict[str, object] = dict(
            name=n, frames=int(z["free"]), watermarks=marks,
            lowmem_reserve=(int(reserve[min(top, len(reserve) - 1)])
                            if n != names[-1] and reserve else 0),
        )
        if PAGETYPES and mid.pagetypes and n in mid.pagetypes:
            pt = mid.pagetypes[n]
            zone["pagetypes"] = dict(blocks=[int(b) for b in pt["blocks"]],
                                     free=[[int(c) for c in row] for row in pt["free"]])
        out.append(zone)
    return out


#: Replays model the kernel's zones (:func:`kernel_zones`) unless told otherwise.
ZONES = True


def machine_args(inp: Dict[str, object], zones: Optional[bool] = None) -> Dict[str, object]:
    """``frames`` and ``watermarks``, or ``frames`` and ``zones``, for a replay or a run: the
    kernel's zones when ``zones`` (default :data:`ZONES`) and the runs recorded them; their
    free pages are then the frames."""
    zs = inp.get("zones") or []
    if (ZONES if zones is None else zones) and len(zs) > 1:
        return dict(frames=sum(int(z["frames"]) for z in zs), zones=zs,
                    watermark_boost_factor=int(inp.get("watermark_boost_factor",
                                                       DEFAULT_WATERMARK_BOOST_FACTOR)))
    return dict(frames=int(inp["frames"]), watermarks=inp["watermarks"])


def model_kernel(release: str) -> str:
    """The reclaim rules to simulate a booted kernel with: 6.1's for a 6.1 kernel (the
    differences modelled so far, docs/kernel-6.1-vs-6.8.md), else 6.8's (the closest)."""
    return "6.1" if release.startswith("6.1.") or release == "6.1" else "6.8"


def simulate(
    w: Workload, s: Settings, runs: Sequence[KernelRun], seed: int = 0,
    kernel: Optional[str] = None, gup: bool = True, zones: Optional[bool] = None,
) -> ReplayResult:
    """Replay the sequence through vmemsim with the kernel's free memory and watermarks.
    ``kernel`` picks the reclaim rules where Linux versions differ: ``"6.8"`` (default, what
    the models follow), ``"6.1"`` (the 6.1 differences modelled so far), or ``"auto"`` (6.1's
    for a 6.1 kernel, else 6.8's). ``gup=False`` replays the trace buffer's refills as the
    CPU's writes, as the timed machine must (TIMED.md)."""
    pages, writes, gup_marks = w.cpu_accesses()
    gup = gup_marks if gup else None
    inp = simulator_inputs(runs)
    if kernel is None or kernel == "auto":
        kernel = model_kernel(runs[0].release) if runs and kernel == "auto" else "6.8"
    return replay(
        pages, policy=POLICY[s.lru], writes=writes, gup=gup, seed=seed,
        page_cluster=s.page_cluster, swappiness=s.swappiness, **machine_args(inp, zones),
        swap=swap_device(s, runs), kernel=kernel, content_class=CONTENT_CLASS,
    )


def read_ahead_kb(runs: Sequence[KernelRun]) -> int:
    """The guest's ``read_ahead_kb`` of the file workload's device (the first run's; the
    kernel's default, 128, when not recorded)."""
    for r in runs:
        if r.blockdev.get("read_ahead_kb") is not None:
            return int(r.blockdev["read_ahead_kb"])
    return 128


def file_trace(w: Workload) -> Path:
    """A file workload's recorded trace in the cache (by its canonical spec)."""
    h = hashlib.sha256(w.name.encode()).hexdigest()[:24]
    path = cache_dir() / "files" / f"{h}.vmt"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}.vmt")
        write_file_trace(w, tmp)
        os.replace(tmp, path)
    return path


def simulate_file(
    w: Workload, s: Settings, runs: Sequence[KernelRun], seed: int = 0,
    kernel: Optional[str] = None, zones: Optional[bool] = None,
) -> ReplayResult:
    """Replay a file workload's recorded trace (:func:`file_trace`) through vmemsim's page
    cache with the kernel's free memory and watermarks and the device's ``read_ahead_kb``."""
    inp = simulator_inputs(runs)
    if kernel is None or kernel == "auto":
        kernel = model_kernel(runs[0].release) if runs and kernel == "auto" else "6.8"
    return replay(
        str(file_trace(w)), policy=POLICY[s.lru], seed=seed,
        page_cluster=s.page_cluster, swappiness=s.swappiness, **machine_args(inp, zones),
        swap="disk" if s.swap == "none" else swap_device(s, runs), kernel=kernel,
        read_ahead_kb=read_ahead_kb(runs),
    )


#: The guest's virtio-blk disk's largest request in pages: QEMU's ``seg_max`` is the
#: virtqueue's size less 2 (``virtio_blk_update_config`` with ``seg_max_adjust``, on since QEMU
#: 5.0; queue size 256), which the guest's ``virtblk_probe`` makes ``max_segments`` (below
#: ``max_sectors``' 320 pages). The plug merges reclaim's swap writes up to it.
VIRTIO_BLK_MAX_PAGES = 254


def swap_device(s: Settings, runs: Sequence[KernelRun]) -> str:
    """The replay's swap device for the kernel's: zram; the virtio disk, which the guest
    sees as rotational (virtio_blk never sets QUEUE_FLAG_NONROT), of the size swapon reported
    (``SwapTotal`` is the usable slots; the header page makes one more); or that disk
    declared non-rotational (``ssd``), vmemsim's ``disk``."""
    if s.swap == "ssd":
        return f"disk:max_pages={VIRTIO_BLK_MAX_PAGES}"
    if s.swap != "disk":
        return s.swap
    total_kib = int(runs[0].meminfo_before.get("SwapTotal", 0)) if runs else 0
    if not total_kib:
        return f"disk:max_pages={VIRTIO_BLK_MAX_PAGES}"
    return f"hdd:size={total_kib + 4}KiB,max_pages={VIRTIO_BLK_MAX_PAGES}"


def fit_disk_time(runs: Sequence[Dict[str, int]]) -> Tuple[float, float]:
    """``(disk_request_us, disk_us)``: the least-squares fit of ``io_ticks`` (ms of the
    guest's clock with a request in flight) = a x requests + b x 4 KiB pages over ``runs``
    (``/sys/block/vda/stat`` deltas, :data:`vmemsim.validate.kernel.DISKSTAT`), through the
    origin, in µs. Needs two runs whose requests and pages are not proportional."""
    rows = [(r["read_ios"] + r["write_ios"], (r["read_sectors"] + r["write_sectors"]) / 8,
             r["io_ticks"] * 1000.0) for r in runs if r.get("read_ios", 0) + r.get("write_ios", 0)]
    sxx = sum(x * x for x, _, _ in rows)
    syy = sum(y * y for _, y, _ in rows)
    sxy = sum(x * y for x, y, _ in rows)
    sxt = sum(x * t for x, _, t in rows)
    syt = sum(y * t for _, y, t in rows)
    det = sxx * syy - sxy * sxy
    if len(rows) < 2 or det <= 1e-9 * sxx * syy:
        raise VmemsimError("validate: fitting the disk's time needs at least two runs whose "
                           "requests and pages are not proportional")
    return (sxt * syy - syt * sxy) / det, (syt * sxx - sxt * sxy) / det


#: The virtio disk's wall time per request and per 4 KiB page (µs): estimates (see
#: :class:`Timing`; the measured fit is in experiments/kernel-validation/TIMED.md).
DISK_REQUEST_US = 0.0
DISK_US = 50.0


@dataclass(frozen=True)
class Timing:
    """The emulated hardware's time on the timed machine, whose costs are the cost table's
    (a native CPU's, ``vmemsim.api.COST_KEYS``). Under QEMU TCG the guest's CPU is emulated,
    ``tcg`` times slower than that, while the guest's clock, and so its scheduler's slices,
    keep the host's wall time, as does its disk: a file on the host, served from the host's
    page cache, each request taking ``disk_request_us`` plus ``disk_us`` per 4 KiB of wall
    time. Expressed in the cost table's time, a slice is the scheduler's divided by ``tcg``
    and a disk request's times are divided by ``tcg`` too; zram compresses on the guest's
    CPU, so its times scale with the CPU's and stay the table's. ``disk`` and ``zram``, when
    given, replace the devices built from these (a device spec without ``size``; the
    sensitivity runs), and ``costs`` (``(key, ns)`` pairs) entries of the cost table.

    The disk's defaults (50 µs a page, nothing a request) are an estimate. The guest's own
    ``/sys/block/vda/stat`` over the phase of every disk case of the validation matrix
    (``experiments/kernel-validation/matrix.py diskstats``, data/diskstats.json; TIMED.md)
    does not support one time a request and one a page: fitted by least squares
    (:func:`fit_disk_time`) the two explain the time the disk had a request in flight only
    to within -46%..+121% per run, a request's time growing with how many were in flight, so
    the defaults stay until a model of QEMU's concurrent request handling replaces them."""

    tcg: float = 10.0
    disk_us: float = DISK_US
    disk_request_us: float = DISK_REQUEST_US
    disk: Optional[str] = None
    zram: Optional[str] = None
    costs: Optional[Tuple[Tuple[str, int], ...]] = None

    def __post_init__(self) -> None:
        for k in ("tcg", "disk_us"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and 0 < v < float("inf")):
                raise VmemsimError(f"validate: timing {k} must be a positive number, got {v!r}")
        v = self.disk_request_us
        if not (isinstance(v, (int, float)) and 0 <= v < float("inf")):
            raise VmemsimError(
                f"validate: timing disk_request_us must be a number >= 0, got {v!r}")

    def slice_ns(self) -> int:
        """EEVDF's base slice on one CPU (``sysctl_sched_base_slice``, 0.75 ms; the engine's
        scheduler follows 6.8's), in the cost table's time."""
        return max(1, round(750_000 / self.tcg))

    def device(self, s: Settings, runs: Sequence[KernelRun]) -> str:
        """The timed machine's swap device for the kernel's (as :func:`swap_device`): zram;
        the virtio disk as ``hdd`` of the swap's size (the guest sees it as rotational) without
        a platter, a seek or a drive's buffer (a disk image in a host file: a request is done
        when QEMU has copied it), each request ``disk_request_us / tcg`` and each page
        ``disk_us / tcg``; the
        ``ssd`` rows' disk, declared non-rotational, as an ``ssd`` of the same timing."""
        if s.swap == "zram":
            return self.zram or "zram"
        page_us = self.disk_us / self.tcg
        req_us = self.disk_request_us / self.tcg
        pages = f"max_pages={VIRTIO_BLK_MAX_PAGES}"
        if s.swap == "ssd":
            return self.disk or (f"ssd:latency_us={req_us:g},bw_mbps={4096 / page_us:g},qd=1,"
                                 f"{pages}")
        m = re.search(r"size=([^,]+)", swap_device(s, runs))
        return self._virtio_hdd(m.group(1) if m else "4GiB")

    def file_device(self, w: Workload) -> str:
        """A file workload's block device, the timed machine's file disk: the virtio disk
        as :meth:`device` makes it, of the workload's device size."""
        return self._virtio_hdd(f"{-(-w.disk_bytes() // 1024)}KiB")

    def _virtio_hdd(self, size: str) -> str:
        if self.disk:
            kind, _, params = self.disk.partition(":")
            return f"hdd:size={size}" + (f",{params}" if params else "")
        page_us = self.disk_us / self.tcg
        req_us = self.disk_request_us / self.tcg
        # 4,096 bytes in page_us: the transfer rate in MB/s (10^6 bytes per second).
        return (f"hdd:size={size},rpm=0,seek_us=0,min_seek_us=0,"
                f"bw_mbps={4096 / page_us:g},overhead_us={req_us:g},cache=0,"
                f"max_pages={VIRTIO_BLK_MAX_PAGES}")


def _trace_file(pages, writes) -> Path:
    """The sequence as a native trace in the cache (by its hash), for ``trace:path=``."""
    h = hashlib.sha256(pages.tobytes() + writes.tobytes()).hexdigest()[:24]
    path = cache_dir() / "timed" / f"{h}.vmt"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}.vmt")
        write_trace(pages, tmp, writes=writes)
        os.replace(tmp, path)
    return path


def simulate_timed(
    w: Workload, s: Settings, runs: Sequence[KernelRun], timing: Timing, seed: int = 0,
    kernel: Optional[str] = None, zones: Optional[bool] = None,
) -> RunResult:
    """Run the sequence on the timed machine (``vmemsim.run`` of ``trace:path=``) with the
    kernel's free memory and watermarks, ``page-cluster`` and ``swappiness``, one CPU for the
    program and kswapd, and the swap device of ``timing``; zram's pool is charged to the
    frames (pages of class ``sparse``), as in :func:`simulate`.

    A trace carries no ``get_user_pages`` flag (:attr:`Access.gup` is the replay's only), so
    the refills of a recorded program's trace buffer run as the CPU's writes, as the replay
    made them before it modelled ``get_user_pages`` (FINDINGS.md, fix 10)."""
    pages, writes, _gup = w.cpu_accesses()
    path = _trace_file(pages, writes)
    inp = simulator_inputs(runs)
    if kernel is None or kernel == "auto":
        kernel = model_kernel(runs[0].release) if runs and kernel == "auto" else "6.8"
    return run(
        f"trace:path={path},class={CONTENT_CLASS}", policy=POLICY[s.lru],
        seed=seed, device=timing.device(s, runs), cpus=1,
        slice_ns=timing.slice_ns(), costs=dict(timing.costs or ()), page_cluster=s.page_cluster,
        swappiness=s.swappiness, kernel=kernel, **machine_args(inp, zones),
    )


def simulate_timed_file(
    w: Workload, s: Settings, runs: Sequence[KernelRun], timing: Timing, seed: int = 0,
    kernel: Optional[str] = None, zones: Optional[bool] = None,
) -> RunResult:
    """A file workload's calls on the timed machine (``vmemsim.run`` of its recorded trace,
    :func:`file_trace`) with the kernel's free memory and watermarks, the device's
    ``read_ahead_kb``, one CPU, and the virtio disk as the file device
    (:meth:`Timing.file_device`): reads wait for the disk, writes are in flight until it
    completes them, and a writer above the dirty limit waits for them."""
    inp = simulator_inputs(runs)
    if kernel is None or kernel == "auto":
        kernel = model_kernel(runs[0].release) if runs and kernel == "auto" else "6.8"
    return run(
        f"trace:path={file_trace(w)}", policy=POLICY[s.lru], seed=seed,
        file_device=timing.file_device(w), cpus=1, slice_ns=timing.slice_ns(),
        costs=dict(timing.costs or ()), swappiness=s.swappiness, kernel=kernel,
        read_ahead_kb=read_ahead_kb(runs), **machine_args(inp, zones),
    )


#: Rows only a timed run can fill: direct reclaim's allocations (the kernel counts them per
#: zone, ``allocstall_*``, where the timed machine has one).
TIMED_COUNTERS: List[Tuple[str, Callable[[Dict[str, int]], int], Callable[[Dict[str, int]], int]]] = [
    (
        "allocstall",
        lambda v: sum(n for k, n in v.items() if k.startswith("allocstall_")),
        lambda s: s["allocstall"],
    ),
]


def compare(
    w: Workload, s: Settings, runs: Sequence[KernelRun], seed: int = 0,
    kernel: Optional[str] = None, timing: Optional[Timing] = None, gup: bool = True,
    zones: Optional[bool] = None,
) -> Case:
    """The kernel's counters and vmemsim's: the untimed replay's (:func:`simulate`, with
    ``gup`` as there), or the timed machine's with ``timing`` (:func:`simulate_timed`)."""
    counters = COUNTERS
    if w.kind == "file":
        sim = (simulate_file(w, s, runs, seed, kernel, zones) if timing is None
               else simulate_timed_file(w, s, runs, timing, seed, kernel, zones))
        counters = FILE_COUNTERS
    elif timing is None:
        sim = simulate(w, s, runs, seed, kernel, gup, zones)
    else:
        sim = simulate_timed(w, s, runs, timing, seed, kernel, zones)
        counters = COUNTERS + TIMED_COUNTERS
    st = sim.to_dict()["stats"]
    if w.kind == "file":
        # pgscan_file, pgsteal_file, workingset_activate_file: the policy's counters.
        st = {**sim.to_dict().get("policy_counters", {}), **st}
    rows = [Row(name, [k(r.vmstat) for r in runs], v(st)) for name, k, v in counters]
    if s.swap == "zram" and all(r.mm_stat for r in runs):
        # The pool's peak (zram's mm_stat, over the boot; what came before the workload is a
        # few pages): the kernel's counts whole zspages, partly empty ones included.
        # (The timed machine counts its pool's peak in frames held back from free memory.)
        peak = int(st.get("zram_mem_used_max", 0)) or 4096 * int(
            sim.to_dict().get("device_frames_peak") or 0)
        rows.append(Row(
            "zram mem_used_max", [int(r.mm_stat.get("mem_used_max", 0)) for r in runs], peak,
        ))
    return Case(
        workload=w.name if w.kind in ("gen", "file") else w.spec, mode=w.mode, seed=w.seed,
        settings=asdict(s), kernel=runs[0].kernel if runs else "", runs=list(runs),
        sim=sim.to_dict(), rows=rows,
    )


def validate(
    spec: str,
    mem: str = "160M",
    swap: str = "disk",
    lrus: Sequence[str] = ("classic",),
    page_cluster: int = 3,
    swappiness: int = 60,
    repeats: int = 2,
    mode: str = "rw",
    seed: int = 0,
    cache: Optional[Path] = None,
    kernel_package: str = "linux-image-amd64",
    kernel_dir: Optional[Path] = None,
    accel: str = "auto",
    timeout: float = 1800.0,
    progress: Optional[Callable[[str], None]] = None,
    model_kernel: str = "6.8",
    sysctl: Optional[Dict[str, str]] = None,
    timing: Optional[Timing] = None,
    zones: Optional[bool] = None,
) -> List[Case]:
    """Run ``spec`` (``gen:SPEC`` or a trace file) on the real kernel ``repeats`` times per
    LRU setting (reusing cached runs) and through vmemsim; one :class:`Case` per setting."""
    if repeats < 1:
        raise VmemsimError(f"validate: --repeats must be at least 1, got {repeats}")
    cache = Path(cache) if cache else cache_dir()
    w = make_workload(spec, mode=mode, seed=seed)
    if swap == "none" and w.kind != "file":
        raise VmemsimError("validate: --swap none is for file workloads (fileread:, filerand:, "
                           "filewrite:); an anonymous workload needs a swap device")
    expect = checksum(*w.sequence())
    kernel = kernel_from_dir(kernel_dir) if kernel_dir else fetch_kernel(cache, kernel_package)
    cases = []
    acc: Optional[str] = None
    for lru in lrus:
        s = Settings(
            mem_mib=parse_mem(mem), swap=swap, lru=lru, page_cluster=page_cluster,
            swappiness=swappiness, sysctl={k: str(v) for k, v in (sysctl or {}).items()},
        )
        s.check()
        path = _cache_file(cache, kernel, w, s)
        runs = load_runs(path)
        while len(runs) < repeats:
            if acc is None:
                acc = accel if accel != "auto" else ("kvm" if kvm_works(kernel, cache) else "tcg")
            i = len(runs) + 1
            label = f"kernel {kernel.release} {lru} {swap} run {i}/{repeats} ({acc})"

            def say(msg: str, label: str = label) -> None:
                if progress:
                    progress(f"{label}: {msg}")

            run = run_kernel(kernel, w, s, accel=acc, timeout=timeout, progress=say)
            if run.checksum != expect:
                raise VmemsimError(
                    f"validate: the guest program's accesses differ from vmemsim's sequence "
                    f"(checksum {run.checksum} in the guest, {expect} here): the guest's libm "
                    "may round differently from this machine's"
                )
            runs.append(run)
            save_runs(path, runs)
        cases.append(compare(w, s, runs[:repeats], seed=seed, kernel=model_kernel,
                             timing=timing, zones=zones))
    return cases


def format_case(c: Case) -> str:
    s = c.settings
    timed = "config" in c.sim and "runtime_ns" in c.sim
    rules = (c.sim["config"].get("kernel", "6.8") if timed else c.sim.get("kernel", "6.8"))
    head = (
        f"{c.workload}" + ("" if c.workload.startswith("file") else f" (mode {c.mode})")
        + f" on {c.kernel}, vmemsim "
        + (f"timed ({c.sim['config']['device']}, 1 CPU) " if timed else "")
        + f"with Linux {rules} rules: {s['lru']}, swap {s['swap']}, "
        f"mem {s['mem_mib']} MiB, page-cluster {s['page_cluster']}, swappiness {s['swappiness']}; "
        + (f"read_ahead_kb {c.runs[0].blockdev.get('read_ahead_kb')}; "
           if c.runs and c.runs[0].blockdev else "")
        + f"{len(c.runs)} kernel run(s), free pages before the phase "
        f"{[r.vmstat_before['nr_free_pages'] for r in c.runs]}"
    )
    if s.get("sysctl"):
        head += "\nkernel only (vmemsim follows the defaults): " + ", ".join(
            f"vm.{k}={v}" for k, v in sorted(s["sysctl"].items()))
    lines = [head, f"{'counter':<26}{'kernel mean':>14}{'± spread':>10}{'vmemsim':>12}{'error':>9}"]
    for r in c.rows:
        err = "-" if r.error is None else f"{r.error * 100:+.1f}%"
        lines.append(
            f"{r.counter:<26}{r.mean:>14,.0f}{r.spread * 100:>9.1f}%{r.vmemsim:>12,}{err:>9}"
        )
    return "\n".join(lines)
